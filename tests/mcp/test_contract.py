"""The contract with upstream KTX (0.16), held through a real MCP client: a skill written against upstream's tools
works unchanged against ktx-index.

Upstream's output shapes are written down below as data (JSON Schema, from the interface note
reference/ktx-upstream-contract.md §3-§7: required fields, names, types, nullability, enums). Two checks per tool:

* the advertised outputSchema against upstream's: every field upstream requires is required here under the same
  name and type, nullable exactly where upstream's is; every enum here is within upstream's; nothing else is
  required; each field upstream does not have is described as a ktx-index extra ("ktx-index: …");
* real answers (hits, misses, every failure item) validate against upstream's schema, with the extra fields allowed
  (upstream's objects are closed; ktx-index keeps its extras, optional and documented).

Then the not-found texts (upstream's templates), and bad arguments: each kind answered in-band (``isError``, never a
JSON-RPC error), naming the field and what to send; unknown keys are dropped as upstream does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import jsonschema
import mcp.types as types
import pytest
from mcp import Client
from mcp.types import CallToolResult
from projects import column, scan_files, write_files
from pydantic import TypeAdapter

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.mcp import build_server
from ktx_index.mcp.server import TOOL_NAMES
from ktx_index.service import KtxIndex

pytestmark = pytest.mark.anyio

# ------------------------------------------------------------------ upstream's shapes, as data

S, N, B = {"type": "string"}, {"type": "number"}, {"type": "boolean"}


def null(node: dict[str, Any]) -> dict[str, Any]:
    return {"type": [node["type"], "null"]}


def enum(*values: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def arr(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": {**required, **(optional or {})}, "required": list(required)}


def one_of(*options: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": list(options)}


TABLE_REF = obj({"catalog": null(S), "db": null(S), "name": S})
SNAPSHOT = obj({"syncId": S, "extractedAt": S, "scanRunId": null(S)})
KINDS = ("wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column")
MATCHED_ON = ("name", "display", "description", "comment", "expr", "sample_value", "body")
STATUS = ("ready", "no_profile_artifact", "no_candidate_columns")
MISS = ("no_profile_artifact", "no_candidate_columns", "value_not_in_sample")
CODES = ("scan_missing", "table_not_found", "ambiguous_table", "column_not_found")

UPSTREAM: dict[str, dict[str, Any]] = {
    "discover_data": obj(
        {
            "refs": arr(
                obj(
                    {"kind": enum(*KINDS), "id": S, "score": N, "summary": null(S), "snippet": null(S),
                     "matchedOn": enum(*MATCHED_ON)},
                    {"connectionId": S, "tableRef": TABLE_REF, "columnName": S},
                )
            )
        }
    ),
    "wiki_search": obj(
        {
            "results": arr(
                obj(
                    {"key": S, "path": S, "scope": enum("GLOBAL", "USER"), "summary": S, "score": N},
                    {
                        "matchReasons": arr(S),
                        "lanes": arr(
                            obj(
                                {"lane": S, "status": S, "requestedCandidatePoolLimit": N,
                                 "effectiveCandidatePoolLimit": N, "returnedCandidateCount": N, "weight": N},
                                {"reason": S},
                            )
                        ),
                    },
                )
            ),
            "totalFound": N,
        }
    ),
    "dictionary_search": obj(
        {
            "searched": arr(
                obj(
                    {
                        "connectionId": S,
                        "coverage": obj(
                            {"sampledRows": null(N), "valuesPerColumn": null(N), "profiledColumns": N,
                             "syncId": null(S), "profiledAt": null(S)}
                        ),
                        "status": enum(*STATUS),
                    }
                )
            ),
            "results": arr(
                obj(
                    {
                        "value": S,
                        "matches": arr(
                            obj({"connectionId": S, "sourceName": S, "columnName": S, "matchedValue": S,
                                 "cardinality": null(N)})
                        ),
                        "misses": arr(obj({"connectionId": S, "reason": enum(*MISS)})),
                    }
                )
            ),
        }
    ),
    "wiki_read": obj(
        {"key": S, "summary": S, "content": S, "scope": enum("GLOBAL", "USER")},
        {"tags": arr(S), "refs": arr(S), "slRefs": arr(S)},
    ),
    "sl_read_source": obj({"sourceName": S, "yaml": S}),
    "entity_details": obj(
        {
            "results": arr(
                one_of(
                    obj(
                        {
                            "ok": {"type": "boolean", "const": True},
                            "connectionId": S,
                            "tableRef": TABLE_REF,
                            "display": S,
                            "kind": enum("table", "view", "external", "event_stream"),
                            "comment": null(S),
                            "estimatedRows": null(N),
                            "columns": arr(
                                obj({"name": S, "nativeType": S, "normalizedType": S,
                                     "dimensionType": enum("time", "string", "number", "boolean"),
                                     "nullable": B, "primaryKey": B, "comment": null(S)})
                            ),
                            "foreignKeys": arr(
                                obj({"fromColumn": S, "toCatalog": null(S), "toDb": null(S), "toTable": S,
                                     "toColumn": S, "constraintName": null(S)})
                            ),
                            "snapshot": SNAPSHOT,
                        }
                    ),
                    obj(
                        {
                            "ok": {"type": "boolean", "const": False},
                            "connectionId": S,
                            "table": one_of(S, TABLE_REF),
                            "error": obj(
                                {"code": enum(*CODES), "message": S},
                                {"candidates": one_of(arr(obj({"tableRef": TABLE_REF, "display": S})), arr(S))},
                            ),
                        },
                        {"snapshot": SNAPSHOT},
                    ),
                )
            )
        }
    ),
    "connection_list": obj(
        {
            "connections": arr(
                obj(
                    {"id": S, "name": S, "connectionType": S},
                    {"members": arr(S), "hint": S, "queryPolicy": {"type": "string", "const": "semantic-layer-only"}},
                )
            )
        }
    ),
}  # fmt: skip

# ------------------------------------------------------------------ comparing a schema with upstream's


def types_of(node: dict[str, Any]) -> set[str]:
    if "anyOf" in node:
        return {t for option in node["anyOf"] for t in types_of(option)}
    kind = node.get("type")
    if kind is None and "const" in node:
        kind = {bool: "boolean", str: "string"}.get(type(node["const"]), "number")
    return set(kind) if isinstance(kind, list) else {kind} if kind else set()


def fits(ours: set[str], theirs: set[str]) -> bool:
    """Every type ours allows is one upstream allows (an integer is a number)."""
    return ours <= theirs | ({"integer"} if "number" in theirs else set())


def differences(ours: dict[str, Any], theirs: dict[str, Any], at: str) -> Iterator[str]:
    """Where our outputSchema node strays from upstream's."""
    ours_t, theirs_t = types_of(ours), types_of(theirs)
    if not fits(ours_t, theirs_t) or ("null" in ours_t) != ("null" in theirs_t):
        yield f"{at}: type {sorted(ours_t)}, upstream {sorted(theirs_t)}"
    if "const" in theirs and ours.get("const") != theirs["const"]:
        yield f"{at}: const {ours.get('const')!r}, upstream {theirs['const']!r}"
    if "enum" in theirs:
        values = set(ours.get("enum") or ([ours["const"]] if "const" in ours else []))
        if not values or not values <= set(theirs["enum"]):
            yield f"{at}: enum {sorted(values)} not within upstream's {theirs['enum']}"
    if "anyOf" in theirs:
        options = ours.get("anyOf") or []
        if len(options) != len(theirs["anyOf"]):
            yield f"{at}: {len(options)} alternatives, upstream {len(theirs['anyOf'])}"
        for i, (mine, up) in enumerate(zip(options, theirs["anyOf"], strict=False)):
            yield from differences(mine, up, f"{at}|{i}")
    if "items" in theirs:
        yield from differences(ours.get("items") or {}, theirs["items"], f"{at}[]")
    if "properties" in theirs:
        props, required = ours.get("properties") or {}, set(ours.get("required") or [])
        for name in sorted(set(theirs["required"]) - required):
            yield f"{at}.{name}: required upstream, optional or absent here"
        for name in sorted(required - set(theirs["required"])):
            yield f"{at}.{name}: required here, not upstream (an extra must be optional)"
        for name, up in theirs["properties"].items():
            if name in props:
                yield from differences(props[name], up, f"{at}.{name}")
        for name in sorted(set(props) - set(theirs["properties"])):
            if not str(props[name].get("description", "")).startswith("ktx-index:"):
                yield f"{at}.{name}: extra field not described as 'ktx-index: …'"


