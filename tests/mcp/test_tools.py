"""In-process tests of the seven MCP tools, through a real MCP client (``Client(build_server(service))``).

Per tool: the canonical input is accepted, every alternative shape the server promises is accepted,
structuredContent validates against the advertised outputSchema and the text block is the same object
as compact JSON, handler errors come back in-band (``isError``) saying what to send instead, arguments
that fail the input schema are in-band too (naming the field and what to send), and unknown keys are dropped.
Upstream's shapes themselves are held in tests/mcp/test_contract.py.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from mcp import Client
from mcp.types import CallToolResult, Tool
from projects import column, profile_entry, scan_files, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import NotFound
from ktx_index.index.layout import IndexLayout, WriterLock
from ktx_index.mcp import build_server
from ktx_index.mcp.common import HEARTBEAT_S
from ktx_index.mcp.server import TOOL_NAMES, KtxMCPServer, result_count
from ktx_index.service import KtxIndex
from ktx_index.tools import entities, table_names

pytestmark = pytest.mark.anyio

DEMO_SYNC = "2026-10-02-060000-local-mg9a1b2c"
RAW_ORDERS = {"catalog": None, "db": "raw", "name": "orders"}
SENTINEL = "SENTINEL-OUTSIDE-THE-PROJECT"


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server(demo_service: KtxIndex) -> KtxMCPServer:
    """One server per module around the session's demo index (fake embedder)."""
    return build_server(demo_service)


@pytest.fixture
async def client(server: KtxMCPServer) -> AsyncIterator[Client]:
    async with Client(server) as c:
        yield c


@pytest.fixture
async def tools(client: Client) -> dict[str, Tool]:
    return {t.name: t for t in (await client.list_tools()).tools}


# ------------------------------------------------------------------ helpers


def structured(result: CallToolResult, tool: Tool) -> dict[str, Any]:
    """A successful result: validates against the outputSchema; the one text block is the same object, compact."""
    text = result.content[0].text if result.content and result.content[0].type == "text" else ""
    assert not result.is_error, text
    data = result.structured_content
    assert isinstance(data, dict)
    jsonschema.validate(data, tool.output_schema)
    assert len(result.content) == 1 and result.content[0].type == "text"
    assert json.loads(text) == data
    assert text == json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return data


def tool_error(result: CallToolResult) -> str:
    """An in-band handler error: isError with one text block, no structuredContent."""
    assert result.is_error, f"expected isError, got {result.structured_content}"
    assert not result.structured_content
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


async def call_ok(client: Client, tools: dict[str, Tool], name: str, args: dict[str, Any]) -> dict[str, Any]:
    return structured(await client.call_tool(name, args), tools[name])


async def invalid_arguments(client: Client, name: str, args: dict[str, Any]) -> str:
    """Arguments outside the inputSchema: an in-band error (never JSON-RPC) that names the field."""
    text = tool_error(await client.call_tool(name, args))
    assert text.startswith(f"Invalid arguments for tool {name}: "), text
    return text


UNKNOWN_NOPE = 'Unknown connection "nope". Configured connections: dbt, warehouse.'


# ------------------------------------------------------------------ every tool: canonical input

CANONICAL: dict[str, dict[str, Any]] = {
    "connection_list": {},
    "discover_data": {
        "query": "customer orders",
        "connectionId": "warehouse",
        "kinds": ["sl_source", "table"],
    },
    "wiki_search": {"query": "refund policy", "limit": 5},
    "wiki_read": {"key": "refund-policy"},
    "entity_details": {"connectionId": "warehouse", "entities": [{"table": RAW_ORDERS, "columns": ["order_id"]}]},
    "dictionary_search": {"values": ["family_4"], "connectionId": "warehouse"},
    "sl_read_source": {"connectionId": "warehouse", "sourceName": "orders"},
}


def test_canonical_inputs_cover_every_tool() -> None:
    assert set(CANONICAL) == set(TOOL_NAMES)


@pytest.mark.parametrize("name", sorted(CANONICAL))
async def test_canonical_input_is_accepted_and_output_validates(client, tools, name) -> None:
    data = await call_ok(client, tools, name, CANONICAL[name])
    assert data  # a non-empty JSON object, never a bare array


@pytest.mark.parametrize("name", sorted(CANONICAL))
async def test_unknown_extra_argument_is_dropped(client, tools, name) -> None:
    """Upstream strips unknown keys silently; so does ktx-index (the call log names them)."""
    plain = await call_ok(client, tools, name, CANONICAL[name])
    assert await call_ok(client, tools, name, {**CANONICAL[name], "bogus": 1}) == plain


async def test_instructions_describe_live_index_state(client) -> None:
    assert "discover_data" in client.instructions
    assert "Connections: dbt, warehouse" in client.instructions


# ------------------------------------------------------------------ connection_list


async def test_connection_list(client, tools) -> None:
    data = await call_ok(client, tools, "connection_list", {})
    by_id = {c["id"]: c for c in data["connections"]}
    assert [c["id"] for c in data["connections"]] == ["dbt", "warehouse"]
    assert by_id["warehouse"]["connectionType"] == "POSTGRESQL" and by_id["warehouse"]["driver"] == "postgres"
    assert by_id["dbt"]["connectionType"] == "dbt"  # upstream echoes a non-warehouse driver as written
    assert all(c["declared"] for c in data["connections"])
    assert by_id["warehouse"]["counts"]["table"] == 20
    assert by_id["dbt"]["counts"]["sl_source"] > 0


# ------------------------------------------------------------------ discover_data


async def test_discover_data_canonical_respects_filters(client, tools) -> None:
    refs = (await call_ok(client, tools, "discover_data", {**CANONICAL["discover_data"], "limit": 5}))["refs"]
    assert 0 < len(refs) <= 5
    assert {r["kind"] for r in refs} <= {"sl_source", "table"}
    assert {r["connectionId"] for r in refs} == {"warehouse"}
    scores = [r["score"] for r in refs]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)


async def test_discover_data_defaults(client, tools) -> None:
    refs = (await call_ok(client, tools, "discover_data", {"query": "orders"}))["refs"]
    assert 0 < len(refs) <= 10
    assert {r["connectionId"] for r in refs if "connectionId" in r} <= {"warehouse", "dbt"}


