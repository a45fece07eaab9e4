"""The reads that hydrate search refs: wiki_read, sl_read_source, entity_details, connection_list.

Every name that comes from a tool input is matched against what is indexed (or checked
against the flat-key rule) before anything touches the disk, so no input can name a
path outside the project.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rapidfuzz import process

from indexers.base import SAFE_ID, SourceError, read_text
from indexers.models import Document
from indexers.scans import COLUMN_FIELDS
from indexers.wiki import split_frontmatter, suggest_key
from ktx_index.errors import InvalidInput, NotFound
from ktx_index.read_models import (
    ColumnDetails,
    ConnectionEntry,
    ConnectionListResult,
    EntityDetails,
    EntityDetailsResult,
    SlSource,
    Snapshot,
    WikiPage,
)
from ktx_index.search.models import TableRefOut

if TYPE_CHECKING:
    from ktx_index.service import KtxIndex

CONNECTION_TYPES = {"postgres": "POSTGRESQL", "sqlserver": "SQLSERVER"}
MAX_ENTITIES = 20
MAX_KEY_CHARS = 200


def nearest(word: str, choices: list[str], limit: int = 5) -> list[str]:
    return [choice for choice, _score, _i in process.extract(word, choices, limit=limit, score_cutoff=40)]


def _hint(word: str, choices: list[str]) -> str:
    close = nearest(word, choices)
    return f"did you mean: {', '.join(close)}" if close else f"known: {', '.join(sorted(choices)[:10]) or 'none'}"


# ------------------------------------------------------------------ wiki_read


def wiki_read(service: KtxIndex, key: str) -> WikiPage:
    raw = key.strip()
    forced = None
    for prefix, scope in (("global/", "GLOBAL"), ("user/", "USER")):
        if raw.startswith(prefix):
            raw, forced = raw[len(prefix) :], scope
            break
    raw = raw.removesuffix(".md")
    if len(raw) > MAX_KEY_CHARS:
        raise InvalidInput(
            f"wiki key is {len(raw)} characters long",
            f"keys are at most {MAX_KEY_CHARS}; send the key wiki_search returned",
        )
    if not SAFE_ID.match(raw):
        raise InvalidInput(f'Invalid wiki key "{key}". Wiki keys must be flat', f'use "{suggest_key(raw)}"')
    user = service.project.settings.user
    candidates = [("USER", f"wiki/user/{user}/{raw}.md"), ("GLOBAL", f"wiki/global/{raw}.md")]
    for scope, rel in candidates:
        if forced not in (None, scope) or not (service.root / rel).is_file():
            continue
        try:
            meta, body = split_frontmatter(read_text(service.project, rel))
        except SourceError as exc:
            raise InvalidInput(f"{rel}: {exc}", "fix the file; its last good version stays searchable") from exc
        as_list = lambda v: [x for x in v if isinstance(x, str)] if isinstance(v, list) else []  # noqa: E731
        summary = meta.get("summary")
        return WikiPage(
            key=raw,
            summary=summary.strip() if isinstance(summary, str) else "",
            content=body,
            scope=scope,  # type: ignore[arg-type]
            tags=as_list(meta.get("tags")),
            refs=as_list(meta.get("refs")),
            slRefs=as_list(meta.get("sl_refs")),
            path=rel,
        )
    if forced is not None:
        other = next((scope for scope, rel in candidates if scope != forced and (service.root / rel).is_file()), None)
        if other is not None:
            raise NotFound(f'Wiki page "{key}" was not found', f'a {other.lower()} page exists: send "{raw}"')
    keys = sorted(set(service.refreshed_engine().store.ids("wiki")))
    raise NotFound(f'Wiki page "{raw}" was not found', _hint(raw, keys))


# ------------------------------------------------------------------ sl_read_source


def sl_read_source(service: KtxIndex, connection_id: str, source_name: str) -> SlSource:
    service.require_connection(connection_id)
    store = service.refreshed_engine().store
    doc = store.get(f"sl_source:{connection_id}:{source_name}")
    if doc is None:
        names = store.ids("sl_source", connection_id)
        broken = [
            f"{d.path}: {d.message}"
            for d in store.scope_diagnostics()
            if d.path.startswith(f"semantic-layer/{connection_id}/") and source_name in d.path
        ]
        hint = f"that file does not parse ({broken[0]})" if broken else _hint(source_name, names)
        raise NotFound(f'Semantic-layer source "{source_name}" was not found in connection "{connection_id}"', hint)
    return SlSource(
        sourceName=doc.id,
        connectionId=connection_id,
        yaml=doc.attrs.get("yaml", ""),
        path=doc.path,
        files=doc.attrs.get("files", []),
    )


# ------------------------------------------------------------------ entity_details


def _strip(part: str) -> str:
    return part.strip().strip('"`[]').strip()


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
        self.display = ".".join(p for p in (catalog, db, name) if p)


def _resolve(tables: list[TableName], wanted: tuple[str | None, str | None, str] | str) -> list[TableName]:
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
        return exact or hits
    text = ".".join(_strip(p) for p in wanted.split("."))
    by_display = [t for t in tables if fold(t.display) == fold(text)]
    if by_display:
        return by_display
    suffix = [t for t in tables if fold(t.display).endswith("." + fold(text))]
    return suffix or [t for t in tables if fold(t.name) == fold(_strip(wanted))]


def entity_details(service: KtxIndex, connection_id: str, entities: list[dict[str, Any]]) -> EntityDetailsResult:
    service.require_connection(connection_id)
    if not 1 <= len(entities) <= MAX_ENTITIES:
        raise InvalidInput(f"{len(entities)} entities sent", f"send 1 to {MAX_ENTITIES} per call")
    store = service.refreshed_engine().store
    tables = [TableName(*row) for row in store.table_refs(connection_id)]
    out = []
    for entity in entities:
        item = EntityDetails(ok=False, connectionId=connection_id, input=entity)
        if not tables:
            item.code, item.message = (
                "scan_missing",
                (f"no scan snapshot for connection '{connection_id}'; run `ktx scan {connection_id}` and rebuild"),
            )
            out.append(item)
            continue
        try:
            wanted = parse_table_input(entity.get("table") if isinstance(entity, dict) else entity)
        except InvalidInput as exc:
            item.code, item.message = "invalid_table_ref", str(exc)
            out.append(item)
            continue
        hits = _resolve(tables, wanted)
        label = wanted if isinstance(wanted, str) else ".".join(p for p in wanted if p)
        if len(hits) != 1:
            item.code = "ambiguous_table" if hits else "table_not_found"
            displays = [t.display for t in tables]
            item.candidates = sorted(t.display for t in hits) or nearest(label, displays, 8) or sorted(displays)[:20]
            item.message = (
                f"'{label}' matches {len(hits)} tables; send one of the candidates"
                if hits
                else f"no table '{label}' in the latest scan of '{connection_id}'; send one of the candidates"
            )
            out.append(item)
            continue
        out.append(_details(store, store.get(hits[0].uid), entity, connection_id))
    return EntityDetailsResult(entities=out)


def _details(store: Any, table: Document, entity: Any, connection_id: str) -> EntityDetails:
    attrs = table.attrs
    columns = {d.name: d for d in store.scope_siblings(table.uid, "column")}
    wanted = entity.get("columns") if isinstance(entity, dict) else None
    item = EntityDetails(ok=True, connectionId=connection_id, input=entity)
    names = [n for n in attrs.get("columns", []) if n in columns]  # the table's own column order
    if wanted:
        by_folded = {n.casefold(): n for n in names}
        missing = [w for w in wanted if str(w).casefold() not in by_folded]
        if missing:
            item.ok, item.code = False, "column_not_found"
            item.message = f"no column {', '.join(map(repr, missing))} in {table.display}"
            item.candidates = names
            return item
        names = [by_folded[str(w).casefold()] for w in wanted]
    details = []
    for name in names:
        doc = columns[name]
        details.append(
            ColumnDetails(
                **{key: doc.attrs.get(key) for key in COLUMN_FIELDS if key != "name"},
                name=name,
                description=doc.description or None,
                sampleValues=doc.sample_values,
                distinctCount=doc.attrs.get("distinctCount"),
                nullRate=doc.attrs.get("nullRate"),
            )
        )
    snapshot = attrs.get("snapshot") or {}
    item.tableRef = TableRefOut(**table.table_ref.model_dump())
    item.display, item.kind, item.columns = table.display, attrs.get("kind"), details
    item.comment = table.comment or None
    item.description = table.description or table.summary
    item.estimatedRows = attrs.get("estimatedRows")
    item.profiledRows = attrs.get("profiledRows")
    item.foreignKeys = attrs.get("foreignKeys", [])
    item.snapshot = Snapshot(**{k: snapshot.get(k) for k in ("syncId", "extractedAt", "scanRunId")})
    return item


# ------------------------------------------------------------------ connection_list


def connection_list(service: KtxIndex) -> ConnectionListResult:
    return ConnectionListResult(
        connections=[
            ConnectionEntry(
                id=c.id,
                name=c.id,
                connectionType=CONNECTION_TYPES.get(c.driver or "", (c.driver or "unknown").upper()),
                driver=c.driver,
                declared=c.declared,
                counts=c.counts,
            )
            for c in service.connections()
        ]
    )
