"""Which tables and sources join, and on which columns: from the project's own metadata only.

Edges come from a scanned table's declared ``foreignKeys``, a semantic-layer source's ``joins``
and its usage digest's ``commonJoins``; nothing is inferred from names. Search uses them to lift
the key columns between two tables it already ranks high, and ``discover_data`` returns them
(``joins: [{from, to, on}]``) so an agent can write the JOIN without guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: ``orders.customer_id = customers.id`` → (orders, customer_id), (customers, id)
QUALIFIED = re.compile(r"([\w$]+)\.([\w$]+)")


@dataclass(frozen=True)
class JoinEdge:
    """One way of joining a container to another (stored on both ends)."""

    other: int  # document index of the other table or source
    keys: tuple[int, ...]  # document indexes of the key columns found on either side
    on: str  # the condition as the metadata states it


def _display(catalog: str | None, db: str | None, name: str) -> str:
    return ".".join(p for p in (catalog, db, name) if p)


def scan_edges(
    uid: str, conn: str | None, fields: dict, index: dict[str, int]
) -> list[tuple[int, int, list[int], str]]:
    """(table, other table, key columns, on) of a scanned table's declared foreign keys that resolve."""
    me = index.get(uid)
    ref = fields.get("table_ref") or {}
    name = ref.get("name") or fields.get("name") or ""
    display = fields.get("display") or _display(ref.get("catalog"), ref.get("db"), name)
    out = []
    for fk in (fields.get("attrs") or {}).get("foreignKeys") or []:
        to_name, src_col, dst_col = fk.get("toTable"), fk.get("fromColumn"), fk.get("toColumn")
        if me is None or not isinstance(to_name, str) or not isinstance(src_col, str) or not isinstance(dst_col, str):
            continue
        to_display = _display(fk.get("toCatalog"), fk.get("toDb"), to_name)
        other = index.get(f"table:{conn or ''}:{to_display}")
        if other is None or other == me:
            continue
        keys = [
            index.get(f"column:{conn or ''}:{display}.{src_col}"),
            index.get(f"column:{conn or ''}:{to_display}.{dst_col}"),
        ]
        out.append((me, other, [k for k in keys if k is not None], f"{name}.{src_col} = {to_name}.{dst_col}"))
    return out


def source_edges(
    uid: str, conn: str | None, fields: dict, index: dict[str, int]
) -> list[tuple[int, int, list[int], str]]:
    """(source, other source, key dimensions, on) of a semantic-layer source's joins and usage commonJoins."""
    me = index.get(uid)
    name = fields.get("name") or ""
    attrs = fields.get("attrs") or {}
    declared = [(j.get("to"), j.get("on") or "") for j in attrs.get("joins") or [] if isinstance(j, dict)]
    common = [(j.get("table"), " and ".join(j.get("on") or [])) for j in attrs.get("commonJoins") or []]
    out = []
    for target, on in declared + common:
        if me is None or not isinstance(target, str):
            continue
        target = target.rsplit(".", 1)[-1]  # commonJoins may name the physical table
        other = index.get(f"sl_source:{conn or ''}:{target}")
        if other is None or other == me:
            continue
        keys = []
        for owner, column in QUALIFIED.findall(on):
            for source in (name, target):
                if owner.casefold() == source.casefold():
                    key = index.get(f"sl_dimension:{conn or ''}:{source}.{column}")
                    if key is not None:
                        keys.append(key)
        out.append((me, other, keys, on))
    return out


def join_graph(edges: list[tuple[int, int, list[int], str]]) -> dict[int, list[JoinEdge]]:
    """Container index → its edges, both directions, one per (other, on)."""
    graph: dict[int, list[JoinEdge]] = {}
    seen: set[tuple[int, int, str]] = set()
    for a, b, keys, on in edges:
        for x, y in ((a, b), (b, a)):
            if (x, y, on.casefold()) in seen:
                continue
            seen.add((x, y, on.casefold()))
            graph.setdefault(x, []).append(JoinEdge(other=y, keys=tuple(dict.fromkeys(keys)), on=on))
    return graph
