"""Parsed scan artifacts shared by many table scopes (the relationship profile and the
``_schema`` shards), cached by file identity so each is parsed once per change."""

from __future__ import annotations

from typing import Any

from indexers.base import ScopeResult
from indexers.files import SourceError, read_json, read_yaml
from indexers.models import TableRef
from indexers.project import Project
from indexers.sl_records import dict_list, resolve_description

ProfileIndex = dict[str, dict[str, dict[str, Any]]]  # table key → column name → profile entry
ShardIndex = dict[str, tuple[str, dict[str, str]]]  # table key → (description, column → description)


def table_key(ref: TableRef) -> str:
    return ref.display.casefold()


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
        index, error = self._load(project, rel, _parse_profile)
        if error:
            result.problem(rel, error, code="parse_error")
        return index

    def warm(self, project: Project, profiles: tuple[str, ...], shards: tuple[str, ...]) -> None:
        """Load these files into the cache (already cached ones cost a stat)."""
        for rel in profiles:
            self._load(project, rel, _parse_profile)
        for rel in shards:
            self._load(project, rel, _parse_shard)

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


def _parse_profile(project: Project, rel: str) -> ProfileIndex:
    data = read_json(project, rel)
    if not isinstance(data, dict):
        raise SourceError("relationship profile must be a JSON object")
    columns = data.get("columns") or {}
    if not isinstance(columns, dict):
        raise SourceError("relationship profile 'columns' must be an object keyed '<table>.<column>'")
    index: ProfileIndex = {}
    for key, entry in columns.items():
        if not isinstance(entry, dict):
            continue
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
            continue
        if not isinstance(column, str):
            column = str(key).rsplit(".", 1)[-1]
        index.setdefault(table_key(ref), {})[column] = entry
    return index


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
            str(c.get("name")).casefold(): resolve_description(c.get("descriptions"))
            for c in dict_list(entry.get("columns"))
            if c.get("name")
        }
        index[table.casefold()] = (resolve_description(entry.get("descriptions")), columns)
    return index
