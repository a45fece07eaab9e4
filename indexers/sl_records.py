"""Semantic-layer source records for one connection: standalone files, ``_schema`` manifest
projections, and overlays composed onto their base by ``name`` (KTX reference §1.4).

Unlike KTX, overlays are applied after every base is known (so file order does not
matter), an overlay without a base is reported instead of dropped, and a broken
manifest shard only loses its own sources.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeGuard

import yaml

from indexers.base import as_str_list, first_few
from indexers.files import SourceError, UnlistedFolder, list_files, parse_yaml, read_hand_edited
from indexers.models import Diagnostic, Document, file_of
from indexers.project import Project
from indexers.sl_shapes import left_out, shape_diagnostics, shape_of

DESCRIPTION_ORDER = ("user", "ai", "dbt", "db")
OVERLAY_KEYS = {
    "name", "descriptions", "grain", "columns", "column_overrides", "joins", "measures", "segments",
    "exclude_columns", "disable_joins", "default_time_dimension", "usage",
}  # fmt: skip
#: What a standalone source may hold (KTX's source fields; a manifest entry's are its own).
SOURCE_KEYS = OVERLAY_KEYS | {
    "table", "sql", "source_type", "inherits_columns_from", "description", "tags", "freshness",
}  # fmt: skip
#: Keys written for another one, named in the warning of a source that holds them.
MEANT = {"dimensions": "columns", "dimension": "columns", "metrics": "measures", "metric": "measures"}


def unknown_keys(data: dict[str, Any], known: set[str], what: str) -> list[str]:
    """The keys of a source or overlay KTX does not read, each a warning: ``dimensions:`` left its dimensions
    unindexed without a word (an outside pass)."""
    out = []
    for key in data:
        if key not in known:
            hint = f" (did you mean '{MEANT[key]}:'?)" if key in MEANT else ""
            out.append(f"unknown {what} key '{key}' ignored{hint}")
    return out


@dataclass
class SourceRecord:
    connection_id: str
    name: str
    path: str
    origin: str  # standalone | manifest | broken
    data: dict[str, Any]
    raw_text: str | None = None
    overlays: list[str] = field(default_factory=list)

    @property
    def files(self) -> list[str]:
        return [file_of(self.path), *self.overlays]

    def yaml_text(self) -> str:
        """What sl_read_source returns: the raw file, or the composed document re-serialised."""
        if self.raw_text is not None and not self.overlays:
            return self.raw_text
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # the C emitter: same output, 5x faster
        return yaml.dump(self.data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=10**9, indent=2)


def normalize_descriptions(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, text in value.items():
        if isinstance(text, (str, int, float)) and str(text).strip():
            out[str(key)] = str(text).strip()
    return out


def resolve_description(value: Any, fallback: Any = None) -> str:
    """user > ai > dbt > db, then any other key, then a legacy flat ``description``."""
    descriptions = normalize_descriptions(value)
    for key in DESCRIPTION_ORDER:
        if key in descriptions:
            return descriptions[key]
    if descriptions:
        return next(iter(descriptions.values()))
    return fallback.strip() if isinstance(fallback, str) else ""


def dict_list(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _norm_on(text: Any) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip().lower()


def project_manifest_entry(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    columns = []
    for column in dict_list(entry.get("columns")):
        projected = dict(column)
        if projected.get("type") == "time":
            projected.setdefault("role", "time")
        columns.append(projected)
    pk = [c["name"] for c in columns if c.get("pk") and isinstance(c.get("name"), str)]
    source: dict[str, Any] = {"name": name, "table": entry.get("table") or name}
    if entry.get("descriptions"):
        source["descriptions"] = entry["descriptions"]
    source["grain"] = pk or [c["name"] for c in columns if isinstance(c.get("name"), str)]
    source["columns"] = columns
    source["joins"] = dict_list(entry.get("joins"))
    source["measures"] = []
    for key in ("tags", "freshness", "usage"):
        if entry.get(key) is not None:
            source[key] = entry[key]
    return source


def compose_overlay(base: dict[str, Any], overlay: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Apply one overlay; returns the composed source and problems worth reporting."""
    problems = unknown_keys(overlay, OVERLAY_KEYS, "overlay")
    out = copy.deepcopy(base)
    if "descriptions" in overlay:
        merged = normalize_descriptions(out.get("descriptions"))
        merged.update(normalize_descriptions(overlay["descriptions"]))
        out["descriptions"] = merged
    for key in ("grain", "measures", "segments", "default_time_dimension", "usage"):
        if key in overlay:
            out[key] = copy.deepcopy(overlay[key])
    columns = dict_list(out.get("columns"))
    by_name = {c["name"]: c for c in columns if isinstance(c.get("name"), str)}
    for patch in dict_list(overlay.get("column_overrides")):
        target = by_name.get(patch["name"]) if isinstance(patch.get("name"), str) else None
        if target is None:
            problems.append(f"column_overrides: no column '{patch.get('name')}' in the base source")
            continue
        for key, value in patch.items():
            if key == "descriptions":
                merged = normalize_descriptions(target.get("descriptions"))
                merged.update(normalize_descriptions(value))
                target["descriptions"] = merged
            elif key != "name":
                target[key] = copy.deepcopy(value)
    for computed in dict_list(overlay.get("columns")):
        if not isinstance(computed.get("name"), str):
            problems.append("columns: a computed column needs a string 'name'")
            continue
        if computed["name"] in by_name:
            problems.append(f"columns: '{computed.get('name')}' already exists; use column_overrides")
            continue
        columns.append(copy.deepcopy(computed))
        by_name[computed["name"]] = computed
    excluded = set(as_str_list(overlay.get("exclude_columns")))
    out["columns"] = [c for c in columns if not (isinstance(c.get("name"), str) and c["name"] in excluded)]
    joins = dict_list(out.get("joins"))
    seen = {(str(j.get("to")), _norm_on(j.get("on"))) for j in joins}
    for join in dict_list(overlay.get("joins")):
        key = (str(join.get("to")), _norm_on(join.get("on")))
        if key not in seen:
            joins.append(copy.deepcopy(join))
            seen.add(key)
    disabled = {_norm_on(on) for on in as_str_list(overlay.get("disable_joins"))}
    out["joins"] = [j for j in joins if _norm_on(j.get("on")) not in disabled]
    return out, problems


