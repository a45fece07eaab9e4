"""The call log: one JSON line per tool call (and per watcher commit), long values cut, secrets never
written; the last tool errors reach ``status``."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from ktx_index.cli import cli
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.logs import BEARER, MAX_VALUE, URL_CREDENTIALS, configure, cut, timestamp, write_atomic
from ktx_index.mcp import build_server
from ktx_index.service import KtxIndex

FILES = {
    "wiki/global/revenue.md": "---\nsummary: Revenue definition\n---\nRevenue is net of refunds.\n",
    "semantic-layer/warehouse/orders.yaml": "name: orders\ntable: public.orders\ncolumns: [{name: id, type: string}]\n",
}


@pytest.fixture
def log_file(tmp_path):
    path = tmp_path / "calls.log"
    handler = configure("INFO", path)
    yield path
    for name in ("ktx_index", "mcp"):
        logging.getLogger(name).removeHandler(handler)
    handler.close()


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_sdks_warnings_are_json_lines_beside_ours_and_its_chatter_is_not(log_file):
    logging.getLogger("mcp.server.transport_security").warning("Invalid Origin header: %s", "https://evil.example")
    logging.getLogger("mcp.server.lowlevel.server").info("Processing request of type CallToolRequest")
    (line,) = lines(log_file)
    assert line["logger"] == "mcp.server.transport_security" and line["level"] == "warning"
    assert line["event"] == "Invalid Origin header: https://evil.example"


def test_a_client_leaving_mid_request_is_no_error(log_file):
    """The SDK logs a POST whose body a client cut off as an error with its traceback (twenty in an outside pass's
    log): it is an INFO record of the SDK now, which the call log leaves out as it does the SDK's other INFO."""

    class ClientDisconnect(Exception):  # starlette's, by name
        pass

    sdk = logging.getLogger("mcp.server.streamable_http")
    for error in (ClientDisconnect(), RuntimeError("a real failure")):
        try:
            raise error
        except Exception:
            sdk.exception("Error handling POST request")
    (line,) = lines(log_file)
    assert line["level"] == "error" and "RuntimeError: a real failure" in line["traceback"]


def test_timestamps_are_utc_to_the_millisecond():
    assert timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert timestamp(1_780_000_000.25) == "2026-05-28T20:26:40.250Z"
    assert timestamp().endswith("Z") and len(timestamp()) == len("1970-01-01T00:00:00.000Z")