async def test_discover_data_kinds_as_single_string(client, tools) -> None:
    refs = (await call_ok(client, tools, "discover_data", {"query": "orders", "kinds": "table", "limit": 3}))["refs"]
    assert refs and {r["kind"] for r in refs} == {"table"}
    assert refs[0]["id"] == "raw.orders" and refs[0]["tableRef"] == RAW_ORDERS
    for sent in ("table, sl_source", ["Table,sl_source"]):  # as entity_details reads comma-separated columns
        refs = (await call_ok(client, tools, "discover_data", {"query": "orders", "kinds": sent}))["refs"]
        assert refs and {r["kind"] for r in refs} <= {"table", "sl_source"}, sent


async def test_discover_data_empty_kinds_is_every_kind(client, tools) -> None:
    """Upstream answers ``kinds: []`` with nothing, which an agent reads as "no data" (an outside pass)."""
    every = await call_ok(client, tools, "discover_data", {"query": "orders", "limit": 5})
    assert (
        every["refs"]
        and await call_ok(client, tools, "discover_data", {"query": "orders", "kinds": [], "limit": 5}) == every
    )


@pytest.mark.parametrize("kind", ["wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column"])
async def test_discover_data_refs_hydrate_with_the_read_tools(client, tools, kind) -> None:
    """Every ref's follow-up (as the tool description says) succeeds, for every kind."""
    refs = []
    for query in ("orders by customer", "active subscribers", "delivery on time", "plan tier", "refunds"):
        refs += (await call_ok(client, tools, "discover_data", {"query": query, "kinds": [kind], "limit": 5}))["refs"]
    assert refs and {r["kind"] for r in refs} == {kind}
    for ref in refs:
        if kind == "wiki":
            assert (await call_ok(client, tools, "wiki_read", {"key": ref["id"]}))["key"] == ref["id"]
        elif kind.startswith("sl_"):
            source = ref["id"].split(".")[0]
            args = {"connectionId": ref["connectionId"], "sourceName": source}
            assert (await call_ok(client, tools, "sl_read_source", args))["sourceName"] == source
        else:
            entity: dict[str, Any] = {"table": ref["tableRef"]}
            if kind == "column":
                entity["columns"] = [ref["columnName"]]
            args = {"connectionId": ref["connectionId"], "entities": [entity]}
            (item,) = (await call_ok(client, tools, "entity_details", args))["results"]
            assert item["ok"] and item["tableRef"] == ref["tableRef"], item


async def test_discover_data_unknown_connection_lists_known(client) -> None:
    text = tool_error(await client.call_tool("discover_data", {"query": "orders", "connectionId": "nope"}))
    assert text == UNKNOWN_NOPE


async def test_a_connection_id_in_another_case_is_the_declared_one(client) -> None:
    """An agent copies a connection's name from a question or a page (``Warehouse``): one declared id equal to it
    but for case is that connection, in every tool; the answers name it as ktx.yaml spells it."""
    for name, args in (
        ("discover_data", {"query": "orders"}),
        ("dictionary_search", {"values": ["Montréal"]}),
        ("wiki_search", {"query": "refund policy"}),
        ("sl_read_source", {"sourceName": "orders"}),
    ):
        upper = await client.call_tool(name, {**args, "connectionId": "WAREHOUSE"})
        plain = await client.call_tool(name, {**args, "connectionId": "warehouse"})
        assert not upper.is_error, (name, upper.content)
        assert upper.structured_content == plain.structured_content, name
    entities = {"entities": [{"table": "orders"}]}
    found = await client.call_tool("entity_details", {"connectionId": "Warehouse", **entities})
    assert (
        found.structured_content
        == (await client.call_tool("entity_details", {"connectionId": "warehouse", **entities})).structured_content
    )


SEARCH_ARGS = {"discover_data": {"query": "orders"}, "dictionary_search": {"values": ["Montréal"]}}


@pytest.mark.parametrize("name", sorted(SEARCH_ARGS))
@pytest.mark.parametrize("blank", ["", "  "], ids=["empty", "spaces"])
async def test_blank_connection_id_means_all_connections(client, tools, name, blank) -> None:
    """_none_if_blank promises that a blank connectionId is read as omitted."""
    everywhere = await call_ok(client, tools, name, SEARCH_ARGS[name])
    assert await call_ok(client, tools, name, {**SEARCH_ARGS[name], "connectionId": blank}) == everywhere


@pytest.mark.parametrize(
    ("name", "sent", "canonical"),
    [
        ("discover_data", {"query": " orders ", "connectionId": " warehouse ", "kinds": "Table"},
         {"query": "orders", "connectionId": "warehouse", "kinds": ["table"]}),
        ("wiki_search", {"query": "  refund policy\n"}, {"query": "refund policy"}),
        ("dictionary_search", {"values": [" Montréal "], "connectionId": " warehouse"},
         {"values": ["Montréal"], "connectionId": "warehouse"}),
        ("sl_read_source", {"connectionId": " warehouse ", "sourceName": " orders.yaml "},
         {"connectionId": "warehouse", "sourceName": "orders"}),
        ("entity_details", {"connectionId": "warehouse ", "entities": [{"table": "orders", "columns": " ID "}]},
         {"connectionId": "warehouse", "entities": [{"table": "orders", "columns": ["ID"]}]}),
    ],
)  # fmt: skip
async def test_padded_and_cased_arguments_read_as_the_canonical_ones(client, tools, name, sent, canonical) -> None:
    """Shapes models drift into (spaces around a value, a kind capitalised, one string for a list) answer what the
    canonical arguments answer."""
    assert await call_ok(client, tools, name, sent) == await call_ok(client, tools, name, canonical)


@pytest.mark.parametrize("query", ["   ", "?!?", "🚀🚀"])
@pytest.mark.parametrize("name", ["discover_data", "wiki_search"])
async def test_a_query_without_words_says_to_send_words(client, name, query) -> None:
    """The inputSchema (upstream's) admits it, so it is the tool's error, not an argument error; and punctuation
    alone is refused as spaces are, not answered with an empty list. It is quoted as sent (emoji came back as
    ``\\ud83d\\ude80`` escapes)."""
    text = tool_error(await client.call_tool(name, {"query": query}))
    assert text.startswith(f'The query "{query}" holds no words; send what to search for')


async def test_values_of_spaces_say_to_send_values(client) -> None:
    """A value of spaces would come back as a miss, which reads as "not in the data"."""
    text = tool_error(await client.call_tool("dictionary_search", {"values": ["Premium", "  "]}))
    assert text.startswith('values[1] ("  ") holds no characters but spaces; send the business values to look up')


