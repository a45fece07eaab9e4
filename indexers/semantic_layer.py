"""Semantic-layer sources → ``sl_source``, ``sl_measure``, ``sl_dimension`` and dbt
``enum_values`` → ``dictionary_value`` documents. One scope per connection folder,
because overlays compose across files."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from indexers.base import Indexer, Scope, ScopeResult, as_str_list, clean_text, jsonable
from indexers.files import SAFE_ID, UnlistedFolder
from indexers.models import Diagnostic, Document, TableRef, make_uid, member_document, name_tails, value_document
from indexers.project import Project
from indexers.scans import unread_tables
from indexers.sl_records import SourceRecord, connection_files, dict_list, load_records, resolve_description
from indexers.sl_shapes import item_name, last_by_name


def table_ref_from_string(table: str) -> TableRef | None:
    parts = [p.strip().strip('"`[]') for p in table.split(".")]
    if not table.strip() or not all(parts):
        return None
    if len(parts) == 1:
        return TableRef(name=parts[0])
    if len(parts) == 2:
        return TableRef(db=parts[0], name=parts[1])
    return TableRef(catalog=parts[0], db=parts[1], name=".".join(parts[2:]))


#: A name in SQL: a column as a measure's expression or filter reads it (a qualified one's last part too), unless a
#: parenthesis follows it (a function: ``extract``, ``month(...)``).
SQL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_]*\s*\()")
#: A string literal: ``'paid'`` in ``status = 'paid'`` names no column.
SQL_STRING = re.compile(r"'(?:[^']|'')*'")


def measure_inputs(sql: str, columns: dict[str, str]) -> list[str]:
    """The source's columns a measure reads (``columns``: each name in lower case → as written), in the order its
    expression and filter name them: ``sum(closing_bal_gbp)`` reads closing_bal_gbp, ``status = 'paid'`` reads
    status and not a column named paid."""
    names = SQL_NAME.findall(SQL_STRING.sub(" ", sql))
    return list(dict.fromkeys(columns[n.casefold()] for n in names if n.casefold() in columns))


def unscanned_sources(
    sources: Iterable[Document], scanned: Mapping[str, Iterable[str]], diagnostics: Iterable[Diagnostic]
) -> list[Diagnostic]:
    """A warning on each of ``sources`` whose ``table:`` no scan of its connection holds (``scanned``: the display
    names of the tables each connection with a complete scan holds; another connection is not checked). Such a
    source is indexed, but its refs name a table entity_details cannot find, which nothing said (an outside pass).
    A connection whose scan has a table file that does not parse (``scans.unread_tables`` of the ``diagnostics``)
    is not checked: the table may be the one in that file, which inspect counted as missing while rebuild and
    status, whose store keeps the table's last good version, did not.
    ``sources``: the sources whose ``table:`` a person wrote, no manifest entry (``sl_records.is_manifest_entry``:
    its ``table:`` is the scan's own, an overlay on it too), as the callers pick them. A check across the semantic
    layer and the scans, so run where both are read: ``read_project``, and the index's ``ktx_index/index/checks.py``
    (which picks the sources by their path alone, without reading the scan's entries)."""
    unread = unread_tables(diagnostics)
    tails = {conn: {t for display in displays for t in name_tails(display)} for conn, displays in scanned.items()}
    out = []
    for doc in sources:
        conn, ref = doc.connection_id or "", doc.table_ref
        if ref is None or conn not in tails or conn in unread:
            continue
        if ref.display.casefold() not in tails[conn]:
            message = (
                f"source '{doc.id}' reads table {ref.display}, which no scan of connection '{conn}' holds (its refs "
                f"name a table entity_details cannot find); fix `table:` or rescan (`ktx scan {conn}`)"
            )
            out.append(Diagnostic(path=doc.path, message=message, code="warning"))
    return out


class SemanticLayerIndexer(Indexer):
    family = "semantic_layer"

    def scopes(self, project: Project) -> tuple[list[Scope], list[Diagnostic]]:
        scopes = []
        diagnostics: list[Diagnostic] = []
        for conn_id in project.connection_ids:
            try:
                files = connection_files(project, conn_id)
            except UnlistedFolder as exc:
                diagnostics.extend(exc.holding(f"semantic-layer/{conn_id}", "the semantic layer"))
                continue
            if files:
                scopes.append(Scope(self.family, f"sl:{conn_id}", tuple(files), (("connection", conn_id),)))
        return scopes, diagnostics

    def read(self, project: Project, scope: Scope) -> ScopeResult:
        result = ScopeResult()
        conn_id: str = scope.get("connection")
        if not SAFE_ID.match(conn_id):
            result.problem(f"semantic-layer/{conn_id}", f"unsafe connection id {conn_id!r}")
            return result
        records, diagnostics, held = load_records(project, conn_id)
        result.diagnostics.extend(diagnostics)
        result.kept.update(held)
        for record in records.values():
            if record.origin != "broken":
                result.documents.extend(self._documents(record))
        return result

    def _documents(self, record: SourceRecord) -> list[Document]:
        data = record.data
        conn = record.connection_id
        source = record.name
        columns = last_by_name(dict_list(data.get("columns")))
        measures = last_by_name(dict_list(data.get("measures")))
        joins = dict_list(data.get("joins"))
        table = clean_text(data.get("table"))
        sql = clean_text(data.get("sql"))
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        tags_field = data.get("tags")
        tags = as_str_list(tags_field.get("dbt")) if isinstance(tags_field, dict) else as_str_list(tags_field)
        description = resolve_description(data.get("descriptions"), data.get("description"))
        table_ref = table_ref_from_string(table) if table else None
        usage_text = " ".join(
            part
            for part in (
                clean_text(usage.get("narrative")),
                *(as_str_list(usage.get("commonFilters"))),
                *(as_str_list(usage.get("commonGroupBys"))),
            )
            if part
        )
        docs = [
            Document(
                uid=make_uid("sl_source", conn, source),
                kind="sl_source",
                id=source,
                connection_id=conn,
                path=record.path,
                name=source,
                display=table or sql[:500],
                summary=description or None,
                description=description,
                body=usage_text,
                tags=tags,
                table_ref=table_ref,
                attrs=jsonable(
                    {
                        "table": table or None,
                        "sql": bool(sql),
                        "columns": [item_name(c) for c in columns],
                        "measures": [item_name(m) for m in measures],
                        "joins": [
                            {"to": str(j["to"]), "on": clean_text(j.get("on")), "relationship": j.get("relationship")}
                            for j in joins
                            if j.get("to")
                        ],
                        "frequencyTier": usage.get("frequencyTier"),
                        "commonJoins": [
                            {"table": str(j["table"]), "on": as_str_list(j.get("on"))}
                            for j in dict_list(usage.get("commonJoins"))
                            if j.get("table")
                        ],
                        "files": record.files,
                        "yaml": record.yaml_text(),
                    }
                ),
            )
        ]
        by_name = {item_name(c).casefold(): item_name(c) for c in columns}
        for measure in measures:
            name = item_name(measure)
            expr = clean_text(measure.get("expr"))
            filt = clean_text(measure.get("filter"))
            text = clean_text(measure.get("description"))
            docs.append(
                member_document(
                    "sl_measure",
                    conn,
                    source,
                    name,
                    record.path,
                    text,
                    expr=f"{expr} where {filt}" if filt else expr,
                    table_ref=table_ref,
                    attrs={"source": source, "exprOnly": expr, "inputs": measure_inputs(f"{expr} {filt}", by_name)},
                )
            )
        for column in columns:
            name = item_name(column)
            enum = column.get("enum_values")
            values = list(dict.fromkeys(as_str_list(enum.get("dbt")) if isinstance(enum, dict) else as_str_list(enum)))
            text = resolve_description(column.get("descriptions"), column.get("description"))
            col_type = clean_text(column.get("type"))
            docs.append(
                member_document(
                    "sl_dimension",
                    conn,
                    source,
                    name,
                    record.path,
                    text,
                    expr=clean_text(column.get("expr")),
                    sample_values=values,
                    table_ref=table_ref,
                    column_name=name,
                    attrs={"source": source, "type": col_type, "table": table or None},
                )
            )
            attrs = jsonable({"origin": "dbt_enum", "sourceName": source, "cardinality": len(values)})
            docs.extend(value_document(conn, source, name, value, record.path, table_ref, attrs) for value in values)
        return docs