def test_a_stamp_takes_its_seconds_and_milliseconds_from_one_clock_reading():
    # the watcher's own clock once read seconds and milliseconds separately, so a stamp taken across a second
    # boundary went back by up to a second
    for epoch in (1_000_000_000.9995, 1_000_000_001.0005, 1_000_000_001.0015):
        stamp = datetime.strptime(timestamp(epoch), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()
        assert epoch - 0.001 <= stamp <= epoch, (epoch, stamp)


def test_an_atomic_write_replaces_the_file_whole_and_leaves_no_temp_file(tmp_path):
    path = tmp_path / "state.json"
    write_atomic(path, "old")
    write_atomic(path, "new ü")
    write_atomic(tmp_path / "keys", b"\x00\x01", durable=True)
    assert path.read_text(encoding="utf-8") == "new ü" and (tmp_path / "keys").read_bytes() == b"\x00\x01"
    (tmp_path / "folder").mkdir()
    with pytest.raises(OSError):  # a folder cannot be replaced by a file
        write_atomic(tmp_path / "folder", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder", "keys", "state.json"]


def test_cut_shortens_long_values_and_redacts_secrets():
    assert cut("x" * 1000).startswith("x" * MAX_VALUE) and cut("x" * 1000).endswith("[1000 chars]")
    assert cut({"token": "abc", "Authorization": "Bearer abc", "query": "q"}) == {
        "token": "[redacted]",
        "Authorization": "[redacted]",
        "query": "q",
    }
    assert "hunter2" not in cut("see postgres://analyst:hunter2@db.internal:5432/prod")
    assert cut("header Bearer s3cr3t seen") == "header Bearer [redacted] seen"
    assert cut(list(range(50)))[-1] == "…[50 items]"


@pytest.mark.parametrize(
    "value",
    [
        "BEARER abc", "auth: bEaReR\tabc def", "xbearer abc", "bearer", "mysql+pymysql://u:p@h/db",
        "a://b:c@ and https://d:e@f", "user@host://x:y", "mailto:a@b", "https://host/path@v2", "plain text",
        "/work/main/.venv/bin/python fake_upstream.py --pid-file /tmp/x/gw.pid",
    ],
)  # fmt: skip
def test_cut_redacts_exactly_what_the_patterns_match(value: str):
    """cut skips a pattern when the string cannot contain a match (cheaper per call logged): the result is the
    same as both patterns applied to every string."""
    expected = URL_CREDENTIALS[0].sub(URL_CREDENTIALS[1], BEARER[0].sub(BEARER[1], value))
    assert cut(value) == expected


def test_one_line_per_tool_call_with_duration_count_and_error_kind(make_project, log_file):
    service = KtxIndex(make_project(FILES), embedder=HashEmbedder())
    service.rebuild()
    long_query = "revenue " + "very long question " * 40

    async def calls() -> None:
        async with Client(build_server(service)) as client:
            await client.call_tool("wiki_search", {"query": long_query})
            await client.call_tool("discover_data", {"query": "orders", "limit": 3})
            await client.call_tool("discover_data", {"query": "orders", "connectionId": "nope"})
            assert (await client.call_tool("wiki_search", {"query": "x", "limit": 99})).is_error
            await client.call_tool("wiki_search", {"query": "revenue", "bogus": 1, "extra": {"a": 1}})
            entity = {"schema": "raw", "table": "orders", "alias": "o"}  # read_tools.entity_shape reads schema
            await client.call_tool("entity_details", {"connectionId": "warehouse", "entities": [entity]})

    anyio.run(calls)
    calls_logged = [line for line in lines(log_file) if line["event"] == "tool.call"]
    tools = ["wiki_search", "discover_data", "discover_data", "wiki_search", "wiki_search", "entity_details"]
    assert [c["tool"] for c in calls_logged] == tools
    wiki, discover, unknown, invalid, stripped, entity = calls_logged
    assert wiki["level"] == "info" and isinstance(wiki["results"], int) and wiki["ms"] > 0
    assert wiki["arguments"]["query"].endswith(f"[{len(long_query)} chars]")
    assert len(wiki["arguments"]["query"]) < MAX_VALUE + 20
    assert discover["results"] >= 1 and discover["arguments"] == {"query": "orders", "limit": 3}
    assert (unknown["level"], unknown["error_kind"]) == ("warning", "NotFound") and "nope" in unknown["error"]
    assert invalid["error_kind"] == "InvalidArguments" and "limit: expected an integer 1–50, got 99" in invalid["error"]
    assert "ignored" not in wiki and "ignored" not in invalid
    assert stripped["level"] == "info" and stripped["ignored"] == ["bogus", "extra"]  # dropped, as upstream does
    assert stripped["results"] >= 1
    assert entity["ignored"] == ["entities.0.alias"]
    status = service.status()
    assert [(e.tool, e.kind) for e in status.recent_errors] == [
        ("discover_data", "NotFound"),
        ("wiki_search", "InvalidArguments"),
    ]
    rendered = CliRunner().invoke(cli, ["status", "--project", str(service.root)]).output
    assert "tool errors  last 2" in rendered and 'discover_data: NotFound: Unknown connection "nope"' in rendered
    service.close()


def test_cli_log_options(make_project, tmp_path):
    root = make_project(FILES)
    bad = CliRunner().invoke(cli, ["watch", "--project", str(root), "--log-file", str(tmp_path / "no/such/dir/x")])
    assert bad.exit_code == 1 and "cannot open log file" in bad.output
    assert "--log-level" in CliRunner().invoke(cli, ["serve", "--help"]).output