@pytest.mark.parametrize("name", sorted(SEARCH_ARGS))
async def test_null_connection_id_reads_as_omitted(client, tools, name) -> None:
    """null is outside the advertised schema but read as omitted (the field description says so)."""
    everywhere = await call_ok(client, tools, name, SEARCH_ARGS[name])
    assert await call_ok(client, tools, name, {**SEARCH_ARGS[name], "connectionId": None}) == everywhere


# ------------------------------------------------------------------ wiki_search


async def test_wiki_search_canonical(client, tools) -> None:
    data = await call_ok(client, tools, "wiki_search", CANONICAL["wiki_search"])
    top = data["results"][0]
    assert (top["key"], top["scope"], top["path"]) == ("refund-policy", "GLOBAL", "wiki/global/refund-policy.md")
    assert "exact" in top["matchReasons"] and top["summary"]
    assert data["totalFound"] >= len(data["results"]) and len(data["results"]) <= 5


async def test_wiki_search_user_page_shadows_global(client, tools) -> None:
    data = await call_ok(client, tools, "wiki_search", {"query": "active subscriber definition"})
    hits = [r for r in data["results"] if r["key"] == "active-subscriber-definition"]
    assert [(h["scope"], h["path"]) for h in hits] == [("USER", "wiki/user/local/active-subscriber-definition.md")]


async def test_wiki_search_limit(client, tools) -> None:
    data = await call_ok(client, tools, "wiki_search", {"query": "subscribers", "limit": 1})
    assert len(data["results"]) == 1


async def test_a_null_limit_is_the_limit_not_sent(client, tools) -> None:
    """As null is for connectionId: agents send null for the options they leave unset (an outside pass)."""
    for tool, query in (("discover_data", "orders"), ("wiki_search", "subscribers")):
        unset = await call_ok(client, tools, tool, {"query": query})
        assert await call_ok(client, tools, tool, {"query": query, "limit": None}) == unset, tool


async def test_wiki_search_connection_id(client, tools) -> None:
    """KTX's newer optional connectionId: the demo's pages are unscoped, so all of them still apply."""
    plain = await call_ok(client, tools, "wiki_search", {"query": "refund policy"})
    scoped = await call_ok(client, tools, "wiki_search", {"query": "refund policy", "connectionId": "warehouse"})
    assert scoped == plain
    assert (
        tool_error(await client.call_tool("wiki_search", {"query": "refund policy", "connectionId": "nope"}))
        == UNKNOWN_NOPE
    )


# ------------------------------------------------------------------ wiki_read


@pytest.mark.parametrize(
    ("key", "scope", "path"),
    [
        ("refund-policy", "GLOBAL", "wiki/global/refund-policy.md"),
        ("refund-policy.md", "GLOBAL", "wiki/global/refund-policy.md"),
        ("global/refund-policy", "GLOBAL", "wiki/global/refund-policy.md"),
        ("active-subscriber-definition", "USER", "wiki/user/local/active-subscriber-definition.md"),
        ("user/active-subscriber-definition", "USER", "wiki/user/local/active-subscriber-definition.md"),
        ("global/active-subscriber-definition", "GLOBAL", "wiki/global/active-subscriber-definition.md"),
        ("user/my-monday-checklist", "USER", "wiki/user/local/my-monday-checklist.md"),
    ],
)
async def test_wiki_read_key_shapes(client, tools, key, scope, path) -> None:
    page = await call_ok(client, tools, "wiki_read", {"key": key})
    assert (page["scope"], page["path"]) == (scope, path)
    assert page["key"] == key.split("/")[-1].removesuffix(".md")
    assert page["content"] and not page["content"].startswith("---")


async def test_wiki_read_user_and_global_pages_differ(client, tools) -> None:
    user = await call_ok(client, tools, "wiki_read", {"key": "user/active-subscriber-definition"})
    glob = await call_ok(client, tools, "wiki_read", {"key": "global/active-subscriber-definition"})
    assert user["content"] != glob["content"] and "Not the official KPI" in user["summary"]


async def test_wiki_read_unknown_key_suggests_nearest(client) -> None:
    text = tool_error(await client.call_tool("wiki_read", {"key": "refund-polcy"}))
    assert text.startswith('Wiki page "refund-polcy" was not found. Did you mean: refund-policy')


async def test_wiki_read_missing_scope_is_an_error(client) -> None:
    text = tool_error(await client.call_tool("wiki_read", {"key": "global/my-monday-checklist"}))
    assert "not found" in text and "my-monday-checklist" in text


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("refund/policy", 'use "refund-policy"'),  # KTX's flat form, when it names a page
        (
            "../secret",
            "send a key wiki_search returned, alone or after global/ or user/ to pick a scope (",
        ),  # a flat form that names no page is not offered
        ("global/../../../refund-policy", 'use "refund-policy"'),
        ("/etc/passwd", "send a key wiki_search returned, alone or after global/ or user/ to pick a scope ("),
        ("local/active-subscriber-definition", "did you mean: active-subscriber-definition"),
    ],
)
async def test_wiki_read_unsafe_key_says_which_page_to_send(client, key, hint) -> None:
    text = tool_error(await client.call_tool("wiki_read", {"key": key}))
    assert "Wiki keys must be flat" in text and hint in text
    assert '"secret"' not in text and '"etc-passwd"' not in text


@pytest.mark.parametrize(
    ("path", "scope"),
    [("wiki/global/refund-policy.md", "GLOBAL"), ("wiki/user/local/active-subscriber-definition.md", "USER")],
)
async def test_wiki_read_takes_the_path_wiki_search_returns(client, tools, path, scope) -> None:
    data = await call_ok(client, tools, "wiki_read", {"key": path})
    assert data["path"] == path and data["scope"] == scope


# ------------------------------------------------------------------ entity_details


def entity_args(*entities: dict[str, Any], connection: str = "warehouse") -> dict[str, Any]:
    return {"connectionId": connection, "entities": list(entities)}


