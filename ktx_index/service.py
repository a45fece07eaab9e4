"""The one API every door uses: CLI, MCP server, watcher, tests and benchmarks.

``KtxIndex`` opens a project, owns the writer side (rebuild) and the read side (a
search engine over the committed index), and returns typed reports; it never prints.

One writer per machine (the file lock in layout.py) and one per process: every write
(rebuild, repair, a watcher batch, background embedding) runs under ``_write_lock``, so an
MCP worker that finds the index damaged never repairs it while the watcher thread commits.
Reads never write, but for two writes made for them: a project's first build (``ensure_index``: the first call on
a project nobody indexed) and a damaged index's repair (``refreshed_engine`` says in its name that it reloads the
latest commit, and has a damaged index repaired), both under that same lock.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from pathlib import Path

from indexers import Indexer, default_indexers, load_project, read_project
from indexers.project import Project
from ktx_index.background import BackgroundThreads
from ktx_index.embedding import word_table
from ktx_index.embedding.embedder import EmbedBackend, Embedder, MiniLMEmbedder
from ktx_index.errors import IndexUnavailable, NoIndexYet, NotFound, echoed, require_words, unknown_connection
from ktx_index.index.builder import Builder
from ktx_index.index.layout import IndexLayout, WriterLock
from ktx_index.index.status import build_status, connection_infos
from ktx_index.index.texts import embedding_warnings
from ktx_index.reports import (
    ConnectionInfo,
    InspectReport,
    Progress,
    ProgressListeners,
    RebuildReport,
    StatusReport,
    no_progress,
)
from ktx_index.search import learned
from ktx_index.search.engine import Engine
from ktx_index.search.scoring import PARAMS, Params
from ktx_index.tools import entities as entity_reads
from ktx_index.tools import reads, table_names
from ktx_index.tools.connections import connection_list
from ktx_index.tools.dictionary import check_values, dictionary_search
from ktx_index.tools.discover import discover
from ktx_index.tools.read_results import ConnectionListResult, EntityDetailsResult, SlSource, WikiPage
from ktx_index.tools.results import DictionarySearchResult, DiscoverResult, WikiSearchResult
from ktx_index.tools.wiki import wiki_search

DEFAULT = object()


class KtxIndex:
    def __init__(
        self,
        root: str | Path,
        embedder: Embedder | object | None = DEFAULT,
        indexers: list[Indexer] | None = None,
        params: Params = PARAMS,
        embed_backend: EmbedBackend | None = None,
    ) -> None:
        """``embed_backend``: where this service's writes embed texts (default: in this process with
        ``embedder``; ``rebuild --ray`` passes a Ray pool built over that same embedder)."""
        self.root = Path(root).resolve()
        self.params = params  # the ranking's constants (search/scoring.py); benchmarks hand in others
        self.project: Project = load_project(self.root)
        self.layout = IndexLayout.for_project(self.root)
        if embedder is DEFAULT:
            settings = self.project.settings
            embedder = (
                MiniLMEmbedder(model=settings.model, precision=settings.precision) if settings.embeddings else None
            )
        self.embedder: Embedder | None = embedder  # type: ignore[assignment]
        self.embed_backend = embed_backend
        self.indexers = indexers or default_indexers()  # kept: their parse caches outlive one rebuild
        self._engine: Engine | None = None
        self._engine_lock = threading.Lock()
        self._first_build = ProgressListeners()  # the calls waiting on a first build (ensure_index)
        self._builder: Builder | None = None
        self._writer_lock = WriterLock(self.layout)
        self._write_lock = threading.RLock()  # every write path in this process, see the module docstring
        self._background = BackgroundThreads()  # every thread close must join, and the stop they heed
        self._stop = self._background.stop
        self._word_table = word_table.OncePerProcess()  # ensure_word_table
        self._answered: dict[str, tuple[int, str]] = {}  # tool → the snapshot it last answered on (answers_at_once)
        #: A first build for a call (ensure_index) answers lexically and embeds in the background (serve sets it; a
        #: one-shot ``search`` wants its answer with vectors).
        self.embed_first_build_later = False

    def request_stop(self) -> None:
        """Ask writers to stop at a safe point: a parse not yet committed is discarded, embedding stops
        after the batch in hand (committed). Safe from a signal handler; ``close`` completes the stop."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def resume(self) -> None:
        """Forget a stop request once the writer that had to stop has (a stopped watcher, a closed service)."""
        self._stop.clear()

    def close(self, timeout: float = 60.0) -> None:
        """Stop background work at a safe point, wait for it, release the writer and the model's sessions."""
        self._background.stop_and_join(timeout)
        if self._engine is not None:
            self._engine.close()
            self._engine = None
        self.release_writer()
        close_model = getattr(self.embedder, "close", None)
        if close_model is not None:
            close_model()
        self.resume()  # the object stays usable (tests and benchmarks reopen it)

    def embed_in_background(self, on_done: Callable[[int, str], None] | None = None) -> threading.Thread:
        """Embed pending texts in a thread that ``close`` stops and joins (serve does this after its catch-up
        commit, so a large first build answers lexically at once); the writer is released when it ends."""

        def work() -> None:
            try:
                result = self.embed_pending()
                if on_done is not None:
                    on_done(*result)
            finally:
                self.release_writer()
            self.ensure_word_table()

        return self.in_background("ktx-index-embed", work)

    def in_background(self, name: str, work: Callable[[], None]) -> threading.Thread:
        """Run ``work`` in a thread that ``close`` joins (background.py says why)."""
        return self._background.start(name, work)

    # ------------------------------------------------------------------ writing

    def acquire_writer(self) -> Builder:
        """Hold the index writer (a watcher keeps it; a rebuild releases it when done)."""
        with self._write_lock:
            if self._builder is None:
                self._writer_lock.acquire()
                try:
                    self._builder = Builder(
                        self.root,
                        self.layout,
                        self.embedder,
                        self.indexers,
                        should_stop=self._stop.is_set,
                        embed_backend=self.embed_backend,
                    )
                except BaseException:
                    self._writer_lock.release()
                    raise
            return self._builder

    def release_writer(self) -> None:
        with self._write_lock:  # waits for a write in progress: a batch is committed whole
            if self._builder is not None:
                self._builder.close()
                self._builder = None
            self._writer_lock.release()

    @property
    def writing(self) -> bool:
        """True while this process holds the index writer."""
        return self._builder is not None

    def rebuild(
        self,
        force: bool = False,
        on_progress: Progress = no_progress,
        embed: bool = True,
        changed: Collection[str] | None = None,
        created: Collection[str] = (),
    ) -> RebuildReport:
        """Bring the index up to date with the project files (incremental unless force).

        embed=False commits documents and the lexical index only; call embed_pending next
        (the watcher and ``serve`` do, so a large first build answers lexically at once).
        ``changed``/``created``: the watcher's hint of which paths changed (``planning.Planner``)."""
        with self._write_lock:
            held = self._builder is not None
            builder = self.acquire_writer()
            project = load_project(self.root)  # read once: what this commit is built from is what the service keeps
            try:
                report = builder.rebuild(force, on_progress, embed, changed, created, project)
            finally:
                if not held:
                    self.release_writer()
            self.project = project
            if self._engine is not None:
                self._engine.refresh()
            return report

    def embed_pending(
        self, on_progress: Progress = no_progress, limit: int | None = None, budget_s: float | None = None
    ) -> tuple[int, str]:
        """Embed what rebuilds left pending (at most limit texts, within budget_s when given; status
        "pending" when more remain)."""
        with self._write_lock:
            builder = self.acquire_writer()
            result = builder.embed_pending(on_progress, limit, budget_s)
            if self._engine is not None:
                self._engine.refresh()
            return result

    def ensure_word_table(self) -> int:
        """Build the model's word table when this machine has none (embedding/word_table.py: ~15 s once, then
        the bridge looks words up instead of embedding them); the words embedded, 0 when it exists, there is no
        model or a stop came. Called by the `rebuild` command and serve's background thread, never inside a
        rebuild: a rebuild may run under the engine's lock (a first call, a repair), where 15 s more would stall
        every reader. It writes to the model cache, not the index, under the form the model runs in."""
        if self.embedder is None:
            return 0
        return self._word_table.ensure(self.embedder, self._stop.is_set)

    # ------------------------------------------------------------------ reading

    def refreshed_engine(self) -> Engine:
        """The read engine at the latest commit: opened on first use (a damaged index is repaired first,
        under the write lock), then reloaded whenever a writer has committed since the last call."""
        if self._engine is None:
            with self._engine_lock:
                if self._engine is None:
                    if not self.layout.exists():
                        raise NoIndexYet(
                            f"no index at {self.layout.dir}", "run `ktx-index rebuild` (or start `ktx-index serve`)"
                        )
                    self._engine = self._open_engine()
        else:
            self._engine.refresh()
        return self._engine

    def _open_engine(self) -> Engine:
        """Open for reading; a damaged index is repaired first when no other process is writing."""
        try:
            engine = Engine(self.layout, self.embedder, self.params)
        except Exception as exc:
            self._repair(f"index could not be opened ({exc})")
            return Engine(self.layout, self.embedder, self.params)
        damage = engine.lexical_error or engine.vector_error
        if damage is not None:
            engine.close()
            self._repair(damage)
            engine = Engine(self.layout, self.embedder, self.params)
        return engine

    def _repair(self, reason: str) -> None:
        """Opening the writer repairs the index (integrity.py); another process writing will have done so."""
        with self._write_lock:  # a writer thread of this process (the watcher) finishes its batch first
            holder = self._writer_lock.holder_pid()
            if self._builder is None and holder is not None:
                raise IndexUnavailable(reason, f"a writer (PID {holder}) is building or repairing it; retry shortly")
            self.rebuild()

    def warm_reader(self) -> None:
        """Open the engine and warm what its first queries would (``serve`` runs this in the background;
        a requested stop cuts it short), then answer one discover and one wiki question, so what they derive
        once per snapshot (chunk groups, wiki vectors, noise levels, kind masks) is built before the first real
        call. The dictionary's value index is left to its first call: at 100k columns it takes ~1 s of the GIL,
        which the first questions of a new server would share."""
        self.refreshed_engine().warm(self._stop.is_set)
        for search in (self.discover_data, self.wiki_search):
            if not self._stop.is_set():
                search("warm up")

    def ensure_index(self, on_progress: Progress | None = None) -> Engine:
        """The engine, building the index first when there is none yet (a first call on a new project). With
        ``embed_first_build_later`` (serve sets it) that first build commits the lexical index and answers, and the
        texts are embedded in the background, as serve's own start does: ``serve --no-build`` on a large project
        nobody indexed kept its first caller waiting for the whole embedding (64 s for 30,000 columns). A call that
        arrives during that build waits for it and hears its progress (``on_progress``) from then on."""
        if self._engine is None or not self.layout.exists():  # no index, or another call building the first
            listener = on_progress or no_progress
            self._first_build.add(listener)  # a call waiting on another's build hears its progress too
            try:
                with self._engine_lock:
                    if not self.layout.exists():
                        later = self.embed_first_build_later and self.embedder is not None
                        self.rebuild(on_progress=self._first_build, embed=not later)
                        if later:
                            self.embed_in_background()
            finally:
                self._first_build.remove(listener)
        return self.refreshed_engine()

    def answers_at_once(self, tool: str) -> bool:
        """Whether ``tool`` (discover_data or wiki_search) would be answered in milliseconds now: the engine
        open, nothing committed since its snapshot, this tool already answered on that snapshot (what it
        derives once per snapshot is built) and the model quick (QueryVectors.quick). The MCP server then
        answers on its event loop instead of a worker thread (0.1-0.4 ms less a call); a call that could build,
        load or derive goes to the thread, so it never holds up the server's other requests."""
        engine = self._engine
        if engine is None or self._stop.is_set() or self._answered.get(tool) != engine.snapshot_key:
            return False
        return self.layout.exists() and engine.is_current() and engine.query_vectors.quick

    def require_connection(self, connection_id: str | None) -> None:
        if connection_id is not None and connection_id not in self.project.connections:
            raise unknown_connection(connection_id, self.project.connection_ids)

    def discover_data(
        self,
        query: str,
        connection_id: str | None = None,
        kinds: list[str] | None = None,
        limit: int = 10,
        explain: bool = False,
        on_progress: Progress | None = None,
    ) -> DiscoverResult:
        require_words(query)  # before a first build, as every argument check here
        connection_id = self.project.declared_id(connection_id)
        self.require_connection(connection_id)
        engine = self.ensure_index(on_progress)
        answered_at = engine.snapshot_key
        result = discover(engine, query, connection_id, kinds, limit, explain)
        self._answered["discover_data"] = answered_at
        return result

    def wiki_read(self, key: str) -> WikiPage:
        return reads.wiki_read(self.project, key, lambda: self.refreshed_engine().store)

    def sl_read_source(self, connection_id: str, source_name: str) -> SlSource:
        connection_id = self.project.declared_id(connection_id)
        reads.check_connection_form(connection_id, self.project.connection_ids)
        try:
            self.require_connection(connection_id)
        except NotFound as exc:  # upstream: the source is not found; the hint says why
            raise NotFound(f'Semantic-layer source "{echoed(source_name)}" was not found.', str(exc)) from exc
        return reads.sl_read_source(self.refreshed_engine().store, connection_id, source_name, self.project)

    def entity_details(self, connection_id: str, entities: list[dict]) -> EntityDetailsResult:
        """An unknown connection is answered per entity (``scan_missing``), as upstream does."""
        entity_reads.check_entity_count(entities)
        known, connection_id = self.project.connection_ids, self.project.declared_id(connection_id)
        engine = self.refreshed_engine()
        snap = engine.snapshot
        holding = table_names.column_holders(snap, connection_id)
        return entity_reads.entity_details(engine.store, connection_id, entities, known, snap.facts.twins, holding)

    def connection_list(self) -> ConnectionListResult:
        policies = {c.id: c.query_policy for c in self.project.connections.values()}
        return connection_list(self.connections(), policies)

    def wiki_search(
        self,
        query: str,
        limit: int = 10,
        on_progress: Progress | None = None,
        connection_id: str | None = None,
        explain: bool = False,
    ) -> WikiSearchResult:
        """Pages for a query; with connection_id, pages tagged with no connection or with this one (KTX's rule)."""
        require_words(query)
        engine = self.ensure_index(on_progress)
        connection_id = self.project.declared_id(connection_id)
        if connection_id is not None and connection_id not in self.project.connections:
            tagged = {c for conns in engine.snapshot.wiki_connections.values() for c in conns}
            if connection_id not in tagged:  # neither declared nor named by a page: say which are
                pages = sorted(tagged - set(self.project.connection_ids))
                raise unknown_connection(connection_id, self.project.connection_ids, pages)
        answered_at = engine.snapshot_key
        result = wiki_search(engine, query, limit, connection_id, explain)
        self._answered["wiki_search"] = answered_at
        return result

    def dictionary_search(
        self, values: list[str], connection_id: str | None = None, on_progress: Progress | None = None
    ) -> DictionarySearchResult:
        check_values(values)
        connection_id = self.project.declared_id(connection_id)
        self.require_connection(connection_id)  # before a first build: an unknown id builds nothing
        engine = self.ensure_index(on_progress)
        return dictionary_search(engine, values, connection_id, self.project.connection_ids, on_progress)

    # ------------------------------------------------------------------ reports

    def inspect(self) -> InspectReport:
        """Read the whole project: what the index will see. The index is never opened (opening it repaired or
        rebuilt a damaged one, and failed beside a writer: a code review found both)."""
        read = read_project(self.project)
        snapshots = {d.connection_id: d.attrs for d in read.documents if d.kind == "snapshot"}
        by_conn = read.counts_by_connection()
        return InspectReport(
            project=str(self.root),
            counts=read.counts(),
            connections=connection_infos(self.project, None, by_conn, snapshots),
            wiki_counts=by_conn.get("(wiki)", {}),
            diagnostics=[*read.diagnostics, *embedding_warnings(read.documents)],
        )

    def connections(self) -> list[ConnectionInfo]:
        return connection_infos(self.project, self.refreshed_engine().store if self.layout.exists() else None)

    def status(self) -> StatusReport:
        engine = self.refreshed_engine() if self.layout.exists() else None
        connections = connection_infos(self.project, None if engine is None else engine.store)
        store, semantic = (None, ("off", None)) if engine is None else (engine.store, engine.semantic_status())
        report = build_status(self.layout, self.project, store, semantic, self.embedder, self.indexers, connections)
        report.ranker = learned.fingerprint(
            self.params.ranker if engine is None else learned.ranker_name(engine.snapshot, self.params)
        )
        return report