def test_upstream_shapes_cover_every_tool() -> None:
    assert set(UPSTREAM) == set(TOOL_NAMES)


def test_the_comparison_catches_a_drift() -> None:
    """The checker itself: a dropped requirement, a lost null, a foreign enum value and an undocumented extra."""
    theirs = obj({"a": null(S), "b": enum("x", "y")})
    ours = {
        "type": "object",
        "properties": {"a": S, "b": enum("x", "z"), "c": {"type": "string", "description": "mine"}},
        "required": ["b"],
    }
    found = list(differences(ours, theirs, "t"))
    assert any("t.a: required upstream" in f for f in found)
    assert any("t.a: type" in f for f in found)
    assert any("t.b: enum" in f for f in found)
    assert any("t.c: extra field" in f for f in found)
    assert not list(differences(theirs, theirs, "t"))


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client(demo_service: KtxIndex) -> AsyncIterator[Client]:
    async with Client(build_server(demo_service)) as c:
        yield c


@pytest.mark.parametrize("name", sorted(UPSTREAM))
async def test_output_schema_matches_upstream(client, name) -> None:
    tool = next(t for t in (await client.list_tools()).tools if t.name == name)
    assert tool.output_schema is not None
    assert list(differences(tool.output_schema, UPSTREAM[name], name)) == []


