"""Table names as tool inputs send them, resolved against the scanned tables the store holds.

Every table reference from a tool input is resolved here before anything is read (entities.py), so no input can
name a path outside the project: a string (``"public.orders"``, ``"orders"``, quoted parts), ``{catalog, db, name}``
as a ref's ``tableRef`` has it, or ``{schema, table}``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from indexers.models import display_name, name_tails
from ktx_index.analysis import identifier_key
from ktx_index.errors import InvalidInput
from ktx_index.index.store import DocStore
from ktx_index.snapshot.joins import QUOTES

if TYPE_CHECKING:
    from ktx_index.snapshot.snapshot import Snapshot


def _strip(part: str) -> str:
    return part.strip().strip(QUOTES).strip()


def parse_table_input(table: Any) -> tuple[str | None, str | None, str] | str:
    """(catalog, db, name) from an object, or the display string as given."""
    if isinstance(table, str):
        if not table.strip():
            raise InvalidInput("empty table name", 'send a name like "orders", "public.orders" or an object')
        return table.strip()
    if isinstance(table, dict):
        if "name" in table:
            return table.get("catalog"), table.get("db"), str(table["name"])
        if "table" in table:  # {schema, table} → catalog null, db schema
            return table.get("catalog"), table.get("schema") or table.get("db"), str(table["table"])
    raise InvalidInput(
        f"cannot read table reference {json.dumps(table)[:100]}",
        'send {"catalog": null, "db": "public", "name": "orders"}, {"schema": "public", "table": "orders"} or "public.orders"',
    )


class TableName:
    """A scanned table as (uid, catalog, db, name), enough to resolve a reference without loading it."""

    def __init__(self, uid: str, catalog: str | None, db: str | None, name: str) -> None:
        self.uid, self.catalog, self.db, self.name = uid, catalog, db, name
        self.display = display_name(catalog, db, name)


def resolve(tables: list[TableName], wanted: tuple[str | None, str | None, str] | str) -> list[TableName]:
    fold = str.casefold
    if isinstance(wanted, tuple):
        catalog, db, name = wanted
        hits = [
            t
            for t in tables
            if fold(t.name) == fold(name)
            and (db is None or fold(t.db or "") == fold(db))
            and (catalog is None or fold(t.catalog or "") == fold(catalog))
        ]
        exact = [t for t in hits if t.catalog == catalog and t.db == db]
        if exact or hits:
            return exact or hits
        # {schema: "Sales", table: "SalesOrderHeader"} where the scan's table is named "Sales.SalesOrderHeader"
        # (in db main): read as the string "Sales.SalesOrderHeader", which resolves
        joined = resolve(tables, display_name(*wanted))
        if joined or "." not in name or (db is not None and not fold(name).startswith(fold(db) + ".")):
            return joined
        # the schema sent twice ({schema: "raw", table: "raw.orders"}): the name says it all
        return resolve(tables, name)
    # the whole display name first, else a dotted tail (indexers' name_tails, whose first is the whole name folded);
    # a tail ends the name, so only those that end with the text are split (15 times quicker at 100k tables)
    text = fold(".".join(_strip(p) for p in wanted.split(".")))
    by_display = [t for t in tables if fold(t.display) == text]
    if by_display:
        return by_display
    suffix = [t for t in tables if fold(t.display).endswith(text) and text in name_tails(t.display)[1:]]
    return suffix or [t for t in tables if fold(t.name) == fold(_strip(wanted))]


def scanned_tables(store: DocStore, connection_id: str) -> list[TableName]:
    return [TableName(*row) for row in store.docs.table_refs(connection_id)]


def scanned_table(tables: list[TableName], sent: str) -> str | None:
    """The display name of the one table of ``tables`` (a connection's, ``scanned_tables``) that ``sent`` names, as
    entity_details resolves it, if any."""
    try:
        wanted = parse_table_input(sent)
    except InvalidInput:
        return None
    hits = resolve(tables, wanted)
    return hits[0].display if len(hits) == 1 else None


def column_id(store: DocStore, tables: list[TableName], label: str) -> tuple[TableName | None, str]:
    """The one table ``label`` names with one of its columns after it (``edw.fact_shpmt.delivered_ts``, a column
    ref's id), and that column as the table spells it; (None, "") when it is no such id."""
    head, _, column = label.rpartition(".")
    hits = resolve(tables, head) if head and column else []
    if len(hits) != 1 or (doc := store.docs.get(hits[0].uid)) is None:
        return None, ""
    spelled = next((c for c in doc.attrs.get("columns", []) if str(c).casefold() == column.casefold()), None)
    return (hits[0], str(spelled)) if spelled is not None else (None, "")


def column_holders(snap: Snapshot, connection_id: str) -> Callable[[str], list[str]]:
    """The tables (their display) of the connection with a column named as the last part of a name, found in the
    snapshot's index of names (``Snapshot.exact``: identifier key → uids, dotted suffixes too) and each column's
    table (``doc_parent``): a column ``geo.region`` is no ``region``."""
    columns, tables = f"column:{connection_id}:", f"table:{connection_id}:"

    def holding(name: str) -> list[str]:
        key = identifier_key(name.rsplit(".", 1)[-1].strip(QUOTES))
        out = set()
        for uid in snap.exact.get(key, ()):
            i = snap.uid_index.get(uid) if uid.startswith(columns) else None
            table = snap.doc_uids[int(snap.doc_parent[i])] if i is not None and snap.doc_parent[i] >= 0 else ""
            if not table.startswith(tables):
                continue
            display = table[len(tables) :]
            if identifier_key(uid[len(columns) + len(display) + 1 :]) == key:  # its own name, not a dotted suffix of it
                out.add(display)
        return sorted(out)

    return holding