@pytest.mark.parametrize(
    "table",
    [
        RAW_ORDERS,
        {"catalog": None, "db": "RAW", "name": "Orders"},
        "raw.orders",
        "orders",
        '"raw"."orders"',
        {"schema": "raw", "table": "orders"},
        {"schema": None, "table": "orders"},
    ],
    ids=["tableRef", "tableRef-case", "display", "bare-name", "quoted", "schema-table", "schema-null"],
)
async def test_entity_details_table_shapes(client, tools, table) -> None:
    (item,) = (await call_ok(client, tools, "entity_details", entity_args({"table": table})))["results"]
    assert item["ok"], item
    assert item["tableRef"] == RAW_ORDERS and item["display"] == "raw.orders" and item["kind"] == "table"
    assert item["snapshot"]["syncId"] == DEMO_SYNC and item["estimatedRows"] > 0
    names = [c["name"] for c in item["columns"]]
    assert names[0] == "order_id" and len(names) == 13


@pytest.mark.parametrize(
    "entity",
    [
        "raw.orders",
        {"tableRef": RAW_ORDERS, "kind": "table", "id": "raw.orders", "score": 0.9},
        RAW_ORDERS,
        {"schema": "raw", "table": "orders", "columns": ["order_id"]},
    ],
    ids=["table-alone", "discover-ref", "table-object-alone", "schema-table-at-entity-level"],
)
async def test_entity_details_entity_shapes_models_drift_into(client, tools, entity) -> None:
    """An outside agent pass sent the table alone, and the ref discover_data gave it, on its first call."""
    (item,) = (await call_ok(client, tools, "entity_details", entity_args(entity)))["results"]
    assert item["ok"], item
    assert item["tableRef"] == RAW_ORDERS and item["display"] == "raw.orders"


async def test_entity_details_canonical_column_details(client, tools) -> None:
    (item,) = (await call_ok(client, tools, "entity_details", CANONICAL["entity_details"]))["results"]
    (col,) = item["columns"]
    assert col["name"] == "order_id" and col["primaryKey"] is True and col["nullable"] is False
    assert col["sampleValues"] and col["distinctCount"] == 10000 and col["nullRate"] == 0.0
    assert any(fk["toTable"] == "subscriptions" for fk in item["foreignKeys"])


@pytest.mark.parametrize(
    ("columns", "expected"),
    [("order_id", ["order_id"]), (["ORDER_ID", "currency"], ["order_id", "currency"])],
    ids=["single-string", "case-insensitive-list"],
)
async def test_entity_details_columns_shapes(client, tools, columns, expected) -> None:
    (item,) = (
        await call_ok(client, tools, "entity_details", entity_args({"table": "raw.orders", "columns": columns}))
    )["results"]
    assert item["ok"] and [c["name"] for c in item["columns"]] == expected


async def test_entity_details_several_entities_keep_order(client, tools) -> None:
    args = entity_args({"table": "raw.depots"}, {"table": "analytics.fct_orders"}, {"table": "raw.nope"})
    items = (await call_ok(client, tools, "entity_details", args))["results"]
    assert [i["ok"] for i in items] == [True, True, False]
    assert [i.get("display") for i in items[:2]] == ["raw.depots", "analytics.fct_orders"]
    assert items[2]["table"] == "raw.nope" and items[2]["snapshot"]["syncId"] == DEMO_SYNC


async def test_entity_details_unknown_column_lists_columns(client, tools) -> None:
    args = entity_args({"table": "raw.orders", "columns": ["id"]})
    (item,) = (await call_ok(client, tools, "entity_details", args))["results"]
    assert (item["ok"], item["error"]["code"]) == (False, "column_not_found")
    assert item["error"]["message"].startswith("Column(s) not found on raw.orders: id. Send names among")
    assert "order_id" in item["error"]["candidates"] and item["snapshot"]["syncId"] == DEMO_SYNC
    args = entity_args({"table": "raw.orders", "columns": ["order_id", "custmer"]})
    (item,) = (await call_ok(client, tools, "entity_details", args))["results"]
    assert item["error"]["candidates"][0] == "customer_id"  # the nearest first, then the table's order


async def test_entity_details_unknown_table_gives_nearest_candidates(client, tools) -> None:
    (item,) = (await call_ok(client, tools, "entity_details", entity_args({"table": "raw.ordrs"})))["results"]
    assert (item["ok"], item["error"]["code"]) == (False, "table_not_found")
    assert item["error"]["candidates"][0] == {"tableRef": RAW_ORDERS, "display": "raw.orders"}
    assert item["error"]["message"].startswith("Table not found in latest scan: raw.ordrs")


async def test_entity_details_unknown_table_lists_every_table_nearest_first(client, tools, demo_service) -> None:
    """As upstream, every scanned table is a candidate (up to MAX_CANDIDATES): the nearest first, then by name."""
    (item,) = (await call_ok(client, tools, "entity_details", entity_args({"table": "raw.ordrs"})))["results"]
    listed = [c["display"] for c in item["error"]["candidates"]]
    scanned = {t.display for t in table_names.scanned_tables(demo_service.refreshed_engine().store, "warehouse")}
    assert listed[0] == "raw.orders" and set(listed) == scanned and len(listed) == len(scanned)
    close = len(entities.nearest("raw.ordrs", sorted(scanned), 8))
    assert listed[close:] == sorted(listed[close:])


async def test_entity_details_blank_table(client, tools) -> None:
    """Upstream's table string has minLength 1 (an argument error); a table of spaces is a name found nowhere."""
    text = await invalid_arguments(client, "entity_details", entity_args({"table": ""}))
    assert "entities.0.table: expected a non-empty string" in text
    (item,) = (await call_ok(client, tools, "entity_details", entity_args({"table": "   "})))["results"]
    assert item["error"]["code"] == "table_not_found" and item["error"]["candidates"]


async def test_entity_details_connection_without_scan(client, tools) -> None:
    args = entity_args({"table": "fct_orders"}, connection="dbt")
    (item,) = (await call_ok(client, tools, "entity_details", args))["results"]
    assert (item["ok"], item["error"]["code"], item["table"]) == (False, "scan_missing", "fct_orders")
    assert item["error"]["message"] == (
        'No live-database scan found for connection "dbt"; run `ktx ingest dbt` or `ktx scan dbt`. This table can be '
        'read with entity_details with connectionId "warehouse", or sl_read_source {connectionId: "dbt", '
        'sourceName: "fct_orders"}.'
    )
    assert "snapshot" not in item


