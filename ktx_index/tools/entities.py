"""entity_details: the scanned tables a discover ref names, in upstream's shapes and message templates.

Every table reference from a tool input is resolved against the scanned tables the store holds before anything
is read (table_names.py), so no input can name a path outside the project.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any, get_args

from indexers.base import first_few
from indexers.models import Document, display_name, make_uid
from indexers.sl_records import hand_written
from ktx_index.errors import InvalidInput, echoed, sent_back
from ktx_index.index.store import DocStore
from ktx_index.snapshot.joins import bare_name
from ktx_index.tools.read_results import (
    MAX_ENTITIES,
    ColumnDetails,
    DimensionType,
    EntityDetailsResult,
    EntityError,
    EntityFailed,
    EntityFound,
    ForeignKey,
    Snapshot,
    TableCandidate,
    TableKind,
)
from ktx_index.tools.reads import find_source, nearest
from ktx_index.tools.results import TableRefOut
from ktx_index.tools.table_names import (
    TableName,
    column_id,
    parse_table_input,
    resolve,
    scanned_table,
    scanned_tables,
)

DIMENSION_TYPES = set(get_args(DimensionType))
TABLE_KINDS = set(get_args(TableKind))
#: ``table_not_found`` lists the nearest tables, then the rest by name (upstream: every table by name), up to this.
MAX_CANDIDATES = 200


def check_entity_count(entities: list[Any]) -> None:
    if not 1 <= len(entities) <= MAX_ENTITIES:
        raise InvalidInput(f"{len(entities)} entities sent", f"send 1 to {MAX_ENTITIES} per call")


def entity_details(
    store: DocStore,
    connection_id: str,
    entities: list[dict[str, Any]],
    known: list[str],
    twins: Callable[[str], frozenset[str]],
    holding: Callable[[str], list[str]],
) -> EntityDetailsResult:
    """One item per entity, in order, in upstream's shapes and message templates. An unknown connection is not
    an error of the call (upstream does not check it either): each item says there is no scan, and which
    connections there are. The count is checked by the service first. ``twins`` names the semantic-layer sources
    over a table (Facts.twins), whose descriptions (a user's first) resolve the table's and its columns'.
    ``holding`` names the tables (their display) with a column of a name: a table sent by a column's name
    (*region*) lists those first among its candidates."""
    tables = scanned_tables(store, connection_id)
    snapshot_doc = store.docs.get(make_uid("snapshot", connection_id, connection_id)) if tables else None
    latest = _snapshot(snapshot_doc.attrs) if snapshot_doc is not None else None
    # A known connection with no scan: the other connections' scans, read once for every entity's next step.
    elsewhere = (
        {c: scanned_tables(store, c) for c in known if c != connection_id}
        if not tables and connection_id in known
        else {}
    )
    out: list[EntityFound | EntityFailed] = []
    for entity in entities:
        table = entity.get("table") if isinstance(entity, dict) else entity
        echo = _echo(table)
        failed = functools.partial(_failed, connection_id, echo, latest)
        if not tables:
            message = f'No live-database scan found for connection "{connection_id}"'
            if connection_id not in known:  # nothing to ingest: the id names no connection
                message += f"; it is not configured. Configured connections: {', '.join(known) or '(none configured)'}."
            else:
                message += f"; run `ktx ingest {connection_id}` or `ktx scan {connection_id}`."
                message += _read_elsewhere(store, connection_id, table, elsewhere)
            out.append(failed("scan_missing", message))
            continue
        try:
            wanted = parse_table_input(table)
        except InvalidInput:
            wanted = str(table)
        hits = resolve(tables, wanted)
        label = wanted if isinstance(wanted, str) else display_name(*wanted)
        if not hits:
            displays = [t.display for t in tables]
            owner, column = column_id(store, tables, label)
            named = [t.display for t in tables if bare_name(t.name) == bare_name(label)]  # in another schema or dataset
            by_display = {t.display: t for t in tables}
            held = [d for d in holding(label) if d in by_display]  # the latest scan's tables with such a column
            close = (
                [owner.display]
                if owner is not None
                else list(dict.fromkeys([*named, *held, *nearest(label, displays, 8)]))
            )
            offered = [*close, *sorted(set(displays) - set(close))][:MAX_CANDIDATES]
            more = f"; {len(displays) - len(offered)} more are not listed" if len(displays) > len(offered) else ""
            holders = " (with those holding a column of that name)" if held and owner is None else ""
            sent = f"Table not found in latest scan: {echoed(label)}." if label.strip() else "The table sent is blank."
            message = (
                f"{sent} Send one of the candidates: the nearest tables first{holders}, then the others by name{more}."
            )
            if owner is not None:  # a column's id, as discover_data returns it
                message += f" It names a column: send {json.dumps({'table': owner.display, 'columns': [column]})}."
            else:
                message += _source_named(store, connection_id, label, tables)
            out.append(failed("table_not_found", message, [_candidate(by_display[d]) for d in offered]))
        elif len(hits) > 1:
            message = f'Table name "{hits[0].name}" is ambiguous across schemas/catalogs; pass a structured table ref.'
            out.append(
                failed("ambiguous_table", message, [_candidate(t) for t in sorted(hits, key=lambda t: t.display)])
            )
        else:
            out.append(_details(store, store.docs.get(hits[0].uid), entity, connection_id, echo, twins(hits[0].uid)))
    return EntityDetailsResult(results=out)


def _source_named(store: DocStore, connection_id: str, label: str, tables: list[TableName]) -> str:
    """What to send when a table no scan holds is a semantic-layer source's name (a ref of kind sl_source): the table
    it reads, or for one written as SQL (no table, and so no ``tableRef`` on its refs), sl_read_source. A
    measure's or dimension's id, or a wiki page's, is told its tool too (each got a bare "not found": an outside
    pass)."""
    key = label.split(":")[-1].strip() if label.casefold().startswith("wiki:") else label
    if key in store.docs.ids("wiki"):  # a wiki ref's id is its page's key ('wiki::key' as judged sets write it)
        return f' "{label}" is a wiki page: read it with wiki_read {{key: {json.dumps(key)}}}.'
    member = _member_named(store, connection_id, label, tables)
    if member:
        return member
    source, _names = find_source(store, connection_id, label)  # as sl_read_source finds it
    if source is None:
        return ""
    read = f'sl_read_source {{connectionId: "{connection_id}", sourceName: "{source.id}"}}'
    if source.table_ref is None:
        return f' "{source.id}" is a semantic-layer source written as SQL, over no one table: read it with {read}.'
    table = source.table_ref.display
    if scanned_table(tables, table) is None:  # sending it back would loop
        return (
            f' "{source.id}" is a semantic-layer source over table {table}, which the latest scan of '
            f'"{connection_id}" does not hold (fix its `table:`, or rescan): read the source with {read}.'
        )
    return f' "{source.id}" is a semantic-layer source: send the table it reads, "{table}", or {read}.'


def _member_named(store: DocStore, connection_id: str, label: str, tables: list[TableName]) -> str:
    """What to send for a measure's or a dimension's id (``source.member``): its source's table (with the
    dimension's column), or the source through sl_read_source."""
    if "." not in label:
        return ""
    for kind, what in (("sl_measure", "a measure"), ("sl_dimension", "a dimension")):
        ref_id: str | None = label
        if store.docs.get(f"{kind}:{connection_id}:{label}") is None:  # then in another case
            ref_id = next((i for i in store.docs.ids(kind, connection_id) if i.casefold() == label.casefold()), None)
        if ref_id is None:
            continue
        owner, member = ref_id.rsplit(".", 1)
        source = store.docs.get(f"sl_source:{connection_id}:{owner}")
        read = f'sl_read_source {{connectionId: "{connection_id}", sourceName: "{owner}"}}'
        table = source.table_ref.display if source is not None and source.table_ref is not None else None
        if table is None or scanned_table(tables, table) is None:  # no table to send
            return f' "{label}" is {what} of semantic-layer source "{owner}": read it with {read}.'
        send = {"table": table, "columns": [member]} if kind == "sl_dimension" else {"table": table}
        return f' "{label}" is {what} of semantic-layer source "{owner}": send {json.dumps(send)}, or {read}.'
    return ""


