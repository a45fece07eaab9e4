"""End to end: ``ktx-index serve`` as a subprocess, driven by the MCP SDK's own stdio and streamable-HTTP clients.

The demo project is copied and indexed in-process once per module with the real all-MiniLM-L6-v2 model; the
served process runs with ``--no-build`` and answers from that index.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jsonschema
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from projects import DEMO, INITIALIZE, MCP_HEADERS

from ktx_index.mcp.server import TOOL_NAMES
from ktx_index.service import KtxIndex

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

KTX_INDEX = Path(sys.executable).parent / "ktx-index"
TOKEN = "s3cret"
START_TIMEOUT = 60  # seconds for a server to accept connections
CALL_TIMEOUT = 120  # seconds for one whole client session (loads the model in the server)
STOP_TIMEOUT = 15


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def indexed_demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo project, indexed in-process with the default (MiniLM) embedder."""
    target = tmp_path_factory.mktemp("served") / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    service = KtxIndex(target)
    try:
        report = service.rebuild()
    finally:
        service.close()
    assert report.embedding_status == "ready" and report.embedded > 0
    return target


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "KTX_INDEX_TOKEN"}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONUNBUFFERED="1")
    return env


def serve_args(project: Path, *extra: str) -> list[str]:
    return ["serve", "--project", str(project), "--no-build", *extra]


async def exercise(client: Client) -> None:
    """What every transport must carry: tools/list, the three searches, progress, in-band and protocol errors."""
    assert "Semantic search: available" in (client.instructions or "")
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert sorted(tools) == sorted(TOOL_NAMES)

    async def ok(name: str, args: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        result = await client.call_tool(name, args, **kwargs)
        assert not result.is_error, result.content
        jsonschema.validate(result.structured_content, tools[name].output_schema)
        return result.structured_content

    refs = (await ok("discover_data", {"query": "monthly orders by customer", "connectionId": "warehouse"}))["refs"]
    assert refs and {r.get("connectionId") for r in refs if r["kind"] != "wiki"} == {"warehouse"}
    assert {"orders", "fct_orders", "customers", "dim_customers"} & {r["id"] for r in refs}

    wiki = (await ok("wiki_search", {"query": "how do refunds work", "limit": 3}))["results"]
    refund = [w for w in wiki if w["key"] == "refund-policy"]
    assert refund and "semantic" in refund[0]["matchReasons"]  # the real model's lane ran

    events: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    found = await ok("dictionary_search", {"values": ["family_4", "Montreal"]}, progress_callback=on_progress)
    family, montreal = found["results"]
    assert ("subscriptions", "plan_tier") in {(m["sourceName"], m["columnName"]) for m in family["matches"]}
    assert montreal["matches"][0]["matchedValue"] == "Montréal"
    assert events, "no notifications/progress over this transport"

    missing = await client.call_tool("wiki_read", {"key": "refund-polcy"})
    assert missing.is_error and "Did you mean: refund-policy" in missing.content[0].text
    invalid = await client.call_tool("discover_data", {"query": "orders", "limit": 99})  # in-band, not JSON-RPC
    assert invalid.is_error and "limit: expected an integer 1–50, got 99" in invalid.content[0].text


@pytest.mark.model
async def test_serve_no_build_answers_a_new_project_before_embedding_it(tmp_path: Path) -> None:
    """``serve --no-build`` on a project nobody indexed: the first call builds the lexical index and answers (no
    embed stage in its progress); the texts are embedded in the background, and a later call finds them."""
    project = tmp_path / "demo"
    shutil.copytree(DEMO, project, ignore=shutil.ignore_patterns(".ktx"))
    params = StdioServerParameters(command=str(KTX_INDEX), args=serve_args(project), env=child_env(), cwd=str(tmp_path))
    events: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append(message or "")

    with (tmp_path / "stderr.log").open("w") as errlog, anyio.fail_after(CALL_TIMEOUT):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            first = await client.call_tool("discover_data", {"query": "refund policy"}, progress_callback=on_progress)
            assert not first.is_error and first.structured_content["refs"]
            assert any(m.startswith("parse") for m in events) and not any(m.startswith("embed") for m in events)
            while True:  # the background embedding ends; the semantic lane then runs
                wiki = await client.call_tool("wiki_search", {"query": "how do refunds work", "limit": 3})
                if "semantic" in wiki.structured_content["results"][0]["matchReasons"]:
                    break
                await anyio.sleep(0.2)


# ------------------------------------------------------------------ stdio


@pytest.mark.model
async def test_stdio_end_to_end(indexed_demo: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=str(KTX_INDEX), args=serve_args(indexed_demo), env=child_env(), cwd=str(tmp_path)
    )
    log = tmp_path / "stderr.log"
    try:
        with log.open("w") as errlog, anyio.fail_after(CALL_TIMEOUT):
            # leaving the context closes stdin and terminates (then kills) the server process
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await exercise(client)
    finally:
        print(f"--- server stderr ---\n{log.read_text(errors='replace') if log.exists() else ''}")


# ------------------------------------------------------------------ streamable HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    pytest.fail(f"server did not accept connections on port {port} within {START_TIMEOUT}s:\n{log.read_text()}")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=STOP_TIMEOUT)


@contextmanager
def http_server(project: Path, workdir: Path, *extra: str) -> Iterator[tuple[str, int]]:
    """``ktx-index serve --transport http`` on a free loopback port; yields (url, port)."""
    port = free_port()
    log = workdir / f"serve-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(KTX_INDEX), *serve_args(project, "--transport", "http", "--port", str(port), *extra)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=child_env(),
            cwd=workdir,
        )
    try:
        wait_until_listening(proc, port, log)
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        stop(proc)
        print(f"--- server log (port {port}) ---\n{log.read_text(errors='replace')}")