async def test_a_dbt_value_match_leads_to_a_readable_table(client, tools) -> None:
    """dictionary_search names dbt enum values under the dbt connection, which has no scan: the entity_details
    answer its tableRef gets names the connection whose scan reads it, and that call answers."""
    found = await call_ok(client, tools, "dictionary_search", {"values": ["CAD"]})
    match = next(m for r in found["results"] for m in r["matches"] if m["connectionId"] == "dbt")
    entity = {"table": match["tableRef"], "columns": [match["columnName"]]}
    (missing,) = (await call_ok(client, tools, "entity_details", entity_args(entity, connection="dbt")))["results"]
    assert missing["error"]["code"] == "scan_missing" and 'connectionId "warehouse"' in missing["error"]["message"]
    (item,) = (await call_ok(client, tools, "entity_details", entity_args(entity, connection="warehouse")))["results"]
    assert item["ok"] and [c["name"] for c in item["columns"]] == [match["columnName"]]


async def test_a_table_no_connection_scans_gets_no_next_step(client, tools) -> None:
    (item,) = (await call_ok(client, tools, "entity_details", entity_args({"table": "nope"}, connection="dbt")))[
        "results"
    ]
    assert item["error"]["message"].endswith("`ktx scan dbt`.")


async def test_entity_details_unknown_connection_is_answered_per_entity(client, tools) -> None:
    """As upstream: not an error of the call, each entity says there is no scan (and here, which connections are)."""
    args = entity_args({"table": "orders"}, {"table": {"schema": "raw", "table": "orders"}}, connection="nope")
    items = (await call_ok(client, tools, "entity_details", args))["results"]
    assert [(i["ok"], i["error"]["code"]) for i in items] == [(False, "scan_missing")] * 2
    assert items[1]["table"] == RAW_ORDERS  # {schema, table} is echoed in upstream's shape
    assert items[0]["error"]["message"] == (
        'No live-database scan found for connection "nope"; it is not configured. Configured connections: dbt, warehouse.'
    )  # not `ktx ingest nope`: there is nothing to ingest under an id no connection has


# ------------------------------------------------------------------ dictionary_search


async def test_dictionary_search_canonical(client, tools) -> None:
    data = await call_ok(client, tools, "dictionary_search", CANONICAL["dictionary_search"])
    assert [(s["connectionId"], s["status"]) for s in data["searched"]] == [("warehouse", "ready")]
    assert data["searched"][0]["coverage"]["syncId"] == DEMO_SYNC
    (result,) = data["results"]
    top = result["matches"][0]
    assert result["value"] == "family_4" and result["misses"] == []
    assert (top["sourceName"], top["columnName"], top["matchedValue"]) == ("subscriptions", "plan_tier", "family_4")
    assert top["tableRef"] == {"catalog": None, "db": "raw", "name": "subscriptions"}
    assert (top["matchType"], top["score"], top["origin"]) == ("exact", 1.0, "profile")


async def test_dictionary_search_values_as_single_string(client, tools) -> None:
    data = await call_ok(client, tools, "dictionary_search", {"values": "family_4", "connectionId": "warehouse"})
    assert [r["value"] for r in data["results"]] == ["family_4"]
    assert data["results"][0]["matches"][0]["matchedValue"] == "family_4"


async def test_dictionary_search_folds_accents_across_all_connections(client, tools) -> None:
    data = await call_ok(client, tools, "dictionary_search", {"values": ["montreal", "zzzz-not-a-value"]})
    assert [s["connectionId"] for s in data["searched"]] == ["dbt", "warehouse"]
    montreal, missing = data["results"]
    top = montreal["matches"][0]
    assert (top["matchedValue"], top["matchType"], top["columnName"]) == ("Montréal", "folded", "city")
    assert top["tableRef"] == {"catalog": None, "db": "raw", "name": "depots"}
    assert missing["matches"] == [] and {m["reason"] for m in missing["misses"]} == {"value_not_in_sample"}
    assert {m["connectionId"] for m in missing["misses"]} == {"dbt", "warehouse"}


async def test_dictionary_search_unknown_connection_lists_known(client) -> None:
    text = tool_error(await client.call_tool("dictionary_search", {"values": ["x"], "connectionId": "nope"}))
    assert text == UNKNOWN_NOPE


async def test_dictionary_search_reports_progress(client, tools) -> None:
    events: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    result = await client.call_tool(
        "dictionary_search", {"values": ["family_4", "Montréal"]}, progress_callback=on_progress
    )
    structured(result, tools["dictionary_search"])
    assert events == [(1, None, "dictionary 1/2"), (2, None, "dictionary 2/2")]  # where the stage starts and ends


# ------------------------------------------------------------------ sl_read_source


@pytest.mark.parametrize("name", ["orders", "orders.yaml"])
async def test_sl_read_source_standalone(client, tools, name) -> None:
    data = await call_ok(client, tools, "sl_read_source", {"connectionId": "warehouse", "sourceName": name})
    assert (data["sourceName"], data["connectionId"]) == ("orders", "warehouse")
    assert data["yaml"].startswith("name: orders\n") and "table: raw.orders" in data["yaml"]
    assert data["files"] and data["path"].startswith("semantic-layer/warehouse/")


async def test_sl_read_source_composed_overlay(client, tools) -> None:
    args = {"connectionId": "warehouse", "sourceName": "subscriptions"}
    data = await call_ok(client, tools, "sl_read_source", args)
    assert data["path"] == "semantic-layer/warehouse/_schema/raw.yaml#subscriptions"
    assert data["files"] == [
        "semantic-layer/warehouse/_schema/raw.yaml",
        "semantic-layer/warehouse/lapsed-subscribers.yaml",
    ]
    assert "active_subscriptions" in data["yaml"]  # the overlay's measure is composed in


async def test_sl_read_source_other_connection(client, tools) -> None:
    data = await call_ok(client, tools, "sl_read_source", {"connectionId": "dbt", "sourceName": "fct_orders"})
    assert data["connectionId"] == "dbt" and "analytics.fct_orders" in data["yaml"]


async def test_sl_read_source_unknown_source_suggests_names(client) -> None:
    text = tool_error(
        await client.call_tool("sl_read_source", {"connectionId": "warehouse", "sourceName": "delivries"})
    )
    assert text.startswith('Semantic-layer source "delivries" was not found. In "warehouse", did you mean: deliveries')
    # a name in another case (upstream reads names exactly; a warehouse's unquoted names ignore case) is that source
    found = await client.call_tool("sl_read_source", {"connectionId": "warehouse", "sourceName": "DELIVERIES"})
    assert not found.is_error and found.structured_content["sourceName"] == "deliveries"