def broken_source_name(rel: str, text: str) -> str:
    """The name KTX registers a file that does not parse under: its ``name:`` line, else its file's stem."""
    match = re.search(r"^name:\s*['\"]?([^'\"\n#]+?)['\"]?\s*(?:#.*)?$", text, re.MULTILINE)
    return match.group(1).strip() if match else rel.rsplit("/", 1)[1].rsplit(".", 1)[0]


#: The files a semantic layer is read from.
YAML_SUFFIXES = (".yaml", ".yml")


def connection_files(project: Project, connection_id: str) -> list[str]:
    return list_files(project, f"semantic-layer/{connection_id}", YAML_SUFFIXES, recursive=True)


def schema_folder(connection_id: str) -> str:
    return f"semantic-layer/{connection_id}/_schema"


def is_schema_shard(connection_id: str, rel: str) -> bool:
    """Whether a file of the connection's semantic layer is a ``_schema`` manifest shard: any YAML file under
    ``_schema/``, in a folder below it too. The one rule for the sources (``load_records``), the scanned tables'
    descriptions (``schema_shards``) and ``sl_read_source``: the scan indexer once listed ``_schema/`` alone, so a
    shard in a subfolder gave a source but no table description."""
    return rel.startswith(f"{schema_folder(connection_id)}/") and rel.endswith(YAML_SUFFIXES)


def is_manifest_entry(connection_id: str, path: str) -> bool:
    """Whether a semantic-layer source (its document's ``path``) is a ``_schema`` manifest entry: the scan wrote it,
    its ``table:`` line included, even when a user's overlay adds to it (an overlay cannot set ``table:``). Read from
    the path alone, so the store picks sources by it without reading the others (``index/checks.py``)."""
    return is_schema_shard(connection_id, file_of(path))


def hand_written(source: Document) -> bool:
    """Whether a person wrote any of a semantic-layer source: its own file or one of its overlays (its document's
    ``files``) lies outside ``_schema/``. The one rule for which sources say what a user wrote: entity_details
    describes a table by such a source before the scan's bare manifest entry. A manifest entry with a user's overlay
    is one, but its ``table:`` is still the scan's: the check of a source's ``table:`` against the scans
    (``semantic_layer.unscanned_sources``) reads the sources that are no manifest entry (``is_manifest_entry``)."""
    conn = source.connection_id or ""
    return any(not is_schema_shard(conn, rel) for rel in source.attrs.get("files") or [file_of(source.path)])


def schema_shards(project: Project, connection_id: str, unlisted: list[UnlistedFolder] | None = None) -> list[str]:
    """The connection's ``_schema`` manifest shards (``is_schema_shard``), sorted; raises ``UnlistedFolder`` as
    ``list_files`` does, or, given ``unlisted``, for ``_schema/`` alone."""
    return list_files(project, schema_folder(connection_id), YAML_SUFFIXES, recursive=True, unlisted=unlisted)


