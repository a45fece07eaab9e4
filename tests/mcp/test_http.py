"""http.py's allow-lists in-process (the served end-to-end runs are in test_transports.py, with the real model):
a page of this machine on any port may call the server, a page of another site may not, whatever it names; and
the sockets serve opens first."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from projects import INITIALIZE, MCP_HEADERS
from starlette.testclient import TestClient

from ktx_index.errors import InvalidInput
from ktx_index.mcp import build_server
from ktx_index.mcp.http import http_app, listen
from ktx_index.service import KtxIndex


@pytest.fixture
def http(demo_service: KtxIndex) -> Iterator[TestClient]:
    app = http_app(build_server(demo_service), "127.0.0.1", 8765, None)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        yield client


def status(http: TestClient, origin: str) -> int:
    return http.post("/mcp", json=INITIALIZE, headers={**MCP_HEADERS, "Origin": origin}).status_code


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:8765",
        "http://localhost:6274",
        "http://127.0.0.1:3000",
        "https://localhost",
        "http://[::1]:5173",
    ],
)
def test_a_page_of_this_machine_on_any_port_is_served(http, origin) -> None:
    assert status(http, origin) == 200


@pytest.mark.parametrize(
    "origin",
    ["http://evil.example", "http://localhost.evil.example:6274", "http://127.0.0.1.evil.example", "null", "file://"],
)
def test_a_page_of_another_site_is_refused(http, origin) -> None:
    assert status(http, origin) == 403


def test_listening_sockets_hold_their_port_from_the_start():
    """serve opens its sockets before any work (a first build can take a minute): a second server on that port
    is refused at once, and port 0 gives every address of the host the one port the system chose."""
    first = listen("localhost", 0)
    try:
        port = first[0].getsockname()[1]
        assert port and {sock.getsockname()[1] for sock in first} == {port}
        with pytest.raises(InvalidInput, match=rf"cannot listen on 127\.0\.0\.1:{port}: .*in use"):
            listen("127.0.0.1", port)
    finally:
        for sock in first:
            sock.close()


def test_sessions_past_the_cap_are_refused_while_the_open_ones_go_on(demo_service, monkeypatch) -> None:
    """Clients that crash never close their sessions (an outside pass opened 2,000, +66 MB; the SDK allows 10,000)."""
    from ktx_index.mcp import http as http_module

    monkeypatch.setattr(http_module, "MAX_SESSIONS", 2)
    app = http_app(build_server(demo_service), "127.0.0.1", 8765, None)
    with TestClient(app, base_url="http://127.0.0.1:8765") as client:
        codes = [client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS).status_code for _ in range(3)]
    assert codes == [200, 200, 503]
