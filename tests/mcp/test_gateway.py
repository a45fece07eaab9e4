"""The gateway (``serve --upstream``) in-process, in front of a real upstream: ``fake_upstream.py`` started as its
own process over stdio by the gateway, as ``ktx mcp stdio`` would be.

What it must hold: one tool list (ours, then every upstream tool we do not serve, as upstream lists it, no name
twice), calls forwarded as they are (arguments, results, isError, progress in order, cancellation), upstream's
list changes announced, and an upstream killed mid-session answered in-band, then used again once it is back.
The end-to-end runs of ``ktx-index serve --upstream`` over stdio and HTTP are in test_gateway_e2e.py.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import mcp.types as mcp_types
import pytest
from click.testing import CliRunner
from mcp import Client, MCPError, StdioServerParameters
from mcp.types import CallToolResult, ToolListChangedNotification
from projects import write_files

from ktx_index.cli import cli
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import InvalidInput
from ktx_index.mcp import build_server
from ktx_index.mcp.gateway import Gateway
from ktx_index.mcp.server import TOOL_NAMES
from ktx_index.mcp.upstream import UpstreamSpec, session_gone
from ktx_index.service import KtxIndex

FAKE = Path(__file__).with_name("fake_upstream.py")
UPSTREAM_ONLY = ["sl_query", "sql_execution", "sql_dialect_notes", "memory_ingest", "memory_ingest_status"]
#: Generous bounds on waits for another process (never a measured figure: tests/benchmarks/gateway.py has those).
WAIT = 30.0

PROJECT = {
    "ktx.yaml": "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n",
    "wiki/global/refund-policy.md": "---\nsummary: When a refund is issued\n---\n# Refunds\nRefunds within 30 days.\n",
}


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KtxIndex]:
    root = write_files(tmp_path_factory.mktemp("gateway") / "project", PROJECT)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    yield service
    service.close()


class Fake:
    """Files through which a test talks to the fake upstream process."""

    def __init__(self, tmp: Path) -> None:
        self.pid_file, self.down_file, self.events = tmp / "upstream.pid", tmp / "upstream.down", tmp / "events.log"

    @staticmethod
    def script() -> Path:
        return FAKE

    @property
    def command(self) -> str:
        args = ["--pid-file", self.pid_file, "--down-file", self.down_file, "--events", self.events]
        return " ".join(str(a) for a in [sys.executable, FAKE, *args])

    def kill(self) -> None:
        os.kill(int(self.pid_file.read_text()), signal.SIGKILL)

    def events_seen(self) -> str:
        return self.events.read_text() if self.events.exists() else ""


@pytest.fixture
def fake(tmp_path: Path) -> Fake:
    return Fake(tmp_path)


@pytest.fixture
async def gateway(service: KtxIndex, fake: Fake) -> AsyncIterator[tuple[Client, list[Any]]]:
    """A handshake-era client (as agents' SDKs are today) of a gateway whose upstream is the fake; yields the
    client and the notifications it received."""
    received: list[Any] = []

    async def on_message(message: Any) -> None:
        received.append(message)

    gw = Gateway(
        UpstreamSpec.parse(fake.command), service.root, service.layout.upstream(os.getpid()), service.layout.errors
    )
    async with Client(build_server(service, gw), mode="legacy", message_handler=on_message) as client:
        yield client, received


async def until(check: Any) -> None:
    """Poll ``check`` (sync or async) until true, within a generous bound."""
    with anyio.fail_after(WAIT):
        while True:
            done = check()
            if (await done) if inspect.isawaitable(done) else done:
                return
            await anyio.sleep(0.05)


def text(result: CallToolResult) -> str:
    return result.content[0].text if result.content and result.content[0].type == "text" else ""


# ------------------------------------------------------------------ the list


@pytest.mark.slow
@pytest.mark.anyio
async def test_one_list_ours_then_upstreams_unchanged(gateway, fake: Fake) -> None:
    client, _ = gateway
    tools = (await client.list_tools()).tools
    names = [t.name for t in tools]
    assert len(names) == len(set(names)), names
    assert sorted(names[: len(TOOL_NAMES)]) == sorted(TOOL_NAMES) and names[len(TOOL_NAMES) :] == UPSTREAM_ONLY
    assert client.server_capabilities.tools.list_changed  # so clients re-list when upstream's list changes

    direct = StdioServerParameters(command=sys.executable, args=[str(FAKE)])
    async with Client(direct, mode="legacy") as upstream:
        theirs = {t.name: t for t in (await upstream.list_tools()).tools}
    for tool in tools[len(TOOL_NAMES) :]:  # schemas, annotations, title, description, execution: as upstream lists
        assert tool.model_dump(by_alias=True, mode="json") == theirs[tool.name].model_dump(by_alias=True, mode="json")
    # upstream sends execution.taskSupport on every tool (the fake as KTX 0.16 does); ktx-index's own say the same
    assert all(tool.execution is not None and tool.execution.task_support == "forbidden" for tool in tools)
    ours = next(t for t in tools if t.name == "discover_data")
    assert ours.model_dump() != theirs["discover_data"].model_dump()  # the collision is ours

    found = await client.call_tool("discover_data", {"query": "when is a refund issued"})
    assert not found.is_error and found.structured_content["refs"][0]["id"] == "refund-policy"  # not upstream's


@pytest.mark.anyio
async def test_without_upstream_nothing_changes(service: KtxIndex) -> None:
    server = build_server(service)
    assert server.gateway is None
    async with Client(server, mode="legacy") as client:
        assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(TOOL_NAMES)
        assert not client.server_capabilities.tools.list_changed
        unknown = await client.call_tool("sl_query", {"measures": ["orders.count"]})
        assert unknown.is_error and "sl_query" in text(unknown)


# ------------------------------------------------------------------ forwarding


@pytest.mark.slow
@pytest.mark.anyio
async def test_calls_forwarded_as_they_are(gateway, fake: Fake) -> None:
    client, received = gateway
    tools = {t.name: t for t in (await client.list_tools()).tools}

    events: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    query = await client.call_tool("sl_query", {"measures": ["orders.count"]}, progress_callback=on_progress)
    assert not query.is_error
    jsonschema.validate(query.structured_content, tools["sl_query"].output_schema)
    assert query.structured_content["rows"] == [["2026-10", 12], ["2026-11", 15]]
    assert [m for _, _, m in events] == ["Compiling query", "Generating SQL", "Executing", "Fetched 2 rows"]
    assert [p for p, _, _ in events] == [0, 0.3, 0.6, 1]  # in upstream's order, values unchanged

    failed = await client.call_tool("sql_dialect_notes", {"connectionId": "nope"})
    assert failed.is_error and text(failed) == 'Connection "nope" is not configured in ktx.yaml'
    missing = await client.call_tool("memory_ingest_status", {"runId": "run-404"})
    assert missing.is_error and text(missing) == 'Memory ingest run "run-404" was not found.'
    unknown = await client.call_tool("no_such_tool", {})  # upstream answers unknown names, in-band, as KTX does
    assert unknown.is_error and "no_such_tool" in text(unknown)

    run = await client.call_tool("memory_ingest", {"content": "enable mongo_query"})
    assert run.structured_content == {"runId": "run-1"}
    await until(lambda: any(isinstance(m, ToolListChangedNotification) for m in received))
    names = [t.name for t in (await client.list_tools()).tools]
    assert names[-1] == "mongo_query" and len(names) == len(set(names))

    with anyio.move_on_after(1.0):  # the caller gives up: the request is cancelled upstream too
        await client.call_tool("sql_execution", {"connectionId": "warehouse", "sql": "SELECT pg_sleep(30)"})
    await until(lambda: "cancelled sql_execution" in fake.events_seen())


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_2026_client_gets_forwarded_results(service: KtxIndex, fake: Fake) -> None:
    """The SDK's default client speaks 2026-07-28, whose results carry resultType; upstream's (handshake era,
    as KTX's SDK) do not: the gateway's answer must still be a valid result for it."""
    gw = Gateway(UpstreamSpec.parse(fake.command), service.root, None, None)
    async with Client(build_server(service, gw)) as client:
        assert client.protocol_version == "2026-07-28"
        query = await client.call_tool("sl_query", {"measures": ["orders.count"]})
        assert not query.is_error and query.structured_content["totalRows"] == 2
        failed = await client.call_tool("memory_ingest_status", {"runId": "nope"})
        assert failed.is_error and "was not found" in text(failed)


# ------------------------------------------------------------------ upstream dies and comes back


@pytest.mark.slow
@pytest.mark.anyio
async def test_upstream_killed_then_back(gateway, fake: Fake, service: KtxIndex) -> None:
    client, received = gateway
    assert not (await client.call_tool("sql_dialect_notes", {"connectionId": "warehouse"})).is_error
    await client.call_tool("memory_ingest", {"content": "enable mongo_query"})  # this process's list only
    await until(lambda: any(isinstance(m, ToolListChangedNotification) for m in received))
    assert "mongo_query" in [t.name for t in (await client.list_tools()).tools]
    received.clear()

    fake.down_file.touch()  # restarts fail until the test says the upstream is back
    fake.kill()
    down = await client.call_tool("sql_dialect_notes", {"connectionId": "warehouse"})
    assert down.is_error and f"upstream '{fake.command}' is unavailable" in text(down), text(down)
    assert "retrying" in text(down)
    assert "sql_dialect_notes" in [t.name for t in (await client.list_tools()).tools]  # still listed while down
    ours = await client.call_tool("wiki_read", {"key": "refund-policy"})
    assert not ours.is_error  # ktx-index's own tools are not affected

    status = service.status().upstream
    assert status is not None and status.state == "unavailable" and status.pid == os.getpid()
    assert status.tools == [*UPSTREAM_ONLY, "mongo_query"] and status.hidden == ["discover_data"] and status.last_error
    # its restarts exit before answering, and what it wrote on stderr says why
    await until(lambda: "its last words on stderr: fake upstream: down" in (service.status().upstream.last_error or ""))
    shown = CliRunner().invoke(cli, ["status", "--project", str(service.root)]).output
    assert "upstream     unavailable" in shown and "served by ktx-index instead of upstream: discover_data" in shown

    fake.down_file.unlink()
    started = time.monotonic()

    async def forwarding() -> bool:
        return not (await client.call_tool("sql_dialect_notes", {"connectionId": "warehouse"})).is_error

    await until(forwarding)
    print(f"forwarding again {time.monotonic() - started:.2f}s after the upstream could start")
    # the restarted upstream lists no mongo_query: the list changed across the reconnect, and clients are told
    await until(lambda: any(isinstance(m, ToolListChangedNotification) for m in received))
    assert "mongo_query" not in [t.name for t in (await client.list_tools()).tools]
    status = service.status().upstream
    assert status is not None and status.state == "connected" and status.attempts == 0


@pytest.mark.anyio
async def test_ktx_tools_say_why_when_upstream_never_started(service: KtxIndex, tmp_path: Path) -> None:
    """``--upstream`` naming a command that is not installed: KTX's tools were never listed, yet a call to one
    is told that upstream is unavailable and why, not that the tool is unknown; other names stay unknown."""
    gw = Gateway(UpstreamSpec.parse(str(tmp_path / "no-such-ktx") + " mcp stdio"), service.root, None, None)
    async with Client(build_server(service, gw)) as client:
        listed = [t.name for t in (await client.list_tools()).tools]
        assert sorted(listed) == sorted(TOOL_NAMES)
        down = await client.call_tool("sl_query", {"measures": ["orders.count"]})
        assert down.is_error and "is unavailable" in text(down) and "no-such-ktx" in text(down), text(down)
        other = await client.call_tool("no_such_tool", {})
        assert other.is_error and text(other) == f"Unknown tool: no_such_tool. Send one of: {', '.join(listed)}."


# ------------------------------------------------------------------ --upstream parsing


def test_upstream_spec_parsing() -> None:
    command = UpstreamSpec.parse("ktx mcp stdio --project '/a b'")
    assert command.command == ("ktx", "mcp", "stdio", "--project", "/a b") and command.label.startswith("ktx mcp")
    url = UpstreamSpec.parse("https://user:pw@ktx.example/mcp", ["Authorization: Bearer s3cret", "X-Team:  data"])
    assert url.url == "https://user:pw@ktx.example/mcp" and url.label == "https://ktx.example/mcp"
    assert url.headers == {"Authorization": "Bearer s3cret", "X-Team": "data"}
    for bad, headers in (("", ()), ("ktx 'unclosed", ()), ("https://x/mcp", ("no colon",)), ("ktx", ("A: b",))):
        with pytest.raises(InvalidInput):
            UpstreamSpec.parse(bad, headers)


def test_a_lost_session_is_a_lost_connection_not_upstreams_refusal() -> None:
    """An HTTP upstream that restarted answers our old session with a 404 ("Session not found"): only a new
    connection helps. A refusal of the call itself passes through as upstream's own error."""
    error = mcp_types.ErrorData
    assert session_gone(error(code=mcp_types.CONNECTION_CLOSED, message="Connection closed"))
    assert session_gone(error(code=mcp_types.INVALID_REQUEST, message="Session not found"))
    assert session_gone(error(code=mcp_types.INVALID_REQUEST, message="Session terminated"))
    assert not session_gone(error(code=mcp_types.INVALID_REQUEST, message="Invalid request parameters"))
    assert not session_gone(error(code=mcp_types.INVALID_PARAMS, message="Session id must be a string"))


@pytest.mark.anyio
async def test_an_upstream_json_rpc_error_passes_through_and_is_logged(tmp_path: Path, caplog) -> None:
    gateway = Gateway(UpstreamSpec.parse("ktx mcp stdio"), tmp_path, None, tmp_path / "errors.json")

    async def refuse(name: str, arguments: dict | None, progress: object) -> dict:
        raise MCPError(code=mcp_types.INVALID_PARAMS, message="measures must be a list")

    gateway.upstream.call = refuse  # type: ignore[method-assign]
    with caplog.at_level(logging.WARNING, logger="ktx_index.mcp"), pytest.raises(MCPError, match="measures must"):
        await gateway.call("sl_query", {"measures": "x"}, None)
    fields = [r.ktx_fields for r in caplog.records if r.getMessage() == "tool.call"]
    assert fields and fields[-1]["error_kind"] == "UpstreamError" and "measures must be a list" in fields[-1]["error"]
    (recorded,) = json.loads((tmp_path / "errors.json").read_text())  # what `status` lists
    assert (recorded["tool"], recorded["kind"]) == ("sl_query", "UpstreamError")


def test_why_an_upstream_never_answered_points_where_to_look() -> None:
    import httpx2

    from ktx_index.mcp.upstream import describe

    exited = MCPError(code=mcp_types.CONNECTION_CLOSED, message="Connection closed")
    why = describe(exited, UpstreamSpec.parse("ktx mcp stdio"))
    assert why.startswith("command 'ktx mcp stdio' exited before answering") and why.endswith("nothing on stderr")
    why = describe(exited, UpstreamSpec.parse("ktx mcp stdio"), ["loading ktx.yaml", "KTX_API_KEY is not set"])
    assert why.endswith("its last words on stderr: loading ktx.yaml | KTX_API_KEY is not set")
    refused = httpx2.ConnectError("All connection attempts failed")
    why = describe(BaseExceptionGroup("transport", [refused]), UpstreamSpec.parse("http://127.0.0.1:9/mcp"))
    assert why.startswith("nothing answers at http://127.0.0.1:9/mcp") and "is the KTX server running" in why