class ConnectionRead(NamedTuple):
    records: dict[str, SourceRecord]
    diagnostics: list[Diagnostic]
    #: file or folder → why what it held is kept (ScopeResult.kept): a file with a field of the wrong shape keeps what
    #: that field held; the folder, when a file outside ``_schema`` cannot be read (it may be an overlay adding to
    #: another source, whose additions stay, stale, until it is read again).
    held: dict[str, str]


def load_records(project: Project, connection_id: str) -> ConnectionRead:
    """Every source of one connection by name. Broken files become diagnostics (and a
    ``broken`` placeholder, so sl_read_source can still show the file)."""
    records: dict[str, SourceRecord] = {}
    diagnostics: list[Diagnostic] = []
    overlays: list[tuple[str, dict[str, Any]]] = []
    try:
        paths = connection_files(project, connection_id)
    except UnlistedFolder as exc:  # listed a moment ago: the builder keeps what the connection held
        return ConnectionRead({}, exc.holding(f"semantic-layer/{connection_id}", "the semantic layer"), {})
    unread: list[tuple[str, str]] = []  # files outside _schema that cannot be read or parsed, and why
    unparsed: dict[str, str | None] = {}  # shards that cannot be read or parsed → their text (None: not read)
    for rel in paths:
        try:
            text, decoded = read_hand_edited(project, rel)
        except SourceError as exc:
            diagnostics.append(Diagnostic(path=rel, message=str(exc), code="parse_error"))
            if not is_schema_shard(connection_id, rel):
                unread.append((rel, str(exc)))
            else:
                unparsed[rel] = None
            continue
        if decoded:
            diagnostics.append(Diagnostic(path=rel, message=decoded, code="warning"))
        try:
            data = parse_yaml(text)
        except SourceError as exc:
            diagnostics.append(Diagnostic(path=rel, message=str(exc), code="parse_error"))
            if not is_schema_shard(connection_id, rel):
                unread.append((rel, str(exc)))
                name = broken_source_name(rel, text)
                records.setdefault(name, SourceRecord(connection_id, name, rel, "broken", {"name": name}, text))
            else:
                unparsed[rel] = text
            continue
        if is_schema_shard(connection_id, rel):
            tables = data.get("tables") if isinstance(data, dict) else None
            if not isinstance(tables, dict):
                diagnostics.append(
                    Diagnostic(path=rel, message="manifest shard has no 'tables' mapping", code="parse_error")
                )
                unparsed[rel] = text
                continue
            for name, entry in tables.items():
                if not isinstance(entry, dict):
                    diagnostics.append(Diagnostic(path=rel, message=f"tables.{name}: expected a mapping"))
                    continue
                diagnostics.extend(shape_diagnostics(rel, entry, f"tables.{name}."))
                name = str(name)
                if standalone(records.get(name)):  # whichever file sorts first: paths sort '_schema/' after 'Orders'
                    continue
                records[name] = SourceRecord(
                    connection_id, name, f"{rel}#{name}", "manifest", project_manifest_entry(name, entry)
                )
            continue
        if not isinstance(data, dict):  # as a file that does not parse: perhaps an overlay of another source
            got = "the file is empty" if data is None else f"got {type(data).__name__}"
            message = f"source file must be a YAML mapping ({got})"
            diagnostics.append(Diagnostic(path=rel, message=message, code="parse_error"))
            unread.append((rel, message))
            name = broken_source_name(rel, text)
            records.setdefault(name, SourceRecord(connection_id, name, rel, "broken", {"name": name}, text))
            continue
        name = data.get("name")
        if isinstance(name, (int, float)) and not isinstance(name, bool):  # `name: 2024` meant the text
            diagnostics.append(
                Diagnostic(path=rel, code="warning", message=f"'name: {name}' is a number; read as '{name}' (quote it)")
            )
            name = str(name)
            data = {**data, "name": name}
        if not isinstance(name, str) or not name.strip():
            fallback = rel.rsplit("/", 1)[1].rsplit(".", 1)[0]
            said = "no 'name:'" if name is None or isinstance(name, str) else f"'name:' is {shape_of(name)}, not text"
            diagnostics.append(
                Diagnostic(path=rel, code="warning", message=f"{said}; using the file name '{fallback}'")
            )
            name = fallback
            data = {**data, "name": name}
        diagnostics.extend(shape_diagnostics(rel, data))
        if "table" in data or "sql" in data:
            diagnostics.extend(
                Diagnostic(path=rel, code="warning", message=m) for m in unknown_keys(data, SOURCE_KEYS, "source")
            )
            earlier = records.get(name)
            if standalone(earlier):  # KTX reads the later file alone, silently
                # (one over a manifest entry is how a hand-written definition takes a scanned table over: no warning)
                message = (
                    f"source '{name}' is also defined in {earlier.path}; this file replaces it (the later file wins, "
                    "as KTX reads them): rename one, or make this one an overlay (no 'table:' or 'sql:')"
                )
                diagnostics.append(Diagnostic(path=rel, message=message, code="warning"))
            records[name] = SourceRecord(connection_id, name, rel, "standalone", data, text)
        else:
            overlays.append((rel, data))
    for name in [n for n in records if not safe_source_name(n)]:
        record = records.pop(name)
        diagnostics.append(
            Diagnostic(
                path=file_of(record.path),
                message=f"source name {name!r} holds a path ('/', '\\' or '..'); the source is not indexed: "
                "rename it (an agent passes the name back to sl_read_source and KTX's other tools)",
                code="parse_error",
            )
        )
    diagnostics.extend(_apply_overlays(records, overlays, unparsed))
    held = {}
    if unread:  # what an unread overlay added to a source elsewhere (its measures, say) is kept, stale
        folder = f"semantic-layer/{connection_id}"
        files = "; ".join(f"{rel.removeprefix(f'{folder}/')} ({why})" for rel, why in unread[:3])
        more = f" and {len(unread) - 3} more" if len(unread) > 3 else ""
        verb = "does" if len(unread) == 1 else "do"
        held[folder] = f"{files}{more} {verb} not parse or cannot be read, and may add to this source"
    held.update(left_out(diagnostics))
    return ConnectionRead(dict(sorted(records.items())), diagnostics, held)


