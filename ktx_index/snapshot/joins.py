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
#: What a self-join's condition calls the referenced row (``employees.reports_to = parent.employee_id``), so it
#: pastes into ``JOIN employees AS parent``; the table's own name on both sides would compare a row with itself.
SELF_ALIAS = "parent"
#: A name SQL reads as written, unquoted.
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")


#: Words a plain name cannot be in any of those dialects (a table named ``order`` or ``user``).
RESERVED = frozenset(
    "all and as by case check column create cross default delete desc distinct drop else end from full grant group "
    "having in index inner insert into is join key left like limit not null offset on or order outer primary "
    "references right select session table then to union unique update user using values when where with".split()
)


def sql_name(name: str) -> str:
    """A table or column name as a join condition writes it: double-quoted (the SQL standard's quotes, which
    Postgres, SQLite, Snowflake, DuckDB, SQL Server and Oracle read) when it is not a plain name (``Order
    Details``) or is a reserved word (``order``), so the condition can be pasted into a query. Case is kept as the
    scan wrote it."""
    if PLAIN_NAME.fullmatch(name) and name.casefold() not in RESERVED:
        return name
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class JoinEdge:
    """One way of joining a container to another (stored on both ends)."""

    other: str  # uid of the other table or source
    keys: tuple[str, ...]  # uids of the key columns on either side (resolved when used: they may not exist)
    on: str  # the condition as the metadata states it
    declared: bool = True  # this end declares it (the table holding the foreign key, the source listing the join)


#: (container uid, other container uid, key column uids, on) as one document declares it
Edge = tuple[str, str, list[str], str]


def _display(catalog: str | None, db: str | None, name: str) -> str:
    return ".".join(p for p in (catalog, db, name) if p)


def scan_edges(uid: str, conn: str | None, fields: dict) -> list[Edge]:
    """(table, other table, key columns, on) of a scanned table's declared foreign keys."""
    ref = fields.get("table_ref") or {}
    name = ref.get("name") or fields.get("name") or ""
    display = fields.get("display") or _display(ref.get("catalog"), ref.get("db"), name)
    out = []
    for fk in (fields.get("attrs") or {}).get("foreignKeys") or []:
        to_name, src_col, dst_col = fk.get("toTable"), fk.get("fromColumn"), fk.get("toColumn")
        if not isinstance(to_name, str) or not isinstance(src_col, str) or not isinstance(dst_col, str):
            continue
        to_display = _display(fk.get("toCatalog"), fk.get("toDb"), to_name)
        other = f"table:{conn or ''}:{to_display}"  # itself for a self-reference (employees' manager)
        keys = [f"column:{conn or ''}:{display}.{src_col}", f"column:{conn or ''}:{to_display}.{dst_col}"]
        target = SELF_ALIAS if other == uid else sql_name(to_name)  # a row and its parent row: two names needed
        on = f"{sql_name(name)}.{sql_name(src_col)} = {target}.{sql_name(dst_col)}"
        out.append((uid, other, keys, on))
    return out


def source_edges(uid: str, conn: str | None, fields: dict) -> list[Edge]:
    """(source, other source, key dimensions, on) of a semantic-layer source's joins and usage commonJoins."""
    name = fields.get("name") or ""
    attrs = fields.get("attrs") or {}
    declared = [(j.get("to"), j.get("on") or "") for j in attrs.get("joins") or [] if isinstance(j, dict)]
    common = [(j.get("table"), " and ".join(j.get("on") or [])) for j in attrs.get("commonJoins") or []]
    out = []
    for target, on in declared + common:
        if not isinstance(target, str):
            continue
        target = target.rsplit(".", 1)[-1]  # commonJoins may name the physical table
        other = f"sl_source:{conn or ''}:{target}"
        keys = [
            f"sl_dimension:{conn or ''}:{source}.{column}"
            for owner, column in QUALIFIED.findall(on)
            for source in (name, target)
            if owner.casefold() == source.casefold()
        ]
        out.append((uid, other, keys, on))
    return out


def join_graph(edges: list[Edge]) -> dict[str, list[JoinEdge]]:
    """Container uid → its edges to other containers, both directions, one per (other, on) (self_joins has the
    rest)."""
    graph: dict[str, list[JoinEdge]] = {}
    seen: set[tuple[str, str, str]] = set()
    for a, b, keys, on in edges:
        if a == b:
            continue
        for x, y in ((a, b), (b, a)):
            if (x, y, on.casefold()) in seen:
                continue
            seen.add((x, y, on.casefold()))
            graph.setdefault(x, []).append(JoinEdge(other=y, keys=tuple(dict.fromkeys(keys)), on=on, declared=x == a))
    return graph


def self_joins(edges: list[Edge]) -> tuple[str, ...]:
    """The conditions on which a container joins itself (a row to its parent row), from one document's edges: kept
    out of the graph, whose lifts look for two tables, and returned with the joins."""
    return tuple(dict.fromkeys(on for a, b, _keys, on in edges if a == b))
