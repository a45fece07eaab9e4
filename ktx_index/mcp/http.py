"""Streamable HTTP: loopback by default, local Origins only, optional bearer token."""

from __future__ import annotations

import hmac
import ipaddress
import socket
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import JSONResponse

from ktx_index.errors import InvalidInput

LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """Pure ASGI middleware: every HTTP request must carry ``Authorization: Bearer <token>``
    (compared in constant time); lifespan events pass through untouched."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            got = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(got, self.expected):
                response = JSONResponse(
                    {"error": "unauthorized", "hint": "send Authorization: Bearer <token>"},
                    status_code=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def security_settings(host: str, port: int) -> TransportSecuritySettings:
    """Host and Origin allow-lists (DNS-rebinding protection), on for every bind address. The Host must name this
    server; an Origin may be any page of this machine (or of the bind address), whatever its port: a local tool's
    web UI (the MCP Inspector's, on its own port) is served, a page of another site is not."""
    hosts = {"127.0.0.1", "localhost", "[::1]"}
    if not is_loopback(host):
        hosts.add(f"[{host}]" if ":" in host else host)
    origins = [
        f"{scheme}://{h}{port_part}" for scheme in ("http", "https") for h in sorted(hosts) for port_part in ("", ":*")
    ]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:{port}" for h in sorted(hosts)] + sorted(hosts),
        allowed_origins=origins,
    )


def http_app(server: MCPServer, host: str, port: int, token: str | None) -> Any:
    if not is_loopback(host) and not token:
        raise InvalidInput(
            f"refusing to serve on non-loopback address {host} without a token",
            "pass --token (or set KTX_INDEX_TOKEN), or bind to 127.0.0.1",
        )
    app = server.streamable_http_app(
        streamable_http_path="/mcp", transport_security=security_settings(host, port), host=host
    )
    return BearerAuth(app, token) if token else app


def listen(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything else runs (serve binds it first): a port in use is an error
    naming it rather than a "serving" line and then uvicorn's own, and port 0 becomes the one the system chose
    (``socket.getsockname``), which serve then prints."""
    try:
        family, kind, proto, _name, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise InvalidInput(f"cannot listen on {host}: {exc.strerror or exc}", "pass --host 127.0.0.1") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise InvalidInput(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}", "pass another --port (0 lets the system pick one)"
        ) from exc
    return sock


def serve_http(server: MCPServer, sock: socket.socket, host: str, token: str | None) -> None:
    """Serve on ``sock`` (``listen``) until stopped; ``host`` as the user named it, for the allowed Host headers."""
    app = http_app(server, host, sock.getsockname()[1], token)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])