async def test_sl_read_source_unknown_connection_lists_known(client) -> None:
    text = tool_error(await client.call_tool("sl_read_source", {"connectionId": "nope", "sourceName": "orders"}))
    assert text == 'Semantic-layer source "orders" was not found. ' + UNKNOWN_NOPE


# ------------------------------------------------------------------ invalid arguments: in-band, naming the field


@pytest.mark.parametrize(
    ("name", "args", "problem"),
    [
        ("discover_data", {"query": "orders", "limit": 99}, "limit: expected an integer 1–50, got 99"),
        ("discover_data", {"query": "orders", "limit": 0}, "limit: expected an integer 1–50, got 0"),
        ("discover_data", {}, "query: required, expected a non-empty string"),
        ("discover_data", {"query": ""}, 'query: expected a non-empty string, got ""'),
        ("discover_data", {"query": "orders", "kinds": ["bogus"]}, 'kinds.0: expected one of "wiki", "sl_source"'),
        ("wiki_search", {"query": "refunds", "limit": 51}, "limit: expected an integer 1–50, got 51"),
        ("wiki_search", {}, "query: required, expected a non-empty string"),
        ("wiki_read", {}, "key: required, expected a non-empty string"),
        ("wiki_read", {"key": ""}, 'key: expected a non-empty string, got ""'),
        ("entity_details", {"entities": [{"table": "orders"}]}, "connectionId: required, expected a non-empty string"),
        ("entity_details", {"connectionId": "warehouse", "entities": []}, "entities: expected a list of 1–20 items"),
        (
            "entity_details",
            {"connectionId": "warehouse", "entities": [{"table": "orders"}] * 21},
            "entities: expected a list of 1–20 items, each an object with keys table (required), columns, got a list "
            "of 21 items",
        ),
        (
            "entity_details",
            {"connectionId": "warehouse", "entities": [{"columns": ["id"]}]},
            "entities.0.table: required, expected a non-empty string, or an object with keys name (required)",
        ),
        ("dictionary_search", {}, "values: required, expected a list of 1–20 items, each a non-empty string"),
        ("dictionary_search", {"values": []}, "values: expected a list of 1–20 items"),
        ("dictionary_search", {"values": [""]}, 'values.0: expected a non-empty string, got ""'),
        ("dictionary_search", {"values": ["x"] * 21}, "values: expected a list of 1–20 items"),
        ("sl_read_source", {"connectionId": "warehouse"}, "sourceName: required, expected a non-empty string"),
        ("sl_read_source", {"connectionId": "", "sourceName": "orders"}, "connectionId: expected a non-empty string"),
    ],
)
async def test_invalid_arguments_are_in_band_and_name_the_field(client, name, args, problem) -> None:
    assert problem in await invalid_arguments(client, name, args)


async def test_the_call_log_counts_what_each_tool_returned(client, tools) -> None:
    """``results`` in a tool.call line: refs, pages, value matches, or one page for wiki_read (whose ``refs`` are
    the page's own frontmatter)."""
    page = await client.call_tool("wiki_read", {"key": "refund-policy"})
    assert len(page.structured_content["refs"]) > 1 and result_count("wiki_read", page) == 1
    found = await client.call_tool("discover_data", {"query": "orders", "limit": 3})
    assert result_count("discover_data", found) == len(found.structured_content["refs"]) == 3
    matched = await client.call_tool("dictionary_search", {"values": ["Montréal"]})
    assert result_count("dictionary_search", matched) == sum(
        len(r["matches"]) for r in matched.structured_content["results"]
    )


async def test_unknown_tool_is_in_band_and_names_the_tools(client) -> None:
    text = tool_error(await client.call_tool("no_such_tool", {}))
    listed = [t.name for t in (await client.list_tools()).tools]
    assert (
        sorted(listed) == sorted(TOOL_NAMES)
        and text == f"Unknown tool: no_such_tool. Send one of: {', '.join(listed)}."
    )
    long = tool_error(await client.call_tool("x" * 10_000, {}))  # quoted short, as every value sent is
    assert long.startswith("Unknown tool: xxx") and len(long) < 400


async def test_a_ktx_tool_this_server_does_not_run_says_how_to_serve_it(client) -> None:
    text = tool_error(await client.call_tool("sl_query", {"measures": ["orders.count"]}))
    assert text.startswith("Unknown tool: sl_query. It is upstream KTX's tool") and "--upstream" in text


# ------------------------------------------------------------------ no input reaches a file outside the project


@pytest.fixture
def outside_files(demo_copy: Path) -> Iterator[Path]:
    """Files with a sentinel just outside the demo project (and one more level up)."""
    written = []
    for folder in (demo_copy.parent, demo_copy.parent.parent):
        for name in ("secret.md", "secret.yaml"):
            path = folder / name
            path.write_text(f"---\nsummary: {SENTINEL}\n---\nname: secret\n{SENTINEL}\n")
            written.append(path)
    yield demo_copy.parent
    for path in written:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize(
    "key",
    [
        "../../../secret",
        "../../../../secret",
        "global/../../../secret",
        "user/../../../../secret",
        "../../../secret.md",
        "..%2F..%2F..%2Fsecret",
        str(Path("/") / "secret"),
    ],
)
async def test_wiki_read_traversal_never_reads_outside(client, outside_files, key) -> None:
    text = tool_error(await client.call_tool("wiki_read", {"key": key}))
    assert SENTINEL not in text and "Wiki keys must be flat" in text


@pytest.mark.parametrize(
    ("connection", "name"),
    [
        ("warehouse", "../../../secret"),
        ("warehouse", "../../../secret.yaml"),
        ("warehouse", "../../../../secret"),
        ("warehouse", "_schema/../../../../secret"),
        ("../..", "secret"),
        ("warehouse/../..", "secret"),
    ],
)
async def test_sl_read_source_traversal_never_reads_outside(client, outside_files, connection, name) -> None:
    text = tool_error(await client.call_tool("sl_read_source", {"connectionId": connection, "sourceName": name}))
    assert SENTINEL not in text and ("not found" in text or text.startswith("Unsafe connection id"))


# ------------------------------------------------------------------ a small project for the edge cases


def _table(db: str) -> dict[str, Any]:
    return {
        "catalog": None, "db": db, "name": "orders", "kind": "table", "comment": f"{db} orders", "estimatedRows": 10,
        "columns": [column("id", "integer", "number"), column("status")], "foreignKeys": [],
    }  # fmt: skip


