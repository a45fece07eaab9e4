"""The indexer contract, and value helpers every indexer shares (file reading is ``indexers.files``).

An indexer splits its part of the project into *scopes* (a set of files that
are parsed together: one wiki page, one semantic-layer connection, one scanned
table) and turns one scope into documents plus diagnostics. The builder
fingerprints each scope's files, so an unchanged scope is never parsed again.
"""

from __future__ import annotations

import datetime as dt
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from indexers.models import MEMBER_KINDS, Diagnostic, DiagnosticCode, Document
from indexers.project import Project


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
    #: file (or folder) → why: documents of that file missing from this read are kept (stale), not deleted. For a file
    #: that parsed but lost part of its documents to another that did not (a table's sample values to its
    #: snapshot's relationship profile) or to a field of its own of the wrong shape (``wrong_shape``); a file that does
    #: not parse is kept by its own ``parse_error``.
    kept: dict[str, str] = field(default_factory=dict)
    #: What a file that does not parse still gives (a page whose frontmatter does not, read whole): indexed, flagged
    #: stale with the parse error, only when the index holds nothing from an earlier read of the file; otherwise
    #: that last good version is kept, as for any file that no longer parses.
    fallback: list[Document] = field(default_factory=list)

    def problem(self, path: str, message: str, code: DiagnosticCode = "error") -> None:
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


def first_few(items: list[str], most: int) -> str:
    """The first ``most`` items, comma-separated, and how many more there are: 'a, b, c and 4 more'."""
    return ", ".join(items[:most]) + (f" and {len(items) - most} more" if len(items) > most else "")


def as_str_list(value: Any) -> list[str]:
    """A list field's strings: KTX drops non-string entries; a lone string counts here as a one-item list (KTX
    reads one so only for a page's ``connections``, and ignores it in ``tags``, ``refs`` and ``sl_refs``)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str)]
    return []


def clean_text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def defined_elsewhere(path: str, new: Mapping[str, Document], where: Mapping[str, str]) -> Diagnostic:
    """The warning of a file whose documents another file holds (``where``: uid → that file's path): which (members
    named by their table or source), and where. A document two files define stays with the file whose scope sorts
    first (ktx_index/index/ownership.py; ``read_project`` reads it so too)."""
    ids = sorted(new[uid].id for uid in where if new[uid].kind not in MEMBER_KINDS) or sorted(new[u].id for u in where)
    return Diagnostic(
        path=path,
        code="warning",
        message=f"{first_few(ids, 3)} also defined by {first_few(sorted(set(where.values())), 2)}: not read from this "
        "file while that one defines it (delete the copy you do not want)",
    )