def _apply_overlays(
    records: dict[str, SourceRecord], overlays: list[tuple[str, dict[str, Any]]], unparsed: dict[str, str | None]
) -> list[Diagnostic]:
    """Compose each overlay onto its base, and say why one cannot be. An overlay whose base is in a file that does
    not parse (its own, or a shard of ``unparsed`` that holds its name or cannot be read) waits for that file, a
    warning: "no base source" was wrong there, as the source is still served from its last good version."""
    diagnostics = []
    for rel, overlay in overlays:
        name = overlay["name"]
        base = records.get(name)
        if base is not None and base.origin != "broken":
            base.data, problems = compose_overlay(base.data, overlay)
            base.overlays.append(rel)
            diagnostics.extend(Diagnostic(path=rel, message=p, code="warning") for p in problems)
        elif waiting := f"{base.path}, which holds" if base is not None else _shard_naming(name, unparsed):
            message = f"overlay for '{name}' is not applied while {waiting} its base source, does not parse; fix it"
            diagnostics.append(Diagnostic(path=rel, message=message, code="warning"))
        else:
            message = (
                f"overlay for '{name}' has no base source (known: {first_few(sorted(records), 8) or 'none'}); "
                "it needs a manifest entry or a file with 'table:' or 'sql:'"
            )
            diagnostics.append(Diagnostic(path=rel, message=message))
    return diagnostics


def _shard_naming(name: str, unparsed: dict[str, str | None]) -> str | None:
    """The first shard that does not parse and names ``name`` as a key (``  flt_leg:``), or cannot be read (it
    may), as a message says it ("<shard>, which holds"): where an overlay's base is while the shard is broken."""
    key = re.compile(rf"^\s+['\"]?{re.escape(name)}['\"]?\s*:", re.MULTILINE)
    for rel, text in unparsed.items():
        if text is None or key.search(text):
            return f"{rel}, which {'may hold' if text is None else 'holds'}"
    return None


def standalone(record: SourceRecord | None) -> TypeGuard[SourceRecord]:
    """Whether a record is a standalone source (a file with ``table:`` or ``sql:``): it takes its scanned manifest
    entry over, whether its file sorts before ``_schema/`` (``Orders.yaml``, ``2024/orders.yaml``) or after it. Of an
    indexed source, ``hand_written`` says whether a person wrote any of it."""
    return record is not None and record.origin == "standalone"


def safe_source_name(name: str) -> bool:
    """Whether a source's name can be handed to an agent as an id: no path separator and no ``..`` in it."""
    return "/" not in name and "\\" not in name and ".." not in name