async def test_tools_list_carries_upstreams_extras(demo_service: KtxIndex) -> None:
    """tools/list on the wire, as upstream lists it (§1): a title, annotations with the title, and
    ``execution: {taskSupport: "forbidden"}`` on every tool, for a 2025-11-25 client (agents' SDKs today). A
    2026-07-28 client is not sent ``execution``: that revision removed it (the SDK drops it)."""
    raw = TypeAdapter(dict[str, Any])
    async with Client(build_server(demo_service), mode="legacy") as legacy:
        listed = (await legacy.session.send_request(types.ListToolsRequest(), raw))["tools"]
    assert sorted(tool["name"] for tool in listed) == sorted(TOOL_NAMES)
    for tool in listed:
        assert tool["execution"] == {"taskSupport": "forbidden"}, tool["name"]
        assert tool["title"] and tool["annotations"]["title"] == tool["title"], tool["name"]
    async with Client(build_server(demo_service), mode="2026-07-28") as modern:
        listed = (await modern.session.send_request(types.ListToolsRequest(), raw))["tools"]
    assert sorted(tool["name"] for tool in listed) == sorted(TOOL_NAMES)
    assert all("execution" not in tool for tool in listed)


# ------------------------------------------------------------------ real answers against upstream's shapes


def upstream_check(name: str, result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict)
    jsonschema.Draft7Validator(UPSTREAM[name]).validate(data)
    return data


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("connection_list", {}),
    ("discover_data", {"query": "customer orders by plan tier"}),
    ("discover_data", {"query": "refund reasons", "connectionId": "warehouse", "kinds": ["table", "column"]}),
    ("discover_data", {"query": "active subscribers", "kinds": ["wiki", "sl_source", "sl_measure", "sl_dimension"]}),
    ("discover_data", {"query": "zebra migration telemetry quasar"}),
    ("wiki_search", {"query": "refund policy"}),
    ("wiki_search", {"query": "active subscriber definition", "connectionId": "warehouse", "limit": 3}),
    ("dictionary_search", {"values": ["family_4", "Montréal", "zzzz-not-a-value"]}),
    ("dictionary_search", {"values": ["x"], "connectionId": "dbt"}),
    ("wiki_read", {"key": "refund-policy"}),
    ("wiki_read", {"key": "user/active-subscriber-definition"}),
    ("sl_read_source", {"connectionId": "warehouse", "sourceName": "orders"}),
    ("sl_read_source", {"connectionId": "warehouse", "sourceName": "subscriptions"}),
    (
        "entity_details",
        {
            "connectionId": "warehouse",
            "entities": [
                {"table": {"catalog": None, "db": "raw", "name": "orders"}},
                {"table": "raw.orders", "columns": ["order_id", "CURRENCY"]},
                {"table": "raw.ordrs"},
                {"table": {"schema": "raw", "table": "nope"}},
                {"table": "raw.orders", "columns": ["nope"]},
            ],
        },
    ),
    ("entity_details", {"connectionId": "dbt", "entities": [{"table": "fct_orders"}]}),
    ("entity_details", {"connectionId": "nope", "entities": [{"table": "orders"}]}),
]


