"""Streamable HTTP: loopback by default, local Origins only, optional bearer token."""

from __future__ import annotations

import errno
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
#: Open sessions at once (the SDK's default is 10,000): each holds about 34 KB, and clients that crash never close
#: theirs, which the SDK ends after 30 idle minutes (an outside pass opened 2,000: +66 MB). Past it a new session
#: is answered 503 while the others go on.
MAX_SESSIONS = 1000


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BearerAuth:
    """Pure ASGI middleware: every HTTP request must carry one ``Authorization: Bearer <token>`` (the scheme in any
    case, as RFC 7235 says; the token compared in constant time; two Authorization headers refused, whichever is
    right); lifespan events pass through untouched."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    def allowed(self, headers: list[tuple[bytes, bytes]]) -> bool:
        given = [value for name, value in headers if name.lower() == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, token = given[0].strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.expected)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self.allowed(scope["headers"]):
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
        streamable_http_path="/mcp",
        transport_security=security_settings(host, port),
        host=host,
        max_sessions=MAX_SESSIONS,
    )
    return BearerAuth(app, token) if token else app


def listen(host: str, port: int) -> list[socket.socket]:
    """The server's sockets, one per address of ``host`` (``localhost``: IPv4 and IPv6), bound and listening
    before anything else runs (serve opens them first): a port in use is an error naming it rather than a
    "serving" line and then uvicorn's own, and port 0 becomes the one the system chose (``socket.getsockname``),
    the same for every address, which serve then prints. An address this machine cannot bind (no IPv6) is
    skipped when another was bound."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise InvalidInput(f"cannot listen on {host}: {exc.strerror or exc}", "pass --host 127.0.0.1") from exc
    sockets: list[socket.socket] = []
    for family, kind, proto, address in dict.fromkeys((f, k, p, a) for f, k, p, _name, a in found):
        sock = socket.socket(family, kind, proto)
        try:
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)  # the IPv4 address has its own
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address[0], sockets[0].getsockname()[1], *address[2:]) if sockets else address)
            sock.listen()
        except OSError as exc:
            sock.close()
            if sockets and exc.errno in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT):
                continue
            for bound in sockets:
                bound.close()
            raise InvalidInput(
                f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                "pass another --port (0 lets the system pick one)",
            ) from exc
        sockets.append(sock)
    return sockets


def serve_http(server: MCPServer, sockets: list[socket.socket], host: str, token: str | None) -> None:
    """Serve on ``sockets`` (``listen``) until stopped; ``host`` as the user named it, for the allowed Host
    headers."""
    app = http_app(server, host, sockets[0].getsockname()[1], token)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=sockets)
