"""Parsed scan artifacts shared by many table scopes (the relationship profile, the ``_schema`` shards and each
snapshot's scan report), cached by file identity so each is parsed once per change."""

from __future__ import annotations

from typing import Any

from indexers.base import ScopeResult, first_few
from indexers.files import SourceError, read_json, read_yaml
from indexers.models import TableRef
from indexers.project import Project
from indexers.sl_records import dict_list, resolve_description

ProfileIndex = dict[str, dict[str, dict[str, Any]]]  # table key → column name → profile entry
ShardIndex = dict[str, tuple[str, dict[str, str]]]  # table key → (description, column → description)


def table_key(ref: TableRef) -> str:
    return ref.display.casefold()


def run_id(report: dict[str, Any]) -> str | None:
    """The id of the scan run that took a snapshot, as its ``scan-report.json`` says: the one rule for the snapshot
    document and its tables' (a table's was cut from its folder's name, and the connection id's hyphens changed it)."""
    value = report.get("runId")
    return value if isinstance(value, str) else None


def column_key(name: str) -> str:
    """How a shard's column descriptions are keyed and looked up: one function for both, as the key was
    ``casefold()`` on one side and ``lower()`` on the other (a column ``Straße`` lost its description)."""
    return name.casefold()


class ArtifactCache:
    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple[int, int], Any, str | None]] = {}

    def _load(self, project: Project, rel: str, parse: Any) -> tuple[Any, str | None]:
        try:
            stat = (project.root / rel).stat()
            identity = (stat.st_mtime_ns, stat.st_size)
        except OSError as exc:
            return None, f"cannot stat: {exc.strerror or exc}"
        cached = self._entries.get(rel)
        if cached and cached[0] == identity:
            return cached[1], cached[2]
        try:
            value, error = parse(project, rel), None
        except SourceError as exc:
            value, error = None, str(exc)
        self._entries[rel] = (identity, value, error)
        return value, error

    def profile(self, project: Project, rel: str, result: ScopeResult) -> ProfileIndex | None:
        parsed, error = self._load(project, rel, _parse_profile)
        if error:
            result.problem(rel, error, code="parse_error")
            return None
        index, skipped = parsed
        if skipped:
            result.problem(rel, skipped, code="warning")
        return index

    def run_id(self, project: Project, rel: str) -> str | None:
        """The run id of the scan report at ``rel`` (``run_id``), None when it cannot be read. Every table of a
        snapshot asks it: a report holds KTX's relationships and warnings too (megabytes at 3,000 tables), and
        parsed per table it made a read 50 times slower. Not reported here: the newest snapshot's report is the
        snapshot document's, whose scope reports it once, where each of thousands of tables would repeat it."""
        return self._load(project, rel, _parse_run_id)[0]

    def warm(
        self, project: Project, profiles: tuple[str, ...], shards: tuple[str, ...], reports: tuple[str, ...] = ()
    ) -> None:
        """Load these files into the cache (already cached ones cost a stat)."""
        for rel in profiles:
            self._load(project, rel, _parse_profile)
        for rel in shards:
            self._load(project, rel, _parse_shard)
        for rel in reports:
            self._load(project, rel, _parse_run_id)

    def shard_descriptions(
        self, project: Project, shards: tuple[str, ...], display: str, result: ScopeResult
    ) -> tuple[str, dict[str, str]]:
        key = display.casefold()
        for rel in shards:
            index, error = self._load(project, rel, _parse_shard)
            if error:
                result.problem(rel, error, code="parse_error")
            if index and key in index:
                return index[key]
        return "", {}


def _parse_profile(project: Project, rel: str) -> tuple[ProfileIndex, str | None]:
    """The profile's entries by table and column, and what was left out of it, said once (None: nothing)."""
    data = read_json(project, rel)
    if not isinstance(data, dict):
        raise SourceError("relationship profile must be a JSON object")
    columns = data.get("columns") or {}
    if not isinstance(columns, dict):
        raise SourceError("relationship profile 'columns' must be an object keyed '<table>.<column>'")
    index: ProfileIndex = {}
    skipped: list[str] = []  # entries left out
    unlisted: list[str] = []  # entries whose sample values are not a list
    for key, entry in columns.items():
        if not isinstance(entry, dict):
            skipped.append(str(key))
            continue
        if "sampleValues" in entry and not isinstance(entry["sampleValues"], (list, type(None))):
            unlisted.append(str(key))
        table = entry.get("table")
        column = entry.get("column")
        if isinstance(table, dict) and isinstance(table.get("name"), str):
            ref = TableRef(
                catalog=table.get("catalog") if isinstance(table.get("catalog"), str) else None,
                db=table.get("db") if isinstance(table.get("db"), str) else None,
                name=table["name"],
            )
        elif "." in str(key):
            ref = TableRef(name=str(key).rsplit(".", 1)[0])
        else:
            skipped.append(str(key))
            continue
        if not isinstance(column, str):
            column = str(key).rsplit(".", 1)[-1]
        index.setdefault(table_key(ref), {})[column] = entry
    return index, _left_out(skipped, unlisted)


def _left_out(skipped: list[str], unlisted: list[str]) -> str | None:
    """What a profile's reader could not use, in one sentence naming the first few entries."""

    def named(keys: list[str]) -> str:
        return first_few([repr(k) for k in keys], 3)

    parts = []
    if skipped:
        parts.append(
            f"{len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} skipped ({named(skipped)}: an entry "
            "must be an object keyed '<table>.<column>' or naming its table)"
        )
    if unlisted:
        parts.append(f"sample values ignored where 'sampleValues' is not a list ({named(unlisted)})")
    return "; ".join(parts) or None


def _parse_run_id(project: Project, rel: str) -> str | None:
    """What a table reads of its snapshot's scan report: only its run id is kept, not the report."""
    data = read_json(project, rel)
    return run_id(data) if isinstance(data, dict) else None


def _parse_shard(project: Project, rel: str) -> ShardIndex:
    data = read_yaml(project, rel)
    tables = data.get("tables") if isinstance(data, dict) else None
    if not isinstance(tables, dict):
        raise SourceError("manifest shard has no 'tables' mapping")
    index: ShardIndex = {}
    for name, entry in tables.items():
        if not isinstance(entry, dict):
            continue
        table = str(entry.get("table") or name)
        columns = {
            column_key(str(c.get("name"))): resolve_description(c.get("descriptions"))
            for c in dict_list(entry.get("columns"))
            if c.get("name")
        }
        index[table.casefold()] = (resolve_description(entry.get("descriptions")), columns)
    return index