async def test_every_call_answers_in_upstreams_shape(client) -> None:
    for name, args in CALLS:
        upstream_check(name, await client.call_tool(name, args))
    assert {name for name, _ in CALLS} == set(TOOL_NAMES)


async def test_entity_details_items_in_order_with_every_code(client) -> None:
    (_, args) = next(c for c in CALLS if c[0] == "entity_details")
    items = upstream_check("entity_details", await client.call_tool("entity_details", args))["results"]
    assert [i["ok"] for i in items] == [True, True, False, False, False]
    assert [c["name"] for c in items[1]["columns"]] == ["order_id", "currency"]  # asked for, in the table's order
    assert [i["error"]["code"] for i in items[2:]] == ["table_not_found", "table_not_found", "column_not_found"]
    assert items[3]["table"] == {"catalog": None, "db": "raw", "name": "nope"}
    assert items[0]["comment"] is not None and "estimatedRows" in items[0]
    nulls = [c for c in items[0]["columns"] if c["comment"] is None]
    assert nulls and all("comment" in c for c in items[0]["columns"])  # null is sent, not dropped


async def test_dictionary_search_sends_both_arrays_and_every_status(client) -> None:
    data = upstream_check(
        "dictionary_search", await client.call_tool("dictionary_search", {"values": ["family_4", "zzzz-nothing"]})
    )
    assert [s["status"] for s in data["searched"]] == ["ready", "ready"]
    assert all("matches" in r and "misses" in r for r in data["results"])
    assert data["results"][1]["matches"] == [] and data["results"][0]["misses"] == []


async def test_dictionary_search_on_a_connection_without_profile(federated) -> None:
    async with Client(build_server(federated)) as c:
        result = await c.call_tool("dictionary_search", {"values": ["click"], "connectionId": "lite"})
    data = upstream_check("dictionary_search", result)
    (searched,) = data["searched"]
    assert searched["status"] == "no_profile_artifact" and searched["coverage"]["syncId"] is None
    assert data["results"][0]["misses"] == [{"connectionId": "lite", "reason": "no_profile_artifact"}]


@pytest.fixture(scope="module")
def federated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KtxIndex]:
    """Five drivers, three of them attachable (one semantic-layer-only), and a table name in two schemas."""
    root = tmp_path_factory.mktemp("federated") / "project"
    config = (
        "connections:\n"
        "  pg: {driver: postgres}\n  lite: {driver: SQLite}\n  snow: {driver: snowflake}\n"
        "  shop: {driver: mysql, query_policy: semantic-layer-only}\n  models: {driver: dbt}\n"
        "  red: {driver: redshift}\n"
    )
    tables = [
        {"catalog": None, "db": db, "name": "events", "kind": "table", "comment": None, "estimatedRows": None,
         "columns": [column("id", "integer", "number"), column("kind")], "foreignKeys": []}
        for db in ("raw", "analytics")
    ]  # fmt: skip
    write_files(root, {"ktx.yaml": config, **scan_files("pg", "2026-01-01-000000-local-a", tables)})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    yield service
    service.close()


async def test_connection_list_as_upstream(federated) -> None:
    async with Client(build_server(federated)) as c:
        data = upstream_check("connection_list", await c.call_tool("connection_list", {}))
    by_id = {e["id"]: e for e in data["connections"]}
    assert [e["id"] for e in data["connections"]] == ["lite", "models", "pg", "red", "shop", "snow", "_ktx_federated"]
    assert all(e["name"] == e["id"] for e in data["connections"])
    assert {i: e["connectionType"] for i, e in by_id.items()} == {
        "lite": "SQLITE", "models": "dbt", "pg": "POSTGRESQL", "red": "redshift", "shop": "MYSQL", "snow": "SNOWFLAKE",
        "_ktx_federated": "DUCKDB",
    }  # fmt: skip
    assert by_id["shop"]["queryPolicy"] == "semantic-layer-only" and "sl_query" in by_id["shop"]["hint"]
    assert "queryPolicy" not in by_id["pg"] and "hint" not in by_id["pg"]
    fed = by_id["_ktx_federated"]
    assert fed["members"] == ["lite", "pg", "shop"] and fed["queryPolicy"] == "semantic-layer-only"
    assert fed["hint"].startswith("Federated SQL is disabled: shop has query_policy: semantic-layer-only")


