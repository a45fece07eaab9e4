"""``status``: a truthful account of the index against the files on disk right now."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

from indexers import dedupe_diagnostics, default_indexers, load_project
from indexers.models import Diagnostic
from ktx_index.builder import file_stats, scope_fingerprint
from ktx_index.layout import WriterLock
from ktx_index.logs import recent_errors
from ktx_index.reports import StaleFile, StatusReport, ToolCallError, WatcherState

if TYPE_CHECKING:
    from ktx_index.service import KtxIndex


def changed_paths(service: KtxIndex) -> list[str]:
    """Files whose scope fingerprint differs from the committed one (cheap: stats only)."""
    project = load_project(service.root)
    stored = service.refreshed_engine().store.scope_fingerprints()
    stored_files = service.refreshed_engine().store.scope_files()
    changed: set[str] = set()
    live: set[str] = set()

    stat = file_stats(project.root)
    for indexer in service.indexers or default_indexers():
        scopes, _ = indexer.scopes(project)
        for scope in scopes:
            live.add(scope.key)
            if stored.get(scope.key) != scope_fingerprint(scope, stat):
                old = set(stored_files.get(scope.key, []))
                changed.update(f for f in scope.files if f not in old or stat(f) is not None)
    for key, files in stored_files.items():
        if key not in live:
            changed.update(files)
    return sorted(changed)


def _watcher(service: KtxIndex) -> WatcherState | None:
    """The watcher's own account; a PID that is gone means it no longer runs, whatever the file says."""
    try:
        state = WatcherState.model_validate_json(service.layout.watcher.read_text())
    except (OSError, ValueError):
        return None
    if state.pid is not None and not _alive(state.pid):
        state.pid, state.pending, state.retry_in_s = None, 0, None
        if state.state != "failed":
            state.state = "stopped"
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def build_status(service: KtxIndex) -> StatusReport:
    report = StatusReport(project=str(service.root), index_path=str(service.layout.dir), exists=service.layout.exists())
    report.writer_pid = WriterLock(service.layout).holder_pid()
    if not report.exists:
        report.diagnostics = load_project(service.root).diagnostics
        report.connections = service.connections({})
        return report
    engine = service.refreshed_engine()
    store = engine.store
    meta = store.meta()
    report.generation = int(meta.get("generation", 0))
    report.last_rebuild = meta.get("last_rebuild")
    for kind, _conn, n in store.counts():
        report.counts[kind] = report.counts.get(kind, 0) + n
    report.connections = service.connections()
    report.model = service.embedder.fingerprint if service.embedder else None
    report.model_runtime = getattr(service.embedder, "runtime", None)
    report.semantic, report.semantic_reason = engine.semantic_status()
    report.chunks, report.chunks_embedded = store.chunk_stats()
    report.changed_paths = changed_paths(service)
    report.changed_files = len(report.changed_paths)
    report.watcher = _watcher(service)
    report.recent_errors = [ToolCallError.model_validate(e) for e in recent_errors(service.layout.errors)]
    repairs = [
        Diagnostic(path=str(service.layout.dir), message=m, code="repaired")
        for m in json.loads(meta.get("last_repairs") or "[]")
    ]
    fallback = getattr(service.embedder, "fallback_reason", None)
    if fallback:
        repairs.append(Diagnostic(path=str(service.layout.dir), message=fallback, code="embed_runtime"))
    report.diagnostics = dedupe_diagnostics(service.project.diagnostics + repairs + store.scope_diagnostics())
    report.stale = [StaleFile(path=p, reason=r) for p, r, _ in store.stale_docs()]
    return report
