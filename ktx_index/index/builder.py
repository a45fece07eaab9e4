"""Incremental rebuild: project files → documents → store + lexical index + vectors.

Only scopes whose files changed (size or mtime) are parsed again; only documents whose
content hash changed are rewritten; only texts never embedded before are embedded.
Order of commits: lexical (stamped with generation N+1), then the store (generation
N+1). A crash between the two leaves the store at N, which the next writer detects
and repairs by re-deriving the lexical index from the store (see integrity.py).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection
from pathlib import Path

from indexers import Indexer, dedupe_diagnostics, default_indexers, load_project
from indexers.base import Scope, ScopeResult, defined_elsewhere, safe_read
from indexers.models import Diagnostic, Document, file_of, make_uid
from indexers.project import Project
from ktx_index.embedding.embedder import EmbedBackend, Embedder
from ktx_index.errors import Stopped
from ktx_index.index.backlog import Backlog
from ktx_index.index.checks import CHECKED_FAMILIES, source_checks
from ktx_index.index.commit import Commit
from ktx_index.index.integrity import check_vectors, open_lexical, open_store
from ktx_index.index.layout import IndexLayout, format_stamp
from ktx_index.index.ownership import first_by_key, held_elsewhere
from ktx_index.index.planning import Planner, displaced, held_scopes, unlisted_folders, within
from ktx_index.index.store import DocStore
from ktx_index.index.store.documents import ScopeDoc
from ktx_index.index.store.scopes import HELD
from ktx_index.index.texts import embedding_warnings
from ktx_index.index.vectors import VectorFile
from ktx_index.logs import timestamp
from ktx_index.reports import Progress, RebuildReport, StaleFile, no_progress

#: Time a rebuild that does not embed (serve's and the watcher's catch-up) still spends re-embedding what a
#: repair lost, before its commit is served; the rest, if any, follows in the background.
REPAIR_EMBED_S = 60.0


def broken_files(result: ScopeResult) -> dict[str, str]:
    """Each file of a scope that does not parse (a parse error, or an artifact kept from its last good version:
    ``ScopeResult.kept``) → why, reasons for one file joined."""
    broken = dict(result.kept)
    for diag in result.diagnostics:
        if diag.code == "parse_error":
            broken[diag.path] = f"{broken[diag.path]}; {diag.message}" if diag.path in broken else diag.message
    return broken


class Builder:
    """Owns the write side of one project's index while it holds the writer lock."""

    def __init__(
        self,
        root: Path,
        layout: IndexLayout,
        embedder: Embedder | None,
        indexers: list[Indexer] | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        embed_backend: EmbedBackend | None = None,
    ):
        self.root = root
        self.lost_vectors = 0  # vectors a repair forgot: embedded again before the first commit is served
        self.should_stop = should_stop  # checked between parsed scopes and between embedded batches
        self.layout = layout
        self.embedder = embedder
        #: where texts are embedded: a Ray pool (``rebuild --ray``), or None for this process; the writer is this one
        self.embed_backend = embed_backend
        self.indexers = indexers or default_indexers()
        self.store, self.repairs = open_store(layout)
        self._check_format()
        self.lexical, lexical_repairs = open_lexical(layout, self.store)
        self.repairs += lexical_repairs
        if embedder is not None:
            vector_repairs, self.lost_vectors = check_vectors(layout, self.store, embedder.dim)
            self.repairs += vector_repairs
        self.store.meta.set({"last_repairs": json.dumps(self.repairs)})  # what the latest writer had to repair
        self.planner = Planner()
        self.checks: list[Diagnostic] | None = None  # source_checks after the last commit that could change them

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ consistency

    def _check_format(self) -> None:
        stamp = self.store.meta.get("format")
        if stamp is not None and stamp != format_stamp():
            self.store.close()
            # vectors that describe themselves outlive a new format (their keys say which texts they embed)
            dim = self.embedder.dim if self.embedder is not None else 0
            self.layout.wipe(keep_vectors=bool(dim) and VectorFile(self.layout.vectors, dim).has_keys())
            self.store = DocStore(self.layout.store)
        self.store.meta.set({"format": format_stamp()})

    # ------------------------------------------------------------------ rebuild

    def warm(self) -> None:
        """Let every indexer parse ahead what its scopes share, so a watcher's first edit is as quick as the
        next ones (at 100k columns the ``_schema`` shards alone take ~5 s to parse)."""
        project = load_project(self.root)
        for indexer in self.indexers:
            indexer.warm(project, indexer.scopes(project)[0])

    def rebuild(
        self,
        force: bool = False,
        on_progress: Progress = no_progress,
        embed: bool = True,
        changed: Collection[str] | None = None,
        created: Collection[str] = (),
        project: Project | None = None,
    ) -> RebuildReport:
        """Commit what changed; then embed new texts unless embed=False (they are left pending, so a
        large first build is searchable lexically at once and embeddings catch up with embed_pending).

        ``changed`` (project-relative paths, ``created`` those seen appear) is a watcher's hint: only those
        files are stat'ed again when the last listing still holds (``planning.Planner``). ``project``: ktx.yaml
        as the caller just read it (the service keeps the one its commit was built from), else read here."""
        started = time.perf_counter()
        if project is None:
            project = load_project(self.root)
        report = RebuildReport(force=force, index_path=str(self.layout.dir))
        stored = self.store.scopes.fingerprints()
        plan = self.planner.plan(project, self.indexers, stored, force, changed, created)
        diagnostics: list[Diagnostic] = project.diagnostics + plan.diagnostics
        report.scopes = len(plan.listed)
        report.files, report.targeted = plan.files, plan.targeted
        held = held_scopes(self.root, plan.dropped, unlisted_folders(diagnostics), self.store.scopes.files)
        dropped = [key for key in plan.dropped if key not in held]
        newly_held = {key: reason for key, reason in held.items() if stored.get(key) != HELD}  # else done already
        if plan.todo or dropped or newly_held or force:
            self._stream(project, plan.todo, dropped, newly_held, force, report, on_progress)
        if self.checks is None or force or dropped or any(i.family in CHECKED_FAMILIES for i, _s, _f in plan.todo):
            self.checks = source_checks(self.store)

        embed_started = time.perf_counter()
        if embed:
            report.embedded, report.embedding_status = self.embed_pending(on_progress)
        elif self.lost_vectors:
            # a repair lost vectors: embed them now (within a budget) so answers after the repair are a clean
            # build's, rather than lexical-first while a background catch-up runs
            report.embedded, report.embedding_status = self.embed_pending(on_progress, budget_s=REPAIR_EMBED_S)
        else:
            report.embedding_status = "pending"
        self.lost_vectors = 0
        report.embed_ms = round((time.perf_counter() - embed_started) * 1000, 1)
        report.generation = self.store.meta.generation()
        repaired = [Diagnostic(path=str(self.layout.dir), message=m, code="repaired") for m in self.repairs]
        self.repairs = []
        report.diagnostics = dedupe_diagnostics(diagnostics + repaired + self.store.scopes.diagnostics() + self.checks)
        report.stale = [StaleFile(path=p, reason=r) for p, r, _ in self.store.docs.stale()]
        report.duration_ms = round((time.perf_counter() - started) * 1000, 1)
        self.store.meta.set({"last_rebuild": timestamp()})
        return report

    def _stream(
        self,
        project: Project,
        todo: list[tuple[Indexer, Scope, str]],
        dropped: list[str],
        held: dict[str, str],
        force: bool,
        report: RebuildReport,
        on_progress: Progress,
    ) -> None:
        """Parse each scope and write what changed at once (parse and write times are reported apart).
        ``held``: scopes out of sight in a folder that cannot be listed, kept stale with the reason."""
        commit = Commit(self.store, self.lexical, self.backlog.fingerprint(), force, on_progress, self.should_stop)
        dropping = set(dropped)
        removed: set[str] = set()  # the files whose documents are deleted (report.deleted_paths)
        parse_s = 0.0
        started = time.perf_counter()
        try:
            for done, (indexer, scope, fingerprint) in enumerate(todo, 1):
                if self.should_stop():  # nothing is committed yet: the whole batch is discarded (abort below)
                    raise Stopped(
                        f"stopped while reading files ({done - 1}/{len(todo)} scopes read); nothing committed"
                    )
                parse_started = time.perf_counter()
                result = safe_read(indexer, project, scope)
                parse_s += time.perf_counter() - parse_started
                declined = self._apply_scope(scope, result, commit, report, dropping, removed)
                result.diagnostics += embedding_warnings(result.documents)
                # a file declined for another's documents is read again at every build, to take them over when
                # that one goes (an empty fingerprint never matches)
                stored_as = "" if declined else fingerprint
                self.store.scopes.put(scope.key, scope.family, stored_as, list(scope.files), result.diagnostics)
                on_progress("parse", done, len(todo))
            for key in dropped:
                for uid, (_hash, path, _stale) in self.store.docs.in_scope(key).items():
                    commit.delete(uid)
                    report.deleted += 1
                    removed.add(file_of(path))
                self.store.scopes.delete(key)
            for key, reason in held.items():
                uids = list(self.store.docs.in_scope(key))
                self.store.docs.mark_stale(uids, reason)
                report.kept_stale += len(uids)
                self.store.scopes.hold(key)
            commit.finish(bool(dropped))
            report.lexical_rewritten = commit.rewritten
        except BaseException:
            commit.abort()
            raise
        report.scopes_read = len(todo)
        report.deleted_paths = sorted(removed)
        report.parse_ms = round(parse_s * 1000, 1)
        report.lexical_ms = round((time.perf_counter() - started - parse_s) * 1000, 1)

    def _apply_scope(
        self,
        scope: Scope,
        result: ScopeResult,
        commit: Commit,
        report: RebuildReport,
        dropped: set[str],
        removed: set[str],
    ) -> bool:
        """Write one scope's changed documents. A document whose file no longer parses (or lies in a folder that
        cannot be listed, or came from an artifact that does not parse: ``ScopeResult.kept``) is kept, marked
        stale; a document such a file gives changed keeps what it lost from its last good version (a table's sample
        values from a profile that no longer parses), stale too; a file that does not parse and never did gives what
        it still can (``ScopeResult.fallback``), stale too. Documents another scope holds are left to it
        (index/ownership.py): True when there were some. The files whose documents go are added to ``removed``."""
        old = self.store.docs.in_scope(scope.key)
        broken = broken_files(result)
        unlisted = unlisted_folders(result.diagnostics)
        new = {d.uid: d for d in result.documents}
        whole: dict[str, Document] = {}
        if result.fallback:  # a file that never parsed: what it still gives, flagged stale, over an earlier such read
            parsed = {file_of(path) for uid, (_h, path, _s) in old.items() if not self._read_whole(uid)}
            whole = {d.uid: d for d in result.fallback if d.path not in parsed and d.path in broken}
            new.update(whole)
        elsewhere = held_elsewhere(self.store.docs, scope.key, [uid for uid in new if uid not in old], dropped)
        theirs, taken = first_by_key(scope.key, scope.files[0], elsewhere)
        if theirs:  # another file's documents (a stray copy of a table's file): the first file keeps them
            result.diagnostics.append(defined_elsewhere(scope.files[0], new, theirs))
            for uid in theirs:
                del new[uid]
        for (owner, path), uids in taken.items():  # that one declines them from now on, and says so at once
            self.store.scopes.read_again(owner, defined_elsewhere(path, new, uids))
        keeping = {**unlisted, **broken}  # a folder's reason keeps all it holds
        reasons: dict[str, str | None] = {}  # per file: a file's documents vanish together

        def kept_for(path: str) -> str | None:
            """Why the documents of the file at ``path`` (a fragment after '#' aside) keep their last good version,
            or None: they go."""
            file = file_of(path)
            if file not in reasons:
                reasons[file] = broken.get(file) or within(file, keeping) or displaced(self.root, file)
            return reasons[file]

        for uid in self._composed_without(old, new, broken):
            if kept_for(old[uid].path) is not None:  # as the documents of its file are: recomposed otherwise
                del new[uid]
        completed = self._complete_from_last_good(old, new, result.kept)
        fresh_again: list[str] = []  # kept stale, and read again unchanged: only the flag goes
        for uid, doc in new.items():
            if uid in old and old[uid].hash == doc.content_hash:
                report.unchanged += 1
                if old[uid].stale is not None:
                    fresh_again.append(uid)
                continue
            if commit.put(doc, scope.key, uid in old):  # held before: here, or by a renamed file's old scope
                report.updated += 1
            else:
                report.added += 1
        self.store.docs.mark_stale(fresh_again, None)
        for uid, why in completed.items():
            self.store.docs.mark_stale([uid], why)
        for uid, doc in whole.items():
            self.store.docs.mark_stale([uid], broken[doc.path])
        for uid, (_hash, path, _stale) in old.items():
            if uid in new:
                continue
            reason = kept_for(path)
            if reason is not None:  # last good version stays searchable until the file parses again
                self.store.docs.mark_stale([uid], reason)
                report.kept_stale += 1
            else:
                commit.delete(uid)
                report.deleted += 1
                removed.add(file_of(path))
        return bool(theirs)

    def _complete_from_last_good(
        self, old: dict[str, ScopeDoc], new: dict[str, Document], kept: dict[str, str]
    ) -> dict[str, str]:
        """The changed documents of a file that lost part of itself to one that does not parse (a table's sample
        values to its profile, ``kept``: such a file → why) get what they lost back from their last good version, in
        ``new``; one that changed in nothing else is dropped from ``new`` (its last good version stays, stale).
        Returns uid → why for those that changed otherwise too (a column renamed): written, and marked stale."""
        completed: dict[str, str] = {}
        for uid in [u for u, doc in new.items() if u in old and old[u].hash != doc.content_hash] if kept else ():
            file = file_of(old[uid].path)
            prior = self.store.docs.get(uid) if file in kept else None
            if prior is not None:
                new[uid] = with_what_it_lost(prior, new[uid])
                if new[uid].content_hash == prior.content_hash:
                    del new[uid]
                else:
                    completed[uid] = kept[file]
        return completed

    def _composed_without(
        self, old: dict[str, ScopeDoc], new: dict[str, Document], broken: dict[str, str]
    ) -> list[str]:
        """The documents composed from several files (a semantic-layer source: its manifest and its overlay) that
        this read composed without one of them, which no longer parses, and the changed dimensions and measures of
        such a source. Recomposed from the files that still parse, a source loses the measures search still finds
        and its columns the overlay's descriptions; _apply_scope keeps their last good version instead, stale,
        wherever the documents of its file are kept."""
        if not broken:
            return []
        changed = {uid: doc for uid, doc in new.items() if uid in old and old[uid].hash != doc.content_hash}
        sources = set()
        for uid, doc in changed.items():
            if "files" in doc.attrs:
                prior = self.store.docs.get(uid)
                files = prior.attrs.get("files", []) if prior is not None else []
                if any(f in broken and f not in doc.attrs["files"] for f in files):
                    sources.add(uid)
        return [uid for uid, doc in changed.items() if uid in sources or _source_of(doc) in sources]

    def _read_whole(self, uid: str) -> bool:
        """Whether the index holds a document as its broken file's whole text (``ScopeResult.fallback``), which a
        later whole read replaces; only ever asked of a scope that has a fallback."""
        doc = self.store.docs.get(uid)
        return doc is not None and bool(doc.attrs.get("readWhole"))

    # ------------------------------------------------------------------ embeddings

    @property
    def backlog(self) -> Backlog:
        """The texts this index has no vector for yet (index/backlog.py), over the store as it is now (a new
        format reopens it)."""
        return Backlog(self.store, self.layout, self.embedder, self.embed_backend, self.should_stop)

    def embed_pending(
        self, on_progress: Progress = no_progress, limit: int | None = None, budget_s: float | None = None
    ) -> tuple[int, str]:
        """Embed chunk texts that have no vector yet: at most limit of them, and when a time budget is
        given, in small batches until it is spent (the watcher works in such slices so file events are
        never kept waiting long). Returns (texts embedded, status)."""
        done, status = self.backlog.embed(on_progress, limit, budget_s)
        self.store.meta.set({"embedding_status": status})
        return done, status


def _source_of(doc: Document) -> str | None:
    """The uid of the semantic-layer source a dimension or measure belongs to (None for any other document)."""
    if doc.kind not in ("sl_dimension", "sl_measure") or not doc.attrs.get("source"):
        return None
    return make_uid("sl_source", doc.connection_id, str(doc.attrs["source"]))


def with_what_it_lost(prior: Document, doc: Document) -> Document:
    """``doc`` with the sample values and attributes it no longer has that ``prior``, its last good version, had:
    what its file took from another that does not parse now (a relationship profile), while what the file itself
    says (a renamed column, a new comment) is taken."""
    empty: tuple = (None, "", [], {})
    lost = {key: value for key, value in prior.attrs.items() if doc.attrs.get(key) in empty and value not in empty}
    fields = doc.model_dump() | {"sample_values": doc.sample_values or prior.sample_values, "content_hash": ""}
    return Document.model_validate(fields | {"attrs": doc.attrs | lost})
