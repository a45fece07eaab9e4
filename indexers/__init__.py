"""Indexers: KTX project files → typed documents. They know nothing about the index."""

from __future__ import annotations

from dataclasses import dataclass, field

from indexers.base import Indexer, Scope, ScopeResult, defined_elsewhere, safe_read
from indexers.models import ALL_KINDS, Diagnostic, Document
from indexers.project import Project, load_project
from indexers.scans import ScanIndexer
from indexers.semantic_layer import SemanticLayerIndexer, unscanned_sources
from indexers.sl_records import is_manifest_entry
from indexers.wiki import WikiIndexer

#: Bump when an indexer produces different documents from the same files: indexes built
#: by an older version are rebuilt (their scopes would otherwise be skipped as unchanged).
INDEXER_VERSION = 18


def default_indexers() -> list[Indexer]:
    """The built-in indexers, one per source family (fresh instances: they hold caches)."""
    return [WikiIndexer(), SemanticLayerIndexer(), ScanIndexer()]


@dataclass
class ProjectRead:
    documents: list[Document] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(ALL_KINDS, 0)
        for doc in self.documents:
            counts[doc.kind] += 1
        return counts

    def counts_by_connection(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for doc in self.documents:
            per = out.setdefault(doc.connection_id or "(wiki)", {})
            per[doc.kind] = per.get(doc.kind, 0) + 1
        return dict(sorted(out.items()))


def dedupe_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    seen: set[tuple[str, str]] = set()
    out = []
    for diag in diagnostics:
        if (diag.path, diag.message) not in seen:
            seen.add((diag.path, diag.message))
            out.append(diag)
    return sorted(out, key=lambda d: (d.path, d.message))


def read_project(project: Project, indexers: list[Indexer] | None = None) -> ProjectRead:
    """Read every scope of every indexer: the whole project as documents plus diagnostics."""
    read = ProjectRead(diagnostics=list(project.diagnostics))
    first: dict[str, str] = {}  # uid → the file that gave it first (a stray copy of a table's scan file gives it too)
    for indexer in indexers or default_indexers():
        scopes, diagnostics = indexer.scopes(project)
        read.diagnostics.extend(diagnostics)
        for scope in sorted(scopes, key=lambda s: s.key):
            result = safe_read(indexer, project, scope)
            where = {d.uid: first[d.uid] for d in result.documents if d.uid in first}
            if where:
                new = {d.uid: d for d in result.documents}
                read.diagnostics.append(defined_elsewhere(scope.files[0], new, where))
            read.documents.extend(d for d in result.documents if d.uid not in where)
            first.update((d.uid, d.path) for d in result.documents if d.uid not in first)
            read.diagnostics.extend(result.diagnostics)
    sources = [
        d for d in read.documents if d.kind == "sl_source" and not is_manifest_entry(d.connection_id or "", d.path)
    ]
    read.diagnostics.extend(unscanned_sources(sources, tables_by_connection(read.documents), read.diagnostics))
    read.diagnostics = dedupe_diagnostics(read.diagnostics)
    return read


def tables_by_connection(documents: list[Document]) -> dict[str, list[str]]:
    """Each connection with a complete scan (a ``snapshot`` document) → the display names of the tables it holds."""
    scanned: dict[str, list[str]] = {d.id: [] for d in documents if d.kind == "snapshot"}
    for doc in documents:
        if doc.kind == "table" and doc.connection_id in scanned:
            scanned[doc.connection_id].append(doc.id)
    return scanned


__all__ = [
    "Diagnostic",
    "Document",
    "Indexer",
    "Project",
    "ProjectRead",
    "Scope",
    "ScopeResult",
    "dedupe_diagnostics",
    "default_indexers",
    "load_project",
    "read_project",
]  # fmt: skip
