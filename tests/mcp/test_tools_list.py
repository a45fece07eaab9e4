"""``tools/list``: the exact tool surface (names, titles, annotations) and a JSON snapshot of every schema.

Regenerate the snapshot after an intended change with::

    UPDATE_SNAPSHOTS=1 pytest tests/mcp/test_tools_list.py
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp.types import Tool

from ktx_index.mcp import build_server
from ktx_index.mcp.server import TOOL_NAMES, flat_schema
from ktx_index.service import KtxIndex

pytestmark = pytest.mark.anyio

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools_list.json"

EXPECTED = {
    "connection_list": ("Connection List", True),
    "discover_data": ("Discover Data", False),
    "wiki_search": ("Wiki Search", False),
    "wiki_read": ("Wiki Read", True),
    "entity_details": ("Entity Details", True),
    "dictionary_search": ("Dictionary Search", False),
    "sl_read_source": ("Semantic Layer Read Source", True),
}  # name: (title, idempotentHint)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def listed(demo_service: KtxIndex) -> list[Tool]:
    async with Client(build_server(demo_service)) as client:
        return (await client.list_tools()).tools


def wire(tool: Tool) -> dict[str, Any]:
    """The tool as it goes over the wire (camelCase, unset fields omitted)."""
    return tool.model_dump(mode="json", by_alias=True, exclude_none=True)


async def test_exactly_the_seven_tools(listed) -> None:
    names = [t.name for t in listed]
    assert sorted(names) == sorted(EXPECTED) == sorted(TOOL_NAMES)
    assert len(names) == len(set(names)) == 7


async def test_titles_and_annotations(listed) -> None:
    for tool in listed:
        title, idempotent = EXPECTED[tool.name]
        assert tool.title == title, tool.name
        expected = {"title": title, "readOnlyHint": True, "openWorldHint": False}
        if idempotent:  # upstream omits idempotentHint rather than sending false
            expected["idempotentHint"] = True
        assert wire(tool)["annotations"] == expected, tool.name  # destructiveHint is left unset on read-only tools
        assert tool.annotations is not None and tool.annotations.destructive_hint is None


def _undescribed(schema: Any, where: str) -> Iterator[str]:
    """Every property (in the root, nested objects and $defs) without a non-empty description."""
    if isinstance(schema, dict):
        for name, prop in (schema.get("properties") or {}).items():
            if not (isinstance(prop, dict) and str(prop.get("description", "")).strip()):
                yield f"{where}.properties.{name}"
        for key, value in schema.items():
            yield from _undescribed(value, f"{where}.{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _undescribed(value, f"{where}[{i}]")


async def test_every_input_property_has_a_description(listed) -> None:
    missing = [path for tool in listed for path in _undescribed(tool.input_schema, tool.name)]
    assert missing == []


def test_undescribed_walker_finds_nested_properties() -> None:
    schema = {
        "properties": {"a": {"description": "ok", "type": "string"}, "b": {"$ref": "#/$defs/B"}},
        "$defs": {"B": {"properties": {"c": {"type": "string"}, "d": {"description": " "}}}},
    }
    assert list(_undescribed(schema, "t")) == ["t.properties.b", "t.$defs.B.properties.c", "t.$defs.B.properties.d"]


async def test_input_schemas_are_open_objects(listed) -> None:
    """As upstream's: unknown keys are not an error (they are dropped), so no object says additionalProperties."""
    for tool in listed:
        assert tool.input_schema["type"] == "object"
        assert "additionalProperties" not in json.dumps(tool.input_schema), tool.name


async def test_every_tool_has_an_object_output_schema(listed) -> None:
    for tool in listed:
        assert tool.output_schema, tool.name
        assert tool.output_schema["type"] == "object" and tool.output_schema["properties"], tool.name


async def test_output_schemas_are_flat(listed) -> None:
    for tool in listed:
        text = json.dumps(tool.output_schema)
        assert "$ref" not in text and "$defs" not in text, tool.name


def test_flat_schema_accepts_what_the_model_schema_accepts() -> None:
    nested = {
        "$defs": {"Ref": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        "type": "object",
        "properties": {
            "ref": {"$ref": "#/$defs/Ref", "description": "the ref"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
    }
    flat = flat_schema(nested)
    assert flat["properties"]["ref"] == {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "description": "the ref",
    }  # fmt: skip
    assert flat["properties"]["note"] == {"type": ["string", "null"]}
    for good in ({"ref": {"name": "a"}, "note": None}, {"ref": {"name": "a"}, "note": "x"}):
        assert not list(Draft202012Validator(flat).iter_errors(good))
    for bad in ({"ref": {}}, {"ref": {"name": "a"}, "note": 3}):
        assert list(Draft202012Validator(flat).iter_errors(bad))
        assert list(Draft202012Validator(nested).iter_errors(bad))


def test_flat_schema_leaves_a_recursive_schema_as_it_is() -> None:
    tree = {"$defs": {"Node": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/Node"}}}}},
            "$ref": "#/$defs/Node"}  # fmt: skip
    assert flat_schema(tree) is tree


async def test_descriptions_inline_an_example_call(listed) -> None:
    for tool in listed:
        assert f"Example: {tool.name}(" in (tool.description or ""), tool.name


# ------------------------------------------------------------------ snapshot


def snapshot_of(tools: list[Tool]) -> dict[str, Any]:
    keep = ("title", "annotations", "inputSchema", "outputSchema")
    return {t.name: {k: wire(t).get(k) for k in keep} for t in sorted(tools, key=lambda t: t.name)}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


async def test_tools_list_snapshot(listed) -> None:
    current = render(snapshot_of(listed))
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.is_file(), f"{SNAPSHOT} is missing; generate it with UPDATE_SNAPSHOTS=1"
    committed = SNAPSHOT.read_text(encoding="utf-8")
    if current != committed:
        diff = "".join(
            difflib.unified_diff(
                committed.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile=f"{SNAPSHOT.name} (committed)",
                tofile=f"{SNAPSHOT.name} (server now)",
            )
        )
        pytest.fail(
            "tools/list differs from the committed snapshot. If the change is intended, rerun with "
            f"UPDATE_SNAPSHOTS=1 and commit {SNAPSHOT}.\n{diff}",
            pytrace=False,
        )
