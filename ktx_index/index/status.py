"""``status``: a truthful account of the index against the files on disk right now."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel

from indexers import Indexer, dedupe_diagnostics, load_project
from indexers.models import Diagnostic
from indexers.project import Project
from ktx_index.embedding import word_table
from ktx_index.embedding.embedder import Embedder
from ktx_index.index.checks import source_checks
from ktx_index.index.layout import IndexLayout, WriterLock
from ktx_index.index.planning import held_scopes, plan_scopes, unlisted_folders
from ktx_index.index.store import DocStore
from ktx_index.logs import recent_errors
from ktx_index.reports import ConnectionInfo, StaleFile, StatusReport, ToolCallError, UpstreamState, WatcherState

State = TypeVar("State", bound=BaseModel)


def changed_paths(
    project: Project, store: DocStore, indexers: list[Indexer]
) -> tuple[list[str], list[str], list[Diagnostic]]:
    """Files whose scope fingerprint differs from the committed one (cheap: stats only), by the
    builder's own plan, so status and the next rebuild agree on what changed; those of them no longer in the
    project (a deleted page was listed as one to read again); and what listing found."""
    plan = plan_scopes(project, indexers, store.scopes.fingerprints())
    stored_files = store.scopes.files()
    held = held_scopes(
        project.root, plan.dropped, unlisted_folders(project.diagnostics + plan.diagnostics), lambda _keys: stored_files
    )
    changed: set[str] = set()
    for _indexer, scope, _fingerprint in plan.todo:
        old = set(stored_files.get(scope.key, []))
        changed.update(f for f in scope.files if f not in old or plan.stats.exists(f))
        changed.update(f for f in old - set(scope.files) if not plan.stats.exists(f))  # an overlay deleted, say
    for key in plan.dropped:
        if key not in held:
            changed.update(stored_files.get(key, []))
    paths = sorted(changed)
    return paths, [f for f in paths if not plan.stats.exists(f)], plan.diagnostics


def _read_state(model: type[State], path: Path) -> State | None:
    """A state file another process writes (the watcher's, the gateway's); None when absent or unreadable."""
    try:
        return model.model_validate_json(path.read_text())
    except (OSError, ValueError):
        return None


def _watcher(layout: IndexLayout) -> WatcherState | None:
    """The watcher's own account; a PID that is gone means it no longer runs, whatever the file says: a watcher that
    stops clears its PID, so one still recorded ended without stopping (``died``: killed or crashed), its pending
    edits left for the next start to index."""
    state = _read_state(WatcherState, layout.watcher)
    if state is not None and state.pid is not None and not _alive(state.pid):
        state.pid, state.retry_in_s = None, None
        if state.state != "failed":
            state.state = "died"
    return state


def _upstreams(layout: IndexLayout) -> list[UpstreamState]:
    """Each running gateway's link to upstream KTX (``serve --upstream``), the latest to change first; when none
    runs, the last one's, stopped (a server that is gone fronts nothing)."""
    states = [s for path in layout.upstreams() if (s := _read_state(UpstreamState, path)) is not None]
    running = [s for s in states if s.pid is not None and _alive(s.pid)]
    if running:
        return sorted(running, key=lambda s: s.since or "", reverse=True)
    if not states:
        return []
    last = max(states, key=lambda s: s.since or "")
    last.pid, last.state, last.retry_in_s = None, "stopped", None
    return [last]


def forget_stopped_upstreams(layout: IndexLayout) -> None:
    """Remove the upstream files of gateways no longer running (a new one starting calls it): they would pile up,
    one per server that ever ran."""
    for path in [*layout.upstreams(), layout.dir / "upstream.json"]:  # and the one file of versions before
        state = _read_state(UpstreamState, path)
        if path.exists() and (state is None or state.pid is None or not _alive(state.pid)):
            with contextlib.suppress(OSError):  # another user's file: theirs to clean
                path.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:  # running, as another user
        return True
    except OSError:
        return False
    return True


def build_status(
    layout: IndexLayout,
    project: Project,
    store: DocStore | None,
    semantic: tuple[str, str | None],
    embedder: Embedder | None,
    indexers: list[Indexer],
    connections: list[ConnectionInfo],
) -> StatusReport:
    """The report for an index at ``layout`` (``store`` is None when there is none yet; ``semantic`` is the
    read side's account of its dense lane).

    ``project`` is the one the service opened; what changed is computed against the files
    and ktx.yaml on disk now."""
    report = StatusReport(
        project=str(project.root),
        index_path=str(layout.dir),
        index_elsewhere=layout.elsewhere,
        exists=store is not None,
    )
    report.writer_pid = WriterLock(layout).holder_pid()
    report.connections = connections
    report.upstreams = _upstreams(layout)
    report.upstream = report.upstreams[0] if report.upstreams else None
    if store is None:
        report.diagnostics = load_project(project.root).diagnostics
        return report
    meta = store.meta.all()
    report.generation = int(meta.get("generation", 0))
    report.last_rebuild = meta.get("last_rebuild")
    for kind, _conn, n in store.docs.counts():
        report.counts[kind] = report.counts.get(kind, 0) + n
    report.model = embedder.fingerprint if embedder else None
    report.model_runtime = getattr(embedder, "runtime", None)
    table = word_table.load(embedder.fingerprint, embedder.dim) if embedder else None
    report.bridge_words = len(table.rows) if table is not None else 0
    report.semantic, report.semantic_reason = semantic
    report.chunks, report.chunks_embedded = store.chunks.stats()
    report.changed_paths, report.deleted_paths, listing = changed_paths(load_project(project.root), store, indexers)
    report.changed_files = len(report.changed_paths)
    report.watcher = _watcher(layout)
    report.recent_errors = [ToolCallError.model_validate(e) for e in recent_errors(layout.errors)]
    repairs = [
        Diagnostic(path=str(layout.dir), message=m, code="repaired")
        for m in json.loads(meta.get("last_repairs") or "[]")
    ]
    fallback = getattr(embedder, "fallback_reason", None)
    if fallback:
        repairs.append(Diagnostic(path=str(layout.dir), message=fallback, code="embed_runtime"))
    diagnostics = project.diagnostics + listing + repairs + store.scopes.diagnostics() + source_checks(store)
    report.diagnostics = dedupe_diagnostics(diagnostics)
    report.stale = [StaleFile(path=p, reason=r) for p, r, _ in store.docs.stale()]
    return report


def connection_infos(
    project: Project,
    store: DocStore | None,
    by_conn: dict[str, dict[str, int]] | None = None,
    snapshots: dict[str | None, dict] | None = None,
) -> list[ConnectionInfo]:
    """Each configured connection with its driver (as declared, else as its scan says) and its documents per
    kind: ``by_conn`` and ``snapshots`` (each scan snapshot's attributes) when given (a project just read), else
    the index's (none without an index)."""
    if by_conn is None:
        by_conn = {}
        for kind, conn, n in store.docs.counts() if store is not None else ():
            by_conn.setdefault(conn or "(wiki)", {})[kind] = n
    if snapshots is None:
        snapshots = store.docs.snapshot_attrs() if store is not None else {}
    drivers = {conn: attrs["driver"] for conn, attrs in snapshots.items() if attrs.get("driver")}
    return [
        ConnectionInfo(id=c.id, driver=c.driver or drivers.get(c.id), declared=c.declared, counts=by_conn.get(c.id, {}))
        for c in sorted(project.connections.values(), key=lambda c: c.id)
    ]