async def test_federated_entry_without_a_restricted_member(make_project) -> None:
    root = make_project({}, config="connections:\n  a: {driver: postgres}\n  b: {driver: duckdb}\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    try:
        async with Client(build_server(service)) as c:
            data = upstream_check("connection_list", await c.call_tool("connection_list", {}))
    finally:
        service.close()
    fed = data["connections"][-1]
    assert (fed["id"], fed["members"], "queryPolicy" in fed) == ("_ktx_federated", ["a", "b"], False)
    assert "connectionId.schema.table" in fed["hint"]


async def test_ambiguous_table_as_upstream(federated) -> None:
    args = {"connectionId": "pg", "entities": [{"table": "events"}, {"table": "analytics.events"}]}
    async with Client(build_server(federated)) as c:
        ambiguous, found = upstream_check("entity_details", await c.call_tool("entity_details", args))["results"]
    assert ambiguous["error"]["code"] == "ambiguous_table"
    assert [x["display"] for x in ambiguous["error"]["candidates"]] == ["analytics.events", "raw.events"]
    assert ambiguous["snapshot"]["syncId"] == "2026-01-01-000000-local-a"
    assert found["ok"] and found["comment"] is None and found["estimatedRows"] is None  # nulls sent, not dropped


# ------------------------------------------------------------------ not found: upstream's templates


@pytest.mark.parametrize(
    ("name", "args", "template"),
    [
        ("wiki_read", {"key": "no-such-page"}, 'Wiki page "no-such-page" was not found.'),
        ("sl_read_source", {"connectionId": "warehouse", "sourceName": "nope"}, 'Semantic-layer source "nope" was not found.'),
        ("sl_read_source", {"connectionId": "nope", "sourceName": "orders"}, 'Semantic-layer source "orders" was not found.'),
        ("sl_read_source", {"connectionId": "../../etc", "sourceName": "passwd"}, "Unsafe connection id: ../../etc"),
        ("sl_read_source", {"connectionId": "_ktx_federated", "sourceName": "x"}, "Unsafe connection id: _ktx_federated"),
        (
            "wiki_search",
            {"query": "refunds", "connectionId": "nope"},
            'Unknown connection "nope". Configured connections: dbt, warehouse.',
        ),
    ],
)  # fmt: skip
async def test_not_found_texts_start_with_upstreams_template(client, name, args, template) -> None:
    result = await client.call_tool(name, args)
    assert result.is_error and not result.structured_content
    assert result.content[0].text.startswith(template), result.content[0].text


# ------------------------------------------------------------------ bad arguments: in-band, naming the field

BAD_ARGUMENTS = [
    ("wrong type", "discover_data", {"query": "orders", "limit": "ten"}, 'limit: expected an integer 1–50, got "ten"'),
    ("not a string", "discover_data", {"query": 5}, "query: expected a non-empty string, got 5"),
    ("missing field", "wiki_search", {"limit": 3}, "query: required, expected a non-empty string"),
    ("out of range", "wiki_search", {"query": "refunds", "limit": 99}, "limit: expected an integer 1–50, got 99"),
    ("not an integer", "discover_data", {"query": "orders", "limit": 2.5}, "limit: expected an integer 1–50, got 2.5"),
    ("empty query", "wiki_search", {"query": ""}, 'query: expected a non-empty string, got ""'),
    ("bad enum value", "discover_data", {"query": "x", "kinds": ["tables"]}, 'kinds.0: expected one of "wiki"'),
    ("bad bare kind", "discover_data", {"query": "x", "kinds": "tables"}, '"table", "column", got "tables"'),
    ("a boolean limit", "discover_data", {"query": "x", "limit": True}, "limit: expected an integer 1–50, got true"),
    ("a numeric string", "wiki_search", {"query": "x", "limit": "3"}, 'limit: expected an integer 1–50, got "3"'),
    ("wrong list item type", "dictionary_search", {"values": ["ok", 7]}, "values.1: expected a non-empty string, got 7"),
    ("empty list", "dictionary_search", {"values": []}, "values: expected a list of 1–20 items, each a non-empty string"),
    (
        "too many items",
        "entity_details",
        {"connectionId": "warehouse", "entities": [{"table": "orders"}] * 21},
        "entities: expected a list of 1–20 items",
    ),
    (
        "no union branch fits",
        "entity_details",
        {"connectionId": "warehouse", "entities": [{"table": {"db": "raw"}}]},
        "entities.0.table: expected a non-empty string, or an object with keys name (required), catalog, db",
    ),
    ("null for a required field", "wiki_read", {"key": None}, "key: expected a non-empty string, got null"),
]  # fmt: skip


def test_ten_kinds_of_bad_argument() -> None:
    assert len({kind for kind, *_ in BAD_ARGUMENTS}) >= 10


@pytest.mark.parametrize(("kind", "name", "args", "problem"), BAD_ARGUMENTS, ids=[b[0] for b in BAD_ARGUMENTS])
async def test_bad_argument_is_answered_in_band_naming_the_field(client, kind, name, args, problem) -> None:
    result = await client.call_tool(name, args)  # a JSON-RPC error would raise here
    assert result.is_error and not result.structured_content
    text = result.content[0].text
    assert text.startswith(f"Invalid arguments for tool {name}: ") and problem in text, text


@pytest.mark.parametrize("name", ["discover_data", "wiki_search"])
async def test_a_whole_number_sent_as_a_float_is_a_limit(client, name) -> None:
    """JSON Schema's ``integer`` admits 5.0, and so does upstream's zod ``int()`` (JavaScript has one number)."""
    result = await client.call_tool(name, {"query": "orders", "limit": 2.0})
    assert not result.is_error, result.content[0].text
    assert len(result.structured_content["refs" if name == "discover_data" else "results"]) <= 2


def null_defaults_refused_by_their_type(node: Any, at: str = "") -> Iterator[str]:
    if isinstance(node, list):
        for i, item in enumerate(node):
            yield from null_defaults_refused_by_their_type(item, f"{at}[{i}]")
    elif isinstance(node, dict):
        kinds = types_of(node)
        if "default" in node and node["default"] is None and kinds and "null" not in kinds:
            yield at
        for key, value in node.items():
            yield from null_defaults_refused_by_their_type(value, f"{at}/{key}")


async def test_no_schema_advertises_a_default_its_type_refuses(client) -> None:
    """An optional argument is advertised by its type alone, as upstream does: ``"default": null`` on a string
    would have a client that fills in defaults send what its own validator refuses."""
    for tool in (await client.list_tools()).tools:
        for schema in (tool.input_schema, tool.output_schema):
            assert not list(null_defaults_refused_by_their_type(schema)), tool.name


async def test_unknown_keys_are_dropped_as_upstream_does(client) -> None:
    plain = await client.call_tool("wiki_search", {"query": "refund policy"})
    extra = await client.call_tool("wiki_search", {"query": "refund policy", "Query": "x", "userId": "u"})
    assert not extra.is_error and extra.structured_content == plain.structured_content


async def test_lenient_inputs_beyond_upstream_are_accepted(client) -> None:
    """A single string for a list, and {schema, table}: upstream rejects both; ktx-index reads them (documented)."""
    kinds = upstream_check(
        "discover_data", await client.call_tool("discover_data", {"query": "orders", "kinds": "table"})
    )
    assert {r["kind"] for r in kinds["refs"]} == {"table"}
    args = {
        "connectionId": "warehouse",
        "entities": [{"table": {"schema": "raw", "table": "orders"}, "columns": "order_id"}],
    }
    (item,) = upstream_check("entity_details", await client.call_tool("entity_details", args))["results"]
    assert item["ok"] and [c["name"] for c in item["columns"]] == ["order_id"]
    tools = {t.name: t for t in (await client.list_tools()).tools}
    described = str(tools["entity_details"].input_schema) + str(tools["discover_data"].input_schema)
    assert "{schema, table}" in described and "a single kind string is read as a list of one" in described