def listed(names: list[str], most: int = 10) -> str:
    """Names sent, as a message lists them: each as ``echoed`` quotes it, the first ``most`` of them."""
    return first_few([echoed(name) for name in names], most)


def nearest_first(missing: list[str], names: list[str]) -> list[str]:
    """Every column name, those nearest to each missing name first (reads.nearest), then the rest in the table's
    order: an agent that sent *state* finds ``st_cd`` at the top, not fifth (upstream lists the table's order)."""
    close = [name for word in missing for name in nearest(word, names, 3)]
    return list(dict.fromkeys([*close, *names]))


def _read_elsewhere(store: DocStore, connection_id: str, table: Any, elsewhere: dict[str, list[TableName]]) -> str:
    """Where a table of a connection with no scan (a dbt project, say: dictionary_search names its enum values)
    can be read instead: the connections whose scan (``elsewhere``) holds it, and this connection's semantic-layer
    source on it."""
    try:
        wanted = parse_table_input(table)
    except InvalidInput:
        return ""
    scanned = [c for c, tables in elsewhere.items() if resolve(tables, wanted)]
    name = wanted if isinstance(wanted, str) else wanted[2]
    source = store.docs.get(make_uid("sl_source", connection_id, name.rsplit(".", 1)[-1]))
    quoted = " or ".join(f'"{c}"' for c in scanned)
    steps = [f"entity_details with connectionId {quoted}"] if scanned else []
    if source is not None:
        steps.append(f'sl_read_source {{connectionId: "{connection_id}", sourceName: "{source.id}"}}')
    return f" This table can be read with {', or '.join(steps)}." if steps else ""


