"""Warehouse scan snapshots (``raw-sources/<conn>/live-database/<syncId>/``) → ``table``,
``column``, ``dictionary_value`` and one ``snapshot`` document per connection.

Each table comes from the newest *complete* sync (one with ``scan-report.json``) that
holds it, so a partial rescan never hides the other tables. Column statistics and
sample values come from the newest relationship profile that covers the table;
descriptions from the table file, else from the scan-generated ``_schema`` shards.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from indexers.base import Indexer, Scope, ScopeResult, clean_text, first_few, jsonable
from indexers.files import SourceError, UnlistedFolder, exists, is_file, list_dirs, list_files, read_json
from indexers.models import Diagnostic, Document, TableRef, make_uid, member_document, value_document
from indexers.project import Project
from indexers.scan_artifacts import ArtifactCache, column_key, run_id, table_key
from indexers.sl_records import resolve_description, schema_shards

#: KTX's dictionary filters (reference §2.4), with the type gate widened to wrapped and
#: vendor string types (citext, tinytext, LowCardinality(String), ...), and without its cap of 200 distinct
#: values: a column of many values (a ship-to's name, a location) is searched through its sample too, where KTX
#: answered ``value_not_in_sample`` for a value the sample holds; its ``cardinality`` says how partial it is.
DICTIONARY_TYPE = re.compile(r"(char|text|string|enum|bool)", re.IGNORECASE)
EXCLUDED_NAMES = re.compile(
    r"(_id$|_uuid$|_key$|_hash$|_token$|^id$|^uuid$|_at$|_date$|_time$|description$|comment$|notes?$|"
    r"message$|body$|content$|_url$|_path$|email$|^phone|address$)",
    re.IGNORECASE,
)


def is_dictionary_column(column: str, entry: dict[str, Any]) -> bool:
    col_type = str(entry.get("normalizedType") or entry.get("nativeType") or "")
    return bool(DICTIONARY_TYPE.search(col_type)) and not EXCLUDED_NAMES.search(column)


def sample_strings(values: Any) -> list[str]:
    """Stringify, trim, drop empties and case-insensitive duplicates (first spelling kept)."""
    seen: set[str] = set()
    out = []
    for value in values if isinstance(values, list) else []:
        if value is None or isinstance(value, (dict, list)):
            continue
        text = str(value).strip()
        if text and text.casefold() not in seen:
            seen.add(text.casefold())
            out.append(text)
    return out


def _typed(value: Any, kind: type) -> Any:
    """The value if it has the type the scan format promises (bool is not an int), else None."""
    if kind is float:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if kind is int and isinstance(value, bool):
        return None
    return value if isinstance(value, kind) else None


COLUMN_FIELDS = {
    "name": str, "nativeType": str, "normalizedType": str, "dimensionType": str,
    "nullable": bool, "primaryKey": bool, "comment": str,
}  # fmt: skip
PROFILE_FIELDS = {"distinctCount": int, "nullCount": int, "rowCount": int, "nullRate": float}


#: Where a snapshot keeps its relationship profile, under its folder.
PROFILE_FILE = "enrichment/relationship-profile.json"
#: A snapshot's files that say when it was taken: connection.json's extractedAt, else scan-report.json's createdAt.
SCAN_TIME_FILES = ("connection.json", "scan-report.json")
#: What a foreign key must name for a join to be written from it (snapshot/joins.py, entity_details).
FOREIGN_KEY_FIELDS = ("fromColumn", "toTable", "toColumn")


def foreign_keys(value: Any, rel: str, result: ScopeResult) -> list[dict[str, Any]]:
    """A table's foreign keys that name a column, the table and the column it references; the others are
    reported (a join cannot be written from them) and left out."""
    if value is None:
        return []
    if not isinstance(value, list):
        result.problem(rel, "'foreignKeys' must be a list; the table is indexed without foreign keys", code="warning")
        return []
    kept = [fk for fk in value if isinstance(fk, dict) and all(isinstance(fk.get(k), str) for k in FOREIGN_KEY_FIELDS)]
    if len(kept) != len(value):
        skipped = len(value) - len(kept)
        result.problem(
            rel,
            f"{skipped} foreign key(s) without a string fromColumn, toTable and toColumn were skipped",
            code="warning",
        )
    return kept


def unread_tables(diagnostics: Iterable[Diagnostic]) -> set[str]:
    """The connections whose scan lists a table file that gives no table (a ``parse_error`` on
    ``raw-sources/<conn>/live-database/<syncId>/tables/<file>``: truncated, unreadable, not a table): which table it
    holds is unknown until it parses, so no one can say that the scan does not hold a table a source reads."""
    out = set()
    for diag in diagnostics:
        parts = diag.path.split("/")
        if diag.code == "parse_error" and len(parts) == 6 and parts[::2] == ["raw-sources", "live-database", "tables"]:
            out.add(parts[1])
    return out


def profile_snapshot(rel: str) -> str:
    """The folder of the snapshot whose relationship profile is at ``rel``."""
    return rel.removesuffix(f"/{PROFILE_FILE}")


def listed_columns(names: list[str], most: int = 5) -> str:
    """'column a', 'columns a, b' or 'columns a, b, c, d, e and 3 more'."""
    return f"column {names[0]}" if len(names) == 1 else f"columns {first_few(names, most)}"


#: The table fields a scan writes, besides its columns', and their types.
TABLE_FIELDS = {"kind": str, "estimatedRows": int, "comment": str}


def mistyped(data: dict[str, Any], fields: dict[str, type], where: str = "") -> list[str]:
    """The fields of ``data`` that hold a value of another type than the scan format's (``_typed`` reads them as
    unknown), each with the value it holds: ``estimatedRows ('lots')``."""
    return [
        f"{where}{key} ({str(data[key])[:20]!r})"
        for key, kind in fields.items()
        if data.get(key) is not None and _typed(data[key], kind) is None
    ]


def column_metadata(column: dict[str, Any]) -> dict[str, Any]:
    return {key: _typed(column.get(key), kind) for key, kind in COLUMN_FIELDS.items()}


def profile_stats(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: _typed(entry.get(key), kind) for key, kind in PROFILE_FIELDS.items() if key in entry}


class ScanIndexer(Indexer):
    family = "scan"

    def __init__(self) -> None:
        self.cache = ArtifactCache()

    def scopes(self, project: Project) -> tuple[list[Scope], list[Diagnostic]]:
        scopes: list[Scope] = []
        diagnostics: list[Diagnostic] = []
        for conn in project.connection_ids:
            try:
                listed = self._list_connection(project, conn, diagnostics)
            except UnlistedFolder as exc:
                diagnostics.extend(exc.holding(f"raw-sources/{conn}", "the scan"))
                continue
            if listed is None:
                continue
            complete, profiles, shards, chosen = listed
            newest = complete[0]
            context = (("connection", conn), ("profiles", profiles), ("shards", shards))
            profiled = [profile_snapshot(rel) for rel in profiles]  # their scans date them (profiledAt)
            dating = [f"{sync}/{name}" for sync in profiled if sync != newest for name in SCAN_TIME_FILES]
            scopes.append(
                Scope(
                    self.family,
                    f"scan:{conn}",
                    (f"{newest}/scan-report.json", f"{newest}/connection.json", *profiles, *dating),
                    (*context, ("sync", newest), ("tables", len(chosen))),
                )
            )
            for name in sorted(chosen):
                sync = chosen[name]
                scopes.append(
                    Scope(
                        self.family,
                        f"scan:{conn}:{name}",
                        (
                            f"{sync}/tables/{name}",
                            f"{sync}/connection.json",
                            f"{sync}/scan-report.json",
                            *profiles,
                            *shards,
                        ),
                        (*context, ("sync", sync)),
                    )
                )
        return scopes, diagnostics

    def _list_connection(
        self, project: Project, conn: str, diagnostics: list[Diagnostic]
    ) -> tuple[list[str], tuple[str, ...], tuple[str, ...], dict[str, str]] | None:
        """The complete snapshots of one connection (newest first), their profiles, the connection's ``_schema``
        shards and each table file's newest snapshot; None when no snapshot is complete."""
        base = f"raw-sources/{conn}/live-database"
        complete: list[str] = []
        incomplete: list[str] = []
        for sync in sorted(list_dirs(project, base), reverse=True):
            if exists(project, f"{base}/{sync}/scan-report.json"):
                complete.append(f"{base}/{sync}")
            else:
                incomplete.append(f"{base}/{sync}")
        if not complete:
            if incomplete:  # a scan still running, or one that died before its report: nothing to fall back on
                tables = len(list_files(project, f"{incomplete[0]}/tables", (".json",)))
                diagnostics.append(
                    Diagnostic(
                        path=incomplete[0],
                        code="parse_error",
                        message=f"no scan-report.json (scan incomplete) and no older complete snapshot of "
                        f"connection '{conn}': its {tables} table file(s) are not indexed; finish or re-run the scan",
                    )
                )
            return None
        for sync in incomplete:
            older = "an older snapshot is used" if sync > complete[-1] else "it is not read"
            diagnostics.append(
                Diagnostic(path=sync, code="warning", message=f"no scan-report.json yet (scan incomplete); {older}")
            )
        profiles = tuple(f"{sync}/{PROFILE_FILE}" for sync in complete if exists(project, f"{sync}/{PROFILE_FILE}"))
        shards = tuple(self._shards(project, conn, diagnostics))
        chosen: dict[str, str] = {}
        for sync in complete:
            for rel in list_files(project, f"{sync}/tables", (".json",)):
                chosen.setdefault(rel.rsplit("/", 1)[1], sync)
        return complete, profiles, shards, chosen

    @staticmethod
    def _shards(project: Project, conn: str, diagnostics: list[Diagnostic]) -> list[str]:
        """The connection's ``_schema`` shards that can be listed, each folder that cannot (a symlink loop, no
        permission) reported on its own: the scans are read without the descriptions it may hold, where the
        whole scan was held, unread, under a diagnostic that blamed ``raw-sources/<conn>``."""
        unlisted: list[UnlistedFolder] = []
        try:
            shards = schema_shards(project, conn, unlisted)
        except UnlistedFolder as exc:  # _schema/ itself
            shards, unlisted = [], [exc]
        diagnostics.extend(exc.diagnostic() for exc in unlisted)
        return shards

    def warm(self, project: Project, scopes: list[Scope]) -> None:
        """Parse every relationship profile, ``_schema`` shard and table's scan report once: a table edit reads them
        all (its descriptions may be in any shard), ~5 s at 100k columns when nothing is cached yet."""
        mine = [s for s in scopes if s.family == self.family and s.key.count(":") == 2]
        profiles = dict.fromkeys(rel for s in mine for rel in s.get("profiles"))
        shards = dict.fromkeys(rel for s in mine for rel in s.get("shards"))
        reports = dict.fromkeys(f"{s.get('sync')}/scan-report.json" for s in mine)
        self.cache.warm(project, tuple(profiles), tuple(shards), tuple(reports))

    def read(self, project: Project, scope: Scope) -> ScopeResult:
        if scope.key.count(":") == 1:
            return self._read_snapshot(project, scope)
        return self._read_table(project, scope)

    # ------------------------------------------------------------------ snapshot

    def _read_snapshot(self, project: Project, scope: Scope) -> ScopeResult:
        result = ScopeResult()
        conn: str = scope.get("connection")
        sync: str = scope.get("sync")
        report = self._json(project, f"{sync}/scan-report.json", result)
        info = self._json(project, f"{sync}/connection.json", result, optional=True)
        profile_syncs: list[str] = []
        newest_profile: str | None = None  # the folder of the newest snapshot whose profile parsed
        sampled_rows = 0
        values_per_column = 0
        for rel in scope.get("profiles"):
            profile = self.cache.profile(project, rel, result)
            if profile is None:
                continue
            profile_syncs.append(rel.split("/")[-3])
            newest_profile = newest_profile or profile_snapshot(rel)
            for entries in profile.values():
                for entry in entries.values():
                    if isinstance(entry.get("rowCount"), int):
                        sampled_rows = max(sampled_rows, entry["rowCount"])
                    values_per_column = max(values_per_column, len(sample_strings(entry.get("sampleValues"))))
        info, report = info or {}, report or {}
        profiled_at = None  # when the profile the dictionary reads was taken: its own scan's time, maybe an older one
        if newest_profile == sync:
            profiled_at = _typed(info.get("extractedAt"), str) or _typed(report.get("createdAt"), str)
        elif newest_profile is not None:
            own_info, own_report = (
                self._json(project, f"{newest_profile}/{name}", result, optional=True) or {} for name in SCAN_TIME_FILES
            )
            profiled_at = _typed(own_info.get("extractedAt"), str) or _typed(own_report.get("createdAt"), str)
        attrs = {
            "syncId": sync.rsplit("/", 1)[1],
            "driver": _typed(info.get("driver"), str) or _typed(report.get("driver"), str),
            "extractedAt": _typed(info.get("extractedAt"), str),
            "scanRunId": run_id(report),
            "mode": _typed(report.get("mode"), str),
            "createdAt": _typed(report.get("createdAt"), str),
            "tables": scope.get("tables"),
            "profileSyncIds": profile_syncs,
            "profiledAt": profiled_at,
            "sampledRows": sampled_rows or None,
            "valuesPerColumn": values_per_column or None,
        }
        result.documents.append(
            Document(
                uid=make_uid("snapshot", conn, conn),
                kind="snapshot",
                id=conn,
                connection_id=conn,
                path=f"{sync}/scan-report.json",
                name=conn,
                attrs=jsonable(attrs),
            )
        )
        return result

    # ------------------------------------------------------------------ tables

    def _read_table(self, project: Project, scope: Scope) -> ScopeResult:
        result = ScopeResult()
        conn: str = scope.get("connection")
        rel = scope.files[0]
        table = self._json(project, rel, result)
        if table is None:
            return result
        if not isinstance(table.get("name"), str) or not table["name"].strip():
            result.problem(rel, "table file must be an object with a non-empty 'name'", code="parse_error")
            return result
        if not isinstance(table.get("columns"), list):  # a scan always lists them: the file is not one (yet)
            got = "none" if "columns" not in table else type(table["columns"]).__name__
            result.problem(rel, f"table file must list its 'columns' (got {got})", code="parse_error")
            return result
        ref = TableRef(
            catalog=table.get("catalog") if isinstance(table.get("catalog"), str) else None,
            db=table.get("db") if isinstance(table.get("db"), str) else None,
            name=table["name"],
        )
        display = ref.display
        sync = scope.get("sync")
        info = self._json(project, f"{sync}/connection.json", result, optional=True) or {}
        profile_rows: dict[str, dict[str, Any]] = {}
        profile_sync = profiled_by = None
        unreadable = None
        for profile_rel in scope.get("profiles"):
            profile = self.cache.profile(project, profile_rel, result)
            if profile is None:
                unreadable = unreadable or profile_rel
            elif table_key(ref) in profile:
                profile_rows = profile[table_key(ref)]
                profile_sync, profiled_by = profile_rel.split("/")[-3], profile_rel
                break
        if unreadable:  # keep the sample values that newer profile gave this table (an older one may give others)
            result.kept[rel] = f"its sample values come from {unreadable}, which cannot be read"
        shard_table, shard_columns = self.cache.shard_descriptions(project, scope.get("shards"), display, result)
        raw_columns = table["columns"]
        columns = [c for c in raw_columns if isinstance(c, dict) and isinstance(c.get("name"), str)]
        if len(columns) != len(raw_columns):
            result.problem(rel, "some columns are not objects with a 'name'; they were skipped", code="warning")
        wrong = mistyped(table, TABLE_FIELDS) + [
            m for c in columns for m in mistyped(c, COLUMN_FIELDS, f"{c['name']}.")
        ]
        if wrong:  # read as unknown: say so, rather than a null or a false the scan never wrote
            result.problem(
                rel, f"{first_few(wrong, 5)}: not of the type a scan writes, read as unknown", code="warning"
            )
        comment = clean_text(table.get("comment"))
        description = resolve_description(table.get("descriptions")) or shard_table or comment
        snapshot = {
            "syncId": sync.rsplit("/", 1)[1],
            "extractedAt": _typed(info.get("extractedAt"), str),
            "scanRunId": self.cache.run_id(project, f"{sync}/scan-report.json"),
        }
        row_count = next((e.get("rowCount") for e in profile_rows.values() if isinstance(e.get("rowCount"), int)), None)
        docs = result.documents
        docs.append(
            Document(
                uid=make_uid("table", conn, display),
                kind="table",
                id=display,
                connection_id=conn,
                path=rel,
                name=ref.name,
                display=display,
                summary=description or None,
                description=description if description != comment else "",
                comment=comment,
                body=" ".join(c["name"] for c in columns),
                table_ref=ref,
                attrs=jsonable(
                    {
                        "kind": _typed(table.get("kind"), str),
                        "estimatedRows": _typed(table.get("estimatedRows"), int),
                        "profiledRows": row_count,
                        "driver": _typed(info.get("driver"), str),
                        "columns": [c["name"] for c in columns],
                        "foreignKeys": foreign_keys(table.get("foreignKeys"), rel, result),
                        "snapshot": snapshot,
                        "profileSyncId": profile_sync,
                    }
                ),
            )
        )
        for column in columns:
            name = column["name"]
            entry = profile_rows.get(name) or {}
            samples = sample_strings(column.get("sampleValues")) or sample_strings(entry.get("sampleValues"))
            col_comment = clean_text(column.get("comment"))
            col_description = (
                resolve_description(column.get("descriptions"))
                or shard_columns.get(column_key(name), "")
                or col_comment
            )
            docs.append(
                member_document(
                    "column",
                    conn,
                    display,
                    name,
                    rel,
                    col_description,
                    description=col_description if col_description != col_comment else "",
                    comment=col_comment,
                    sample_values=samples,
                    table_ref=ref,
                    column_name=name,
                    attrs=jsonable(column_metadata(column) | profile_stats(entry)),
                )
            )
            if entry and is_dictionary_column(name, entry):
                distinct = entry.get("distinctCount")
                for value in sample_strings(entry.get("sampleValues")):
                    attrs = {
                        "origin": "profile",
                        "sourceName": ref.name,
                        "cardinality": distinct if isinstance(distinct, (int, float)) else None,
                        "syncId": profile_sync,
                    }
                    docs.append(value_document(conn, display, name, value, rel, ref, attrs))
        unlisted = sorted(set(profile_rows) - {column["name"] for column in columns})
        if unlisted and profiled_by is not None:  # renamed or dropped since the profile ran: their values would vanish
            result.problem(
                profiled_by,
                f"profiles {listed_columns(unlisted)} of {display}, which its table file ({rel}) does not list: their "
                "sample values are not indexed; re-run the profile (ktx scan) if the columns were renamed",
                code="warning",
            )
        return result

    def _json(self, project: Project, rel: str, result: ScopeResult, optional: bool = False) -> dict[str, Any] | None:
        """A JSON object artifact, or None after reporting why it cannot be used."""
        if optional and not is_file(project, rel):
            return None
        try:
            data = read_json(project, rel)
        except SourceError as exc:
            result.problem(rel, str(exc), code="parse_error")
            return None
        if not isinstance(data, dict):
            result.problem(rel, f"expected a JSON object, found {type(data).__name__}", code="parse_error")
            return None
        return data