@pytest.fixture(scope="module")
def edge_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KtxIndex]:
    """Two schemas with an `orders` table, and a wiki page and a SL file that are symlinks to outside files."""
    base = tmp_path_factory.mktemp("edge")
    (base / "outside.md").write_text(f"---\nsummary: {SENTINEL}\n---\n{SENTINEL}\n")
    (base / "outside.yaml").write_text(f"name: leak\ntable: raw.orders\ndescriptions:\n  user: {SENTINEL}\n")
    root = base / "project"
    profile = {
        "connectionId": "warehouse",
        "columns": {"orders.status": profile_entry("raw", "orders", "status", ["paid", "refunded"])},
    }
    write_files(
        root,
        {
            "ktx.yaml": "connections:\n  warehouse:\n    driver: postgres\n",
            "wiki/global/ok.md": "---\nsummary: A fine page.\n---\nBody.\n",
            "semantic-layer/warehouse/fine.yaml": "name: fine\ntable: raw.orders\n",
            **scan_files("warehouse", "2026-01-01-000000-local-a", [_table("raw"), _table("analytics")], profile),
        },
    )
    os.symlink(base / "outside.md", root / "wiki/global/leak.md")
    os.symlink(base / "outside.yaml", root / "semantic-layer/warehouse/leak.yaml")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    yield service
    service.close()


@pytest.fixture
async def edge_client(edge_service: KtxIndex) -> AsyncIterator[Client]:
    async with Client(build_server(edge_service)) as c:
        yield c


@pytest.mark.parametrize(
    "table",
    ["orders", {"catalog": None, "db": None, "name": "orders"}, {"schema": None, "table": "orders"}],
    ids=["display", "tableRef-no-db", "schema-null"],
)
async def test_entity_details_ambiguous_table_lists_candidates(edge_client, tools, table) -> None:
    (item,) = (await call_ok(edge_client, tools, "entity_details", entity_args({"table": table})))["results"]
    assert (item["ok"], item["error"]["code"]) == (False, "ambiguous_table")
    assert [c["display"] for c in item["error"]["candidates"]] == ["analytics.orders", "raw.orders"]
    assert item["error"]["candidates"][0]["tableRef"] == {"catalog": None, "db": "analytics", "name": "orders"}
    assert item["error"]["message"] == (
        'Table name "orders" is ambiguous across schemas/catalogs; pass a structured table ref.'
    )


@pytest.mark.parametrize(
    ("table", "display"),
    [
        ({"schema": "analytics", "table": "orders"}, "analytics.orders"),
        ({"catalog": None, "db": "raw", "name": "orders"}, "raw.orders"),
        ("raw.orders", "raw.orders"),
    ],
)
async def test_entity_details_qualified_table_disambiguates(edge_client, tools, table, display) -> None:
    (item,) = (await call_ok(edge_client, tools, "entity_details", entity_args({"table": table})))["results"]
    assert item["ok"] and item["display"] == display and item["comment"] == f"{display.split('.')[0]} orders"


async def test_symlinked_wiki_page_outside_project_is_not_read(edge_client, tools) -> None:
    assert (await call_ok(edge_client, tools, "wiki_read", {"key": "ok"}))["summary"] == "A fine page."
    for key in ("leak", "global/leak"):
        text = tool_error(await edge_client.call_tool("wiki_read", {"key": key}))
        assert SENTINEL not in text and "symlink points outside the project" in text


async def test_symlinked_sl_source_outside_project_is_not_read(edge_client, tools) -> None:
    fine = await call_ok(edge_client, tools, "sl_read_source", {"connectionId": "warehouse", "sourceName": "fine"})
    assert fine["files"] == ["semantic-layer/warehouse/fine.yaml"]
    text = tool_error(
        await edge_client.call_tool("sl_read_source", {"connectionId": "warehouse", "sourceName": "leak"})
    )
    assert SENTINEL not in text and "symlink points outside the project" in text
    for name, args in (("discover_data", {"query": SENTINEL}), ("wiki_search", {"query": SENTINEL})):
        assert SENTINEL not in (await edge_client.call_tool(name, args)).content[0].text


# ------------------------------------------------------------------ handler errors when the index is unavailable


@pytest.fixture
def busy_service(make_project) -> Iterator[KtxIndex]:
    """A project with no index yet whose writer lock another process (here: another handle) holds."""
    root = make_project({"wiki/global/ok.md": "---\nsummary: fine\n---\nbody\n"})
    lock = WriterLock(IndexLayout(root))
    lock.acquire()
    service = KtxIndex(root, embedder=HashEmbedder())
    try:
        yield service
    finally:
        service.close()
        lock.release()


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("discover_data", {"query": "orders"}, "is being written by PID"),
        ("wiki_search", {"query": "orders"}, "is being written by PID"),
        ("dictionary_search", {"values": ["x"]}, "is being written by PID"),
        ("entity_details", {"connectionId": "warehouse", "entities": [{"table": "orders"}]}, "run `ktx-index rebuild`"),
        ("sl_read_source", {"connectionId": "warehouse", "sourceName": "orders"}, "run `ktx-index rebuild`"),
        ("wiki_read", {"key": "missing-page"}, "was not found. There is no index yet to list the known keys"),
    ],
)
async def test_index_unavailable_is_an_in_band_error(busy_service, name, args, expected) -> None:
    async with Client(build_server(busy_service)) as c:
        text = tool_error(await c.call_tool(name, args))
    assert expected in text and not text.startswith("Error executing tool")  # the library's message alone


async def test_reads_that_need_no_index_still_work_while_busy(busy_service) -> None:
    async with Client(build_server(busy_service)) as c:
        tools = {t.name: t for t in (await c.list_tools()).tools}
        page = await call_ok(c, tools, "wiki_read", {"key": "ok"})
        listed = await call_ok(c, tools, "connection_list", {})
    assert page["summary"] == "fine" and [x["id"] for x in listed["connections"]] == ["warehouse"]


async def test_connection_list_handler_error_is_in_band(busy_service, monkeypatch) -> None:
    def boom() -> None:
        raise NotFound("connections unreadable", "fix ktx.yaml")

    monkeypatch.setattr(busy_service, "connection_list", boom)
    async with Client(build_server(busy_service)) as c:
        text = tool_error(await c.call_tool("connection_list", {}))
    assert text == "connections unreadable; fix ktx.yaml"