def _failed(
    connection_id: str,
    table: Any,
    snapshot: Snapshot | None,
    code: str,
    message: str,
    candidates: list[Any] | None = None,
) -> EntityFailed:
    error = EntityError(code=code, message=message, candidates=candidates)  # type: ignore[arg-type]
    return EntityFailed(ok=False, connectionId=connection_id, table=table, snapshot=snapshot, error=error)


def _candidate(table: TableName) -> TableCandidate:
    return TableCandidate(
        tableRef=TableRefOut(catalog=table.catalog, db=table.db, name=table.name), display=table.display
    )


def _echo(table: Any) -> Any:
    """The table as sent (a long name cut: errors.sent_back), in upstream's shape: an object as {catalog, db, name}
    ({schema, table} mapped)."""
    if isinstance(table, str):  # as sent ('"raw"."orders"' stays quoted)
        return sent_back(table)
    try:
        catalog, db, name = parse_table_input(table)  # an object: a string was sent back above
    except InvalidInput:
        return sent_back(table)
    return TableRefOut(catalog=catalog, db=db, name=sent_back(name))


def _snapshot(attrs: dict[str, Any]) -> Snapshot:
    return Snapshot(
        syncId=attrs.get("syncId") or "", extractedAt=attrs.get("extractedAt") or "", scanRunId=attrs.get("scanRunId")
    )


def _describing(store: DocStore, table: Document, twins: frozenset[str]) -> str | None:
    """The semantic-layer source that describes a table: of the sources over it, those a person wrote (a file or
    an overlay outside ``_schema/``) before the scan's own manifest entries, and among them the one named as the
    table, else the only one (of ``active_customers`` and ``customers`` over ``customers``, the first describes a
    subset); None without. A KTX scan writes an entry for every table, named as it: a hand-written source of
    another name (``bookings`` over ``cx.bkg``) lost its descriptions to it (an outside pass)."""
    sources = sorted(t for t in twins if t.startswith("sl_source:"))
    docs = store.docs.get_many(sources)
    written = [s for s in sources if s in docs and hand_written(docs[s])]
    return (_named_or_only(table, written) if written else None) or _named_or_only(table, sources)


def _named_or_only(table: Document, sources: list[str]) -> str | None:
    named = [s for s in sources if bare_name(s.split(":", 2)[2]) == bare_name(table.name)]
    return named[0] if named else sources[0] if len(sources) == 1 else None


def listed_names(name: str, by_folded: Mapping[str, str]) -> list[str]:
    """The column names one entry sends: itself, or, when it names no column and holds commas, each name of the
    list it writes out (``"order_id, order_ref"``, sent as one string where a list was meant)."""
    parts = [part.strip() for part in name.split(",") if part.strip()]
    return [name] if name.casefold() in by_folded or "," not in name or not parts else parts


