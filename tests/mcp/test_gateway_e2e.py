"""End to end: ``ktx-index serve --upstream`` as a subprocess in front of ``fake_upstream.py`` (its own process),
driven by the MCP SDK's client over stdio and over streamable HTTP, and listed once by the MCP Inspector CLI.

The project is small and lexical-only (``embeddings: false``): no model is loaded, so each server starts in a
couple of seconds. The upstream is killed once in each transport while the client stays connected, then let
back; the gateway must answer in-band meanwhile and forward again once it is back.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.types import CallToolResult
from projects import write_files
from test_gateway import PROJECT, UPSTREAM_ONLY, WAIT, Fake
from test_transports import KTX_INDEX, child_env, free_port, stop, wait_until_listening

from ktx_index.mcp.server import TOOL_NAMES
from ktx_index.service import KtxIndex

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
TOKEN = "upstream-s3cret"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = write_files(tmp_path_factory.mktemp("gateway-e2e") / "project", PROJECT)
    service = KtxIndex(root)
    try:
        service.rebuild()
    finally:
        service.close()
    return root


def text(result: CallToolResult) -> str:
    return result.content[0].text if result.content and result.content[0].type == "text" else ""


async def one_list(client: Client) -> list[str]:
    names = [t.name for t in (await client.list_tools()).tools]
    assert len(names) == len(set(names)), names  # every tool once: no second discover_data
    assert set(TOOL_NAMES) | set(UPSTREAM_ONLY) <= set(names)
    return names


async def forwarding(client: Client) -> bool:
    return not (await client.call_tool("sql_dialect_notes", {"connectionId": "warehouse"})).is_error


def recent_errors(project: Path) -> list[tuple[str, str]]:
    """(tool, kind) of the last tool errors ``status`` shows (from another process: the server's)."""
    service = KtxIndex(project, embedder=None)
    try:
        return [(e.tool, e.kind) for e in service.status().recent_errors]
    finally:
        service.close()


async def back_within_bound(client: Client) -> None:
    with anyio.fail_after(WAIT):
        while not await forwarding(client):
            await anyio.sleep(0.05)


# ------------------------------------------------------------------ stdio


async def test_stdio_gateway_end_to_end(project: Path, tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    params = StdioServerParameters(
        command=str(KTX_INDEX),
        args=["serve", "--project", str(project), "--no-build", "--upstream", fake.command],
        env=child_env(),
        cwd=str(tmp_path),
    )
    log = tmp_path / "stderr.log"
    try:
        with log.open("w") as errlog, anyio.fail_after(120):
            async with Client(stdio_client(params, errlog=errlog)) as client:  # the SDK's default: 2026-07-28
                await one_list(client)
                assert "upstream KTX" in (client.instructions or "")
                stages: list[str | None] = []

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    stages.append(message)

                query = await client.call_tool(
                    "sl_query", {"measures": ["orders.count"]}, progress_callback=on_progress
                )
                assert not query.is_error and query.structured_content["totalRows"] == 2
                assert stages == ["Compiling query", "Generating SQL", "Executing", "Fetched 2 rows"]
                failed = await client.call_tool("sql_dialect_notes", {"connectionId": "nope"})
                assert failed.is_error and "is not configured in ktx.yaml" in text(failed)
                assert recent_errors(project)[-1] == ("sql_dialect_notes", "UpstreamToolError")

                async with client.listen(tools_list_changed=True) as changes:  # upstream's list changes, relayed
                    await client.call_tool("memory_ingest", {"content": "enable mongo_query"})
                    with anyio.fail_after(WAIT):
                        await changes.__anext__()
                assert "mongo_query" in await one_list(client)

                fake.down_file.touch()
                fake.kill()
                down = await client.call_tool("sql_dialect_notes", {"connectionId": "warehouse"})
                assert down.is_error and f"upstream '{fake.command}' is unavailable" in text(down)
                assert not (await client.call_tool("wiki_search", {"query": "refunds"})).is_error
                fake.down_file.unlink()
                await back_within_bound(client)
    finally:
        print(f"--- server stderr ---\n{log.read_text(errors='replace') if log.exists() else ''}")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    events = {line["event"] for line in lines}
    assert {"upstream.connected", "upstream.unavailable", "upstream.collision", "tool.call"} <= events
    collision = next(line for line in lines if line["event"] == "upstream.collision")
    assert collision["tools"] == ["discover_data"]
    forwarded = [line for line in lines if line["event"] == "tool.call" and line.get("upstream")]
    assert {"UpstreamUnavailable", "UpstreamToolError"} <= {line.get("error_kind") for line in forwarded}
    assert ("sql_dialect_notes", "UpstreamUnavailable") in recent_errors(project)


# ------------------------------------------------------------------ streamable HTTP, upstream over HTTP too


@contextmanager
def fake_http_upstream(fake: Fake, port: int, workdir: Path) -> Iterator[subprocess.Popen]:
    log = workdir / f"upstream-{port}.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, str(Fake.script()), "--transport", "http", "--port", str(port), "--token", TOKEN,
             "--pid-file", str(fake.pid_file), "--events", str(fake.events)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child_env(), cwd=workdir,
        )  # fmt: skip
    try:
        wait_until_listening(proc, port, log)
        yield proc
    finally:
        stop(proc)


@contextmanager
def gateway_over_http(project: Path, upstream_url: str, workdir: Path) -> Iterator[str]:
    port = free_port()
    log = workdir / "serve.log"
    args = ["serve", "--project", str(project), "--no-build", "--transport", "http", "--port", str(port)]
    args += ["--upstream", upstream_url, "--upstream-header", f"Authorization: Bearer {TOKEN}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(KTX_INDEX), *args], stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            env=child_env(), cwd=workdir,
        )  # fmt: skip
    try:
        wait_until_listening(proc, port, log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)
        print(f"--- gateway log ---\n{log.read_text(errors='replace')}")


async def test_http_gateway_in_front_of_an_http_upstream(project: Path, tmp_path: Path) -> None:
    fake, upstream_port = Fake(tmp_path), free_port()
    upstream_url = f"http://127.0.0.1:{upstream_port}/mcp"
    with fake_http_upstream(fake, upstream_port, tmp_path), gateway_over_http(project, upstream_url, tmp_path) as url:
        with anyio.fail_after(120):
            async with Client(url) as client:
                await one_list(client)  # the token got through: upstream's tools are listed
                query = await client.call_tool("sl_query", {"measures": ["orders.count"]})
                assert not query.is_error and query.structured_content["rows"]
                fake.kill()  # the HTTP upstream goes away while our client is connected
                down = await client.call_tool("sql_dialect_notes", {"connectionId": "warehouse"})
                assert down.is_error and f"upstream '{upstream_url}' is unavailable" in text(down), text(down)
                with fake_http_upstream(fake, upstream_port, tmp_path):  # back on the same port
                    await back_within_bound(client)
                with fake_http_upstream(fake, upstream_port, tmp_path):  # stopped and restarted between two calls
                    # the new server does not know the old session ("Session not found"): once said in-band, the
                    # gateway reconnects (that 404 used to fail every later call while status said connected)
                    await back_within_bound(client)
                    service = KtxIndex(project)  # what `ktx-index status` reads while the gateway serves
                    try:
                        status = service.status().upstream
                    finally:
                        service.close()
    assert status is not None and status.state == "connected" and status.upstream == upstream_url
    assert status.hidden == ["discover_data"] and status.tools[: len(UPSTREAM_ONLY)] == UPSTREAM_ONLY


# ------------------------------------------------------------------ the MCP Inspector CLI


@pytest.mark.skipif(shutil.which("npx") is None, reason="npx is not installed (the Inspector CLI runs on Node)")
def test_inspector_cli_lists_the_gateway(project: Path, tmp_path: Path) -> None:
    fake = Fake(tmp_path)
    done = subprocess.run(
        ["npx", "-y", "@modelcontextprotocol/inspector", "--cli", str(KTX_INDEX), "serve", "--project", str(project),
         "--no-build", "--upstream", fake.command, "--method", "tools/list"],
        capture_output=True, text=True, timeout=300, env=child_env(), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert len(names) == len(set(names)) and set(TOOL_NAMES) | set(UPSTREAM_ONLY) <= set(names), names