@pytest.fixture(scope="module")
def http_plain(indexed_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    with http_server(indexed_demo, tmp_path_factory.mktemp("http-plain")) as served:
        yield served


@pytest.fixture(scope="module")
def http_token(indexed_demo: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    with http_server(indexed_demo, tmp_path_factory.mktemp("http-token"), "--token", TOKEN) as served:
        yield served


@pytest.mark.model
async def test_http_end_to_end(http_plain) -> None:
    url, _port = http_plain
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(url) as client:
            await exercise(client)


@pytest.mark.model
async def test_http_refuses_foreign_origin(http_plain) -> None:
    url, port = http_plain
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=10) as http:
            evil = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": "http://evil.example"})
            assert evil.status_code == 403, evil.text
            rebinding = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Host": f"evil.example:{port}"})
            assert rebinding.status_code == 421, rebinding.text
            local = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": f"http://127.0.0.1:{port}"})
            assert local.status_code == 200, local.text  # the same request from a local page is served
            for origin in ("http://localhost:6274", "http://127.0.0.1:3000", "https://localhost"):  # a local tool's UI
                other = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": origin})
                assert other.status_code == 200, (origin, other.text)
            for origin in ("http://localhost.evil.example:6274", "http://127.0.0.1.evil.example", "null"):
                refused = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Origin": origin})
                assert refused.status_code == 403, (origin, refused.text)


@pytest.mark.model
async def test_http_token_is_required(http_token) -> None:
    url, _port = http_token
    with anyio.fail_after(CALL_TIMEOUT):
        async with httpx2.AsyncClient(timeout=10) as http:
            anonymous = await http.post(url, json=INITIALIZE, headers=MCP_HEADERS)
            assert anonymous.status_code == 401 and anonymous.headers["www-authenticate"] == "Bearer"
            wrong = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            twice = [*MCP_HEADERS.items(), ("Authorization", "Bearer nope"), ("Authorization", f"Bearer {TOKEN}")]
            assert (await http.post(url, json=INITIALIZE, headers=twice)).status_code == 401  # one header, not two
            lower = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, "Authorization": f"bearer {TOKEN}"})
            assert lower.status_code == 200  # the scheme in any case (RFC 7235)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            assert sorted(t.name for t in (await client.list_tools()).tools) == sorted(TOOL_NAMES)
            result = await client.call_tool("connection_list", {})
            assert not result.is_error
            assert [c["id"] for c in result.structured_content["connections"]] == ["dbt", "warehouse"]
            found = await client.call_tool("dictionary_search", {"values": ["family_4"], "connectionId": "warehouse"})
            assert not found.is_error and found.structured_content["results"][0]["matches"]


def test_http_non_loopback_without_token_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ktx.yaml").write_text("connections: {}\n")
    args = serve_args(tmp_path, "--transport", "http", "--host", "0.0.0.0", "--port", str(free_port()))
    # a regression would start serving: the timeout bounds it and subprocess.run kills the child
    done = subprocess.run(
        [str(KTX_INDEX), *args], capture_output=True, text=True, timeout=60, env=child_env(), cwd=tmp_path
    )
    assert done.returncode != 0
    assert "token" in done.stderr and "0.0.0.0" in done.stderr, done.stderr


def test_http_on_a_port_in_use_is_an_error_before_any_serving_line(tmp_path: Path) -> None:
    (tmp_path / "ktx.yaml").write_text("connections: {}\nindex:\n  embeddings: false\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = serve_args(tmp_path, "--transport", "http", "--port", str(port))
        done = subprocess.run(
            [str(KTX_INDEX), *args], capture_output=True, text=True, timeout=60, env=child_env(), cwd=tmp_path
        )
    assert done.returncode == 1, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "pass another --port" in done.stderr
    assert "serving MCP" not in done.stderr


async def test_http_on_port_0_says_the_port_the_system_chose(tmp_path: Path) -> None:
    (tmp_path / "ktx.yaml").write_text("connections: {}\nindex:\n  embeddings: false\n")
    (tmp_path / "wiki/global").mkdir(parents=True)
    (tmp_path / "wiki/global/refunds.md").write_text("---\nsummary: Refunds\n---\nWithin 30 days.\n")
    log = tmp_path / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(KTX_INDEX), *serve_args(tmp_path, "--transport", "http", "--port", "0")],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=child_env(), cwd=tmp_path,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not (said := re.search(r"serving MCP at (http://127\.0\.0\.1:(\d+)/mcp)", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        assert said.group(2) != "0"
        wait_until_listening(proc, int(said.group(2)), log)
        with anyio.fail_after(CALL_TIMEOUT):
            async with Client(said.group(1)) as client:
                found = await client.call_tool("wiki_search", {"query": "refunds"})
                assert not found.is_error and found.structured_content["results"]
    finally:
        stop(proc)