def _described(store: DocStore, source: str | None, columns: list[str]) -> tuple[str | None, dict[str, str]]:
    """The describing source's description of the table, and of each of ``columns`` its dimension of that name
    (unless computed by an ``expr``): resolved there from a user's, an AI's, dbt's and the warehouse's (the scan
    holds the last alone). Read in two lookups, whatever the number of columns."""
    if source is None:
        return None, {}
    doc = store.docs.get(source)
    prefix = f"sl_dimension:{source.split(':', 1)[1]}."
    dimensions = store.docs.get_many([prefix + column for column in columns])
    by_column = {uid[len(prefix) :]: d.description for uid, d in dimensions.items() if d.description and not d.expr}
    return (doc.description if doc is not None and doc.description else None), by_column


def _column(doc: Document, name: str, described: str | None = None) -> ColumnDetails:
    """Upstream's seven column fields, which a KTX scan always writes; a hand-made scan lacking one gets a
    neutral value of the right type (its types 'unknown', a string dimension, nullable, no key)."""
    attrs = doc.attrs
    native = attrs.get("nativeType") or attrs.get("normalizedType") or "unknown"
    dimension = attrs.get("dimensionType")
    return ColumnDetails(
        name=name,
        nativeType=native,
        normalizedType=attrs.get("normalizedType") or native,
        dimensionType=dimension if dimension in DIMENSION_TYPES else "string",
        nullable=attrs.get("nullable") is not False,
        primaryKey=attrs.get("primaryKey") is True,
        comment=attrs.get("comment"),
        description=described or doc.description or None,
        sampleValues=doc.sample_values,
        distinctCount=attrs.get("distinctCount"),
        nullRate=attrs.get("nullRate"),
    )


def _foreign_keys(raw: list[dict[str, Any]]) -> list[ForeignKey]:
    """The scan's foreign keys in upstream's shape; one missing a column or target table is left out."""
    out = []
    for fk in raw:
        if all(isinstance(fk.get(k), str) for k in ("fromColumn", "toTable", "toColumn")):
            out.append(ForeignKey(**{k: fk.get(k) for k in ForeignKey.model_fields}))
    return out


def _details(
    store: DocStore, table: Document, entity: Any, connection_id: str, echo: Any, twins: frozenset[str]
) -> EntityFound | EntityFailed:
    attrs = table.attrs
    snapshot = _snapshot(attrs.get("snapshot") or {})
    columns = {d.name: d for d in store.docs.siblings(table.uid, "column")}
    wanted = entity.get("columns") if isinstance(entity, dict) else None
    names = [n for n in attrs.get("columns", []) if n in columns]  # the table's own column order
    if wanted:
        by_folded = {n.casefold(): n for n in names}
        wanted = [name for w in wanted for name in listed_names(str(w), by_folded)]
        missing = [str(w) for w in wanted if str(w).casefold() not in by_folded]
        if missing:
            message = (
                f"Column(s) not found on {table.display}: {listed(missing)}. Send names among the candidates: "
                "the nearest to each first, then the others in the table's order."
            )
            return _failed(connection_id, echo, snapshot, "column_not_found", message, nearest_first(missing, names))
        names = list(dict.fromkeys(by_folded[str(w).casefold()] for w in wanted))  # 'lst_nm' and 'LST_NM': once
    kind = attrs.get("kind")
    source = _describing(store, table, twins)
    described, by_column = _described(store, source, names)
    return EntityFound(
        ok=True,
        connectionId=connection_id,
        tableRef=TableRefOut(**table.table_ref.model_dump()),
        display=table.display,
        kind=kind if kind in TABLE_KINDS else "table",
        comment=table.comment or None,
        estimatedRows=attrs.get("estimatedRows"),
        columns=[_column(columns[name], name, by_column.get(name)) for name in names],
        foreignKeys=_foreign_keys(attrs.get("foreignKeys", [])),
        snapshot=snapshot,
        description=described or table.description or table.summary,
        profiledRows=attrs.get("profiledRows"),
        stale=_stale(store, table.uid, source if described or by_column else None),
    )


def _stale(store: DocStore, table: str, source: str | None) -> str | None:
    """Why the table, or the source whose descriptions it carries, is a last good version (its file no longer
    parses): the scan's reason first; None when both are current."""
    return store.docs.stale_by_uid(table).get(table) or (
        store.docs.stale_by_uid(source).get(source) if source else None
    )
