"""Argument problems in words a model can act on, and the unknown keys a call carried.

MCP 2025-11-25 (SEP-1303) makes an input that fails the tool's schema a tool execution error (``isError``), so the
model reads it and corrects the call; upstream KTX's SDK answers that way too. pydantic's own message
(``Input should be a valid integer, unable to parse string as an integer``) says what is wrong but not what to
send, and for a union it lists every branch's failure. Here each problem is one line, ``<field>: expected <what
the advertised inputSchema allows>, got <value>``, so the fix can be read off the message and matches the schema
the client was given. Unknown keys are not errors (they are stripped, as upstream does); ``unknown_keys`` names
them for the call log.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

MAX_GOT = 80
_MISSING = object()


def argument_errors(tool: str, error: ValidationError, schema: dict[str, Any], arguments: dict[str, Any]) -> str:
    """One line per field at fault (a union's branches fold into one), each naming what to send instead."""
    problems: dict[str, str] = {}
    for err in error.errors():
        if err["type"] == "none_required":  # the hidden "omitted" branch of an optional field, never the advice
            continue
        path, node = _walk(schema, err["loc"])
        dotted = ".".join(str(p) for p in path) or "<arguments>"
        if dotted in problems:
            continue
        value = _value_at(arguments, path)
        expected = describe(node, schema) if node is not None else "nothing (this key is not used)"
        if value is _MISSING:
            problems[dotted] = f"{dotted}: required, expected {expected}"
        else:
            problems[dotted] = f"{dotted}: expected {expected}, got {_got(value)}"
    return f"Invalid arguments for tool {tool}: " + "; ".join(problems.values())


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return {
            **root.get("$defs", {}).get(ref.rsplit("/", 1)[-1], {}),
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    return node


def _walk(root: dict[str, Any], loc: tuple[int | str, ...]) -> tuple[list[int | str], dict[str, Any] | None]:
    """The argument path pydantic's ``loc`` names and the schema node there. pydantic puts a tag for each union
    branch it tried into ``loc`` ('constrained-str', 'TableRefIn'): under an advertised union (anyOf) the path
    stops there, since the fix is to send any one branch; elsewhere a tag is skipped."""
    node: dict[str, Any] | None = _resolve(root, root)
    path: list[int | str] = []
    for part in loc:
        if node is None:
            break
        if isinstance(part, int) and "items" in node:
            node, path = _resolve(node["items"], root), [*path, part]
        elif isinstance(part, str) and part in (node.get("properties") or {}):
            node, path = _resolve(node["properties"][part], root), [*path, part]
        elif "anyOf" in node:
            break
        elif isinstance(part, str) and node.get("type") != "object":
            continue  # a union tag of a branch the schema does not show (an optional field's None)
        else:
            return [*path, part], None  # outside the schema
    return path, node


def describe(node: dict[str, Any], root: dict[str, Any]) -> str:
    """What a schema node accepts, in words: 'an integer 1–50', 'one of "wiki", "table"', 'a list of 1–20
    items, each a non-empty string', 'a string, or an object with keys name (required), catalog, db'."""
    node = _resolve(node, root)
    if "anyOf" in node:
        options = [describe(o, root) for o in node["anyOf"] if o.get("type") != "null"]
        nullable = any(o.get("type") == "null" for o in node["anyOf"])
        return ", or ".join(options) + (", or null" if nullable else "")
    if "enum" in node:
        return "one of " + ", ".join(json.dumps(v) for v in node["enum"])
    if "const" in node:
        return json.dumps(node["const"])
    kind = node.get("type")
    if isinstance(kind, list):
        return " or ".join(describe({**node, "type": k}, root) for k in kind)
    if kind == "string":
        return "a non-empty string" if node.get("minLength", 0) >= 1 else "a string"
    if kind in ("integer", "number"):
        word = "an integer" if kind == "integer" else "a number"
        return word + _range(node.get("minimum"), node.get("maximum"))
    if kind == "boolean":
        return "true or false"
    if kind == "null":
        return "null"
    if kind == "array":
        count = _range(node.get("minItems"), node.get("maxItems")).strip()
        items = describe(node["items"], root) if isinstance(node.get("items"), dict) else "anything"
        return f"a list of {count + ' ' if count else ''}items, each {items}"
    if kind == "object":
        props = node.get("properties") or {}
        required = set(node.get("required") or [])
        keys = [f"{k} (required)" for k in props if k in required] + [k for k in props if k not in required]
        return "an object with keys " + ", ".join(keys) if keys else "an object"
    return "a value the field's description names"


def _range(low: Any, high: Any) -> str:
    if low is not None and high is not None:
        return f" {low}–{high}"
    if low is not None:
        return f" ≥ {low}"
    if high is not None:
        return f" ≤ {high}"
    return ""


def _value_at(arguments: Any, path: list[int | str]) -> Any:
    value = arguments
    for part in path:
        if part == 0 and isinstance(value, str):  # a bare string the tool reads as a list of one
            continue
        listed = isinstance(part, int) and isinstance(value, list) and part < len(value)
        keyed = isinstance(part, str) and isinstance(value, dict) and part in value
        if not (listed or keyed):
            return _MISSING
        value = value[part]  # type: ignore[index]
    return value


def _got(value: Any) -> str:
    if isinstance(value, list) and len(value) > 3:
        return f"a list of {len(value)} items"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_GOT else text[: MAX_GOT - 1] + "…"


@dataclass(frozen=True)
class KeyTree:
    """Which keys an argument value may carry, compiled once per tool from its inputSchema (walking the schema on
    every call would cost more than the arguments' own validation): for an object, each alternative shape's
    required keys and what each key holds; for a list, what its items hold."""

    known: frozenset[str] = frozenset()
    shapes: tuple[tuple[frozenset[str], dict[str, KeyTree]], ...] = ()
    items: KeyTree | None = None


def key_tree(schema: dict[str, Any]) -> KeyTree:
    def build(node: dict[str, Any]) -> KeyTree:
        node = _resolve(node, schema)
        if isinstance(node.get("items"), dict):
            return KeyTree(items=build(node["items"]))
        branches = [_resolve(o, schema) for o in node.get("anyOf", [node])]
        objects = [b for b in branches if "properties" in b]
        shapes = tuple(
            (frozenset(b.get("required") or []), {k: build(v) for k, v in b["properties"].items()}) for b in objects
        )
        items = next((build(b["items"]) for b in branches if isinstance(b.get("items"), dict)), None)
        return KeyTree(frozenset(k for b in objects for k in b["properties"]), shapes, items)

    return build(schema)


def unknown_keys(tree: KeyTree, arguments: Any) -> list[str]:
    """Dotted paths of the keys the schema does not name (they are dropped before the handler runs)."""
    found: list[str] = []
    _unknown(tree, arguments, "", found)
    return found


def _unknown(tree: KeyTree, value: Any, prefix: str, found: list[str]) -> None:
    if isinstance(value, list):
        if tree.items is not None:
            for i, item in enumerate(value):
                _unknown(tree.items, item, f"{prefix}{i}.", found)
        return
    if not isinstance(value, dict) or not tree.shapes:
        return
    # the keys of the shape it fits (the first whose required keys it has): another shape's are dropped all the same
    fitting = next((props for required, props in tree.shapes if required <= value.keys()), None)
    known = tree.known if fitting is None else fitting.keys()
    found.extend(f"{prefix}{k}" for k in value if k not in known)
    if fitting is not None:
        for key, child in fitting.items():
            if key in value:
                _unknown(child, value[key], f"{prefix}{key}.", found)
