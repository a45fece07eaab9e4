"""The indexer contract and the careful file reading every indexer shares.

An indexer splits its part of the project into *scopes* (a set of files that
are parsed together: one wiki page, one semantic-layer connection, one scanned
table) and turns one scope into documents plus diagnostics. The builder
fingerprints each scope's files, so an unchanged scope is never parsed again.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from indexers.models import Diagnostic, Document

if TYPE_CHECKING:
    from indexers.project import Project

SAFE_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]*$")


class SourceError(Exception):
    """A file that cannot be used; the message is the reason shown to the user."""


@dataclass(frozen=True)
class Scope:
    family: str
    key: str
    files: tuple[str, ...]
    #: Free-form data the indexer computed while listing (e.g. the chosen snapshot).
    context: tuple[tuple[str, Any], ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        return dict(self.context).get(name, default)


@dataclass
class ScopeResult:
    documents: list[Document] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def problem(self, path: str, message: str, code: str = "error") -> None:
        self.diagnostics.append(Diagnostic(path=path, message=message, code=code))


class Indexer(ABC):
    """Turns one family of project files into documents; knows nothing of the index."""

    family: ClassVar[str]

    @abstractmethod
    def scopes(self, project: Project) -> tuple[list[Scope], list[Diagnostic]]:
        """List the scopes present now (cheap: directory listings only)."""

    @abstractmethod
    def read(self, project: Project, scope: Scope) -> ScopeResult:
        """Parse one scope. Never raises for bad input: problems become diagnostics."""

    def warm(self, project: Project, scopes: list[Scope]) -> None:  # noqa: B027 - optional hook, no-op by default
        """Parse ahead what many scopes share (a long-lived watcher calls this once, so its first edit
        does not pay for it). Never raises for bad input."""


# --------------------------------------------------------------------------- reading


def read_text(project: Project, rel: str) -> str:
    """Read a project file as UTF-8 text, refusing anything unsafe or unusable."""
    path = project.root / rel
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise SourceError(f"cannot open: {exc.strerror or exc}") from exc
    if not real.is_relative_to(project.real_root):
        raise SourceError("symlink points outside the project; it is not read")
    try:
        size = real.stat().st_size
    except OSError as exc:
        raise SourceError(f"cannot stat: {exc.strerror or exc}") from exc
    limit = project.settings.max_file_bytes
    if size > limit:
        raise SourceError(
            f"file is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit "
            "(raise index.max_file_mb in ktx.yaml to read it)"
        )
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from exc
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes); expected UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not UTF-8 text (invalid byte at offset {exc.start})") from exc
    return text.removeprefix("\ufeff")


MAX_EXPANDED_NODES = 2_000_000


def _expanded_size(value: Any, memo: dict[int, int]) -> int:
    """Node count with YAML aliases expanded, computed without expanding them (memoised by identity)."""
    if not isinstance(value, (dict, list)):
        return 1
    key = id(value)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards against self-referencing anchors
    children = value.items() if isinstance(value, dict) else enumerate(value)
    total = 1 + sum(_expanded_size(child, memo) for _, child in children)
    memo[key] = total
    return total


def parse_yaml(text: str) -> Any:
    """Safe YAML parse that turns every failure, alias bombs included, into a SourceError."""
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(f"invalid YAML{where}: {problem}") from exc
    except RecursionError as exc:
        raise SourceError("YAML nested too deeply") from exc
    try:
        size = _expanded_size(data, {})
    except RecursionError as exc:
        raise SourceError("YAML nested too deeply") from exc
    if size > MAX_EXPANDED_NODES:
        raise SourceError(f"YAML expands to more than {MAX_EXPANDED_NODES:,} nodes (alias bomb?); not read")
    return data


def read_yaml(project: Project, rel: str) -> Any:
    return parse_yaml(read_text(project, rel))


def read_json(project: Project, rel: str) -> Any:
    text = read_text(project, rel)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise SourceError("JSON nested too deeply") from exc


def list_files(project: Project, rel_dir: str, suffixes: tuple[str, ...], recursive: bool = False) -> list[str]:
    """Project-relative POSIX paths under rel_dir with one of the suffixes, sorted; missing dir → []."""
    base = project.root / rel_dir
    if not base.is_dir():
        return []
    found: list[str] = []
    if recursive:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.endswith(suffixes) and not name.startswith("."):
                    found.append(Path(dirpath, name).relative_to(project.root).as_posix())
    else:
        for entry in os.scandir(base):
            if entry.name.endswith(suffixes) and not entry.name.startswith(".") and not entry.is_dir():
                found.append(f"{rel_dir}/{entry.name}")
    return sorted(found)


def list_dirs(project: Project, rel_dir: str) -> list[str]:
    base = project.root / rel_dir
    if not base.is_dir():
        return []
    return sorted(e.name for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))


MAX_JSON_DEPTH = 32


def jsonable(value: Any, depth: int = 0, _seen: frozenset[int] = frozenset()) -> Any:
    """YAML dates and other scalars → JSON-safe values (documents are stored as JSON).

    Depth is capped and YAML anchor cycles are cut, so no hostile file can make a
    document unserialisable."""
    if isinstance(value, (dict, list)):
        if depth >= MAX_JSON_DEPTH:
            return "[nested too deeply]"
        if id(value) in _seen:
            return "[circular reference]"
        seen = _seen | {id(value)}
        if isinstance(value, dict):
            return {str(k): jsonable(v, depth + 1, seen) for k, v in value.items()}
        return [jsonable(v, depth + 1, seen) for v in value]
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    if value is None or isinstance(value, (str, int, bool)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


def safe_read(indexer: Indexer, project: Project, scope: Scope) -> ScopeResult:
    """indexer.read, with any unforeseen failure turned into a diagnostic on the scope's first file:
    one hostile file must never stop the rest of the project from being indexed."""
    try:
        return indexer.read(project, scope)
    except Exception as exc:  # the indexers report what they foresee; this catches the rest
        result = ScopeResult()
        result.problem(
            scope.files[0] if scope.files else scope.key,
            f"could not be read: {type(exc).__name__}: {exc}",
            "parse_error",
        )
        return result


def as_str_list(value: Any) -> list[str]:
    """KTX drops non-string entries of list fields; a lone string counts as a one-item list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def clean_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