async def test_unexpected_exception_does_not_leak_details(busy_service, monkeypatch) -> None:
    def crash() -> None:
        raise RuntimeError("internal /secret/path detail")

    monkeypatch.setattr(busy_service, "connection_list", crash)
    async with Client(build_server(busy_service)) as c:
        text = tool_error(await c.call_tool("connection_list", {}))
    assert "connection_list" in text and "/secret/path" not in text


# ------------------------------------------------------------------ progress while a first call builds the index


async def test_first_call_reports_index_build_progress(make_project) -> None:
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [_table("raw")])
    root = make_project({"wiki/global/orders.md": "---\nsummary: Orders.\n---\nAbout orders.\n", **files})
    service = KtxIndex(root, embedder=HashEmbedder())
    events: list[tuple[float, float | None, str | None]] = []
    times: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))
        times.append(time.monotonic())

    try:
        async with Client(build_server(service)) as c:
            first = await c.call_tool("discover_data", {"query": "orders"}, progress_callback=on_progress)
            assert not first.is_error and first.structured_content["refs"]
            stages = [m.split()[0] for _, _, m in events]
            assert "parse" in stages and "embed" in stages
            # The value MUST increase (MCP), across stages whose own counts start again: one step per notification.
            assert [p for p, _, _ in events] == list(range(1, len(events) + 1))
            # Where a stage starts and ends, and between those only a heartbeat (HEARTBEAT_S after the last one).
            for i, stage in enumerate(stages):
                inside = 0 < i < len(stages) - 1 and stages[i - 1] == stage == stages[i + 1]
                assert not inside or times[i] - times[i - 1] >= 0.9 * HEARTBEAT_S, (i, events)
            events.clear()
            await c.call_tool("discover_data", {"query": "orders"}, progress_callback=on_progress)
            assert events == []  # nothing long-running left
    finally:
        service.close()


class SlowEmbedder(HashEmbedder):
    """Takes half a second a call: a first build long enough for a second call to arrive during it."""

    def encode(self, texts):
        time.sleep(0.5)
        return super().encode(texts)


async def test_a_call_during_another_calls_first_build_hears_its_progress(make_project) -> None:
    files = {f"wiki/global/page-{i}.md": f"---\nsummary: Page {i}.\n---\nAbout orders {i}.\n" for i in range(5)}
    service = KtxIndex(make_project(files), embedder=SlowEmbedder())
    first: list[str | None] = []
    second: list[tuple[float, str | None]] = []

    async def on_first(progress: float, total: float | None, message: str | None) -> None:
        first.append(message)

    async def on_second(progress: float, total: float | None, message: str | None) -> None:
        second.append((progress, message))

    try:
        async with Client(build_server(service)) as c:
            async with anyio.create_task_group() as group:
                ask = functools.partial(c.call_tool, progress_callback=on_first)
                group.start_soon(ask, "discover_data", {"query": "orders"})
                with anyio.fail_after(30):
                    while not first:  # the build has started; its embedding takes half a second
                        await anyio.sleep(0.01)
                answer = await c.call_tool("wiki_search", {"query": "orders"}, progress_callback=on_second)
            assert not answer.is_error and answer.structured_content["results"]
            assert [p for p, _ in second] == list(range(1, len(second) + 1))  # its own count, one step up each
            assert second and second[-1][1] == first[-1]  # heard the build to its end
    finally:
        service.close()


async def test_a_call_waits_for_the_warm_up_and_listing_does_not(
    demo_service: KtxIndex, caplog: pytest.LogCaptureFixture
) -> None:
    """serve sets ``ready`` when its warm-up ends: a tool call arriving earlier waits for it (instead of sharing
    the GIL with it), and its log line counts the wait (it said ~1 ms of a first call's 0.9 s: an outside pass);
    initialize and tools/list are answered meanwhile."""
    server = build_server(demo_service)
    server.ready = threading.Event()
    caplog.set_level(logging.INFO, logger="ktx_index.mcp")
    async with Client(server) as c:
        assert (await c.list_tools()).tools  # not held up
        answered = anyio.Event()

        async def ask() -> None:
            await c.call_tool("connection_list", {})
            answered.set()

        async with anyio.create_task_group() as group:
            group.start_soon(ask)
            await anyio.sleep(0.3)
            assert not answered.is_set()
            server.ready.set()
            with anyio.fail_after(5):
                await answered.wait()
    (line,) = [r.ktx_fields for r in caplog.records if r.getMessage() == "tool.call"]
    assert line["tool"] == "connection_list" and line["ms"] >= 250  # it waited ~300 ms; the hand-off takes some


# ------------------------------------------------------------------ where a search runs


class ThreadNoting(KtxIndex):
    """Notes the thread each search ran on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.threads: list[threading.Thread] = []

    def discover_data(self, *args: Any, **kwargs: Any):
        self.threads.append(threading.current_thread())
        return super().discover_data(*args, **kwargs)

    def wiki_search(self, *args: Any, **kwargs: Any):
        self.threads.append(threading.current_thread())
        return super().wiki_search(*args, **kwargs)


async def test_a_warm_search_is_answered_on_the_event_loop_anything_else_on_a_worker(make_project) -> None:
    """A call that builds, loads a commit or derives a snapshot's data runs on a worker thread, so the server's
    other requests go on meanwhile; a warm one runs on the loop (the thread hop is 0.1-0.4 ms of a call)."""
    root = make_project({"wiki/global/orders.md": "---\nsummary: Orders.\n---\nAbout orders.\n"})
    service = ThreadNoting(root, embedder=HashEmbedder())
    loop_thread = threading.current_thread()
    try:
        async with Client(build_server(service)) as c:
            for tool in ("discover_data", "wiki_search", "discover_data", "wiki_search"):
                assert not (await c.call_tool(tool, {"query": "orders"})).is_error
            assert [t is loop_thread for t in service.threads] == [False, False, True, True]
            (root / "wiki/global/refunds.md").write_text("---\nsummary: Refunds.\n---\nAbout refunds.\n")
            writer = KtxIndex(root, embedder=HashEmbedder())
            writer.rebuild()
            writer.close()
            service.threads.clear()
            for tool in ("wiki_search", "wiki_search"):
                result = await c.call_tool(tool, {"query": "refunds"})
                assert result.structured_content["totalFound"] == 1
            assert [t is loop_thread for t in service.threads] == [False, True]
    finally:
        service.close()
