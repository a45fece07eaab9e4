"""mcp/arguments.py alone: the words for what a schema accepts, and the unknown keys a call carried."""

from __future__ import annotations

from typing import Any

from ktx_index.mcp import read_tools
from ktx_index.mcp.arguments import describe, key_tree, unknown_keys


def entity_schema() -> dict[str, Any]:
    (tool,) = [t for t in read_tools.tools(None) if t.name == "entity_details"]  # type: ignore[arg-type]
    return tool.parameters


def test_describe_says_what_a_node_accepts() -> None:
    root: dict[str, Any] = {}
    assert describe({"type": "integer", "minimum": 1, "maximum": 50}, root) == "an integer 1–50"
    assert describe({"type": "integer", "minimum": 0}, root) == "an integer ≥ 0"
    assert describe({"type": "string", "minLength": 1}, root) == "a non-empty string"
    assert describe({"type": "string", "enum": ["a", "b"]}, root) == 'one of "a", "b"'
    assert describe({"anyOf": [{"type": "string"}, {"type": "null"}]}, root) == "a string, or null"
    assert (
        describe({"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 20}, root)
        == "a list of 1–20 items, each a string"
    )
    node = {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["b"]}
    assert describe(node, root) == "an object with keys b (required), a"


def test_unknown_keys_are_found_at_every_depth() -> None:
    tree = key_tree(entity_schema())
    args = {
        "connectionId": "w",
        "userId": "u",
        "entities": [
            {"table": {"catalog": None, "db": "raw", "name": "orders", "alias": "o"}, "limit": 3},
            {"table": {"schema": "raw", "table": "orders", "x": 1}},
            {"table": "raw.orders", "columns": ["id"]},
        ],
    }
    assert unknown_keys(tree, args) == ["userId", "entities.0.limit", "entities.0.table.alias", "entities.1.table.x"]
    assert unknown_keys(tree, {"connectionId": "w", "entities": "not a list"}) == []
    # a key of another shape of the same object is dropped too: {db, name} takes no schema, {schema, table} no catalog
    shapes = {
        "connectionId": "w",
        "entities": [
            {"table": {"db": "raw", "name": "o", "schema": "x"}},
            {"table": {"schema": "raw", "table": "o", "catalog": None}},
        ],
    }
    assert unknown_keys(tree, shapes) == ["entities.0.table.schema", "entities.1.table.catalog"]


def test_keys_a_tools_own_validator_reads_are_not_called_ignored() -> None:
    """entity_details reads ``{schema, table}``, a ref's ``tableRef`` and ``{catalog, db, name}`` at the entity's own
    level (read_tools.entity_shape): the call log named ``schema`` ignored while it was used. A ref's other keys,
    and those beside a table object that no shape reads, are still dropped and named."""
    args = {
        "connectionId": "w",
        "entities": [
            {"schema": "fin", "table": "job_ln"},
            {"id": "raw.orders", "kind": "table", "tableRef": {"catalog": None, "db": "raw", "name": "orders"}},
            {"catalog": None, "db": "raw", "name": "orders", "limit": 3},
            {"table": {"catalog": None, "db": "raw", "name": "orders"}, "schema": "x", "tableRef": {}},
        ],
    }
    unknown = unknown_keys(key_tree(entity_schema()), args)
    read = read_tools.read_beyond_schema("entity_details", args)
    assert [key for key in unknown if key not in read] == [
        "entities.1.id",
        "entities.1.kind",
        "entities.2.limit",
        "entities.3.schema",
        "entities.3.tableRef",
    ]
    assert "entities.0.schema" in unknown  # what the schema alone says
    assert read_tools.read_beyond_schema("discover_data", {"entities": [{"schema": "x"}]}) == set()
