"""The read side: the ranking core over a loaded snapshot (snapshot/snapshot.py).

``rank`` scores candidates from every lane on one scale; ``refresh`` reloads the snapshot
when a writer committed.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from typing import TypeVar

import numpy as np
from cachetools import LRUCache

from indexers.models import CONTAINER_KINDS, SEARCH_KINDS, Document
from ktx_index.analysis import is_key_name, member_name, stem
from ktx_index.embedding.embedder import Embedder
from ktx_index.errors import IndexUnavailable
from ktx_index.index.layout import IndexLayout, format_stamp
from ktx_index.index.lexical import LexicalIndex
from ktx_index.index.store import DocStore
from ktx_index.index.vectors import VectorFile
from ktx_index.search import snippets
from ktx_index.search.bridge import (
    MIN_EXPANSION,
    Bridge,
    bridged_terms,
    held_abbreviation,
    load_bridge,
    telling_abbreviations,
)
from ktx_index.search.calibration import noise_level
from ktx_index.search.candidate import Candidate
from ktx_index.search.dense import DocCosines, doc_cosines, groups_of
from ktx_index.search.lexical_lane import bridges, lexical_lane
from ktx_index.search.lifts import Lifts, MemberShape, add_parents, cosine, term_context
from ktx_index.search.query import Query
from ktx_index.search.query_vectors import QueryVectors
from ktx_index.search.scope import embedded_mask, scope_mask
from ktx_index.search.scoring import PARAMS, Params, fuse, prior, semantic_score
from ktx_index.search.shapes import closed_values, column_shape
from ktx_index.search.spelling import edit_budget
from ktx_index.snapshot.delta import MAX_DELTA_SHARE, apply_documents, apply_vectors
from ktx_index.snapshot.snapshot import Snapshot, load_documents, load_vectors, nearest_key

#: Parsed documents kept per snapshot (Engine.documents), the least recently returned dropped first.
CACHED_DOCUMENTS = 2048
#: Texts analysed at warm-up at most: half of term_set's cache, the rest left to what queries bring.
WARM_TEXTS = 8192
#: While embeddings catch up, new vectors are loaded again only after this many times the last load took
#: (when that was noticeable), so reloading, which grows with the index, stays a small share of the time.
VECTOR_RELOAD_SPACING = 4
T = TypeVar("T")
#: Edits an identifier query may be from an item's name (edit_budget): none below 8 characters, 1 from 8, 2 from 12.
IDENTIFIER_EDITS = (8, 12)


#: The kinds whose documents may hold a key (scoring.Params.key_member).
KEY_KINDS = frozenset({"column", "sl_dimension"})


def _committed(meta: dict[str, str]) -> tuple[int, str]:
    """The commit and vectors version the store's metadata says writers last committed."""
    return int(meta.get("generation", "0")), meta.get("vectors_version", "")


class Engine:
    def __init__(self, layout: IndexLayout, embedder: Embedder | None, params: Params = PARAMS) -> None:
        self.layout = layout
        self.embedder = embedder
        self.params = params
        self.store = DocStore(layout.store, readonly=True)
        written = self.store.meta.get("format")
        if written is not None and written != format_stamp():  # its tables may lack what this code reads
            self.store.close()
            raise IndexUnavailable(
                f"the index was written in another format ({written})", "run `ktx-index rebuild` to write it again"
            )
        self.lexical = LexicalIndex(layout.lexical, create=False)
        self.snapshot = Snapshot()
        self._lock = threading.Lock()
        self._documents_lock = threading.Lock()  # a snapshot's document cache (an LRUCache keeps no lock itself)
        self._per_generation: dict[str, tuple[int, object]] = {}  # name → (generation, value): per_generation
        self._per_generation_lock = threading.Lock()  # one build per generation, however many threads ask
        self.vectors = QueryVectors(embedder)
        self.vector_error: str | None = None
        self.lexical_error: str | None = None
        self.embedding_status = ""
        self._next_vector_load = 0.0
        self.last_refresh = ""  # "full" or "delta": how the latest commit was taken in
        self._bridge: tuple[tuple, Bridge] | None = None  # (the vectors it was read with, the vocabulary)
        self.refresh()

    def close(self) -> None:
        self.vectors.close()
        self.store.close()

    # ------------------------------------------------------------------ loading

    @property
    def snapshot_key(self) -> tuple[int, str]:
        """Which commit and vectors the loaded snapshot holds."""
        return self.snapshot.generation, self.snapshot.vectors_version

    def is_current(self) -> bool:
        """Whether nothing was committed since the loaded snapshot (so refresh would load nothing): one
        metadata read."""
        return _committed(self.store.meta.all()) == self.snapshot_key

    def refresh(self, force: bool = False) -> bool:
        """Take in what writers committed since the last query: cheap when nothing changed, a delta
        (snapshot/delta.py) for a commit of a few documents, a full load otherwise. The new snapshot
        replaces the old one whole; queries already running keep ranking against the old one."""
        meta = self.store.meta.all()
        self.embedding_status = meta.get("embedding_status", "")
        generation, vectors_version = _committed(meta)
        snap = self.snapshot
        if not force and (generation, vectors_version) == self.snapshot_key:
            return False
        if (
            not force
            and generation == snap.generation
            and self.embedding_status == "pending"
            and time.monotonic() < self._next_vector_load
        ):
            return False  # a backlog is being embedded in slices: take its new vectors at a bounded rate
        with self._lock:
            old = self.snapshot
            if not force and (generation, vectors_version) == self.snapshot_key:
                return False  # another thread took this commit in while we waited
            changed: set[str] | None = set()
            if force or generation != old.generation:
                self.lexical.reload()
                lexical_generation = self.lexical.generation()
                if lexical_generation < generation:  # behind the store: never a state a writer commits
                    self.lexical_error = (
                        f"lexical index is at generation {lexical_generation}, the store at {generation}"
                    )
                changed = None if force or old.generation < 0 else self.store.changes.since(old.generation, meta)
                if changed is not None and len(changed) > MAX_DELTA_SHARE * max(1, len(old.doc_uids)):
                    changed = None
                how = "full"
                if changed is not None:
                    try:
                        snap, old_to_new = apply_documents(old, self.store, generation, changed)
                        how = "delta"
                    except Exception as exc:  # never serve a half-applied delta: the full load below repairs it
                        how = f"full (delta failed: {type(exc).__name__}: {exc})"
                        changed = None
                    else:
                        old.entries = {}  # handed over to the new snapshot; a later delta from `old` would be wrong
                if changed is None:
                    snap = load_documents(self.store, generation)
                self.last_refresh = how
            else:
                snap, old_to_new = copy.copy(old), np.arange(len(old.doc_uids), dtype=np.int64)
            snap.vectors_version = vectors_version
            snap.words_epoch = meta.get("words_epoch", "")
            if self.embedder is not None:
                started = time.monotonic()
                vectors = VectorFile(self.layout.vectors, self.embedder.dim)
                applied = (
                    changed is not None
                    and self.vector_error is None
                    and apply_vectors(old, snap, self.store, vectors, changed, old_to_new)
                )
                if not applied:
                    self.vector_error = load_vectors(self.store, vectors, snap)
                took = time.monotonic() - started
                self._next_vector_load = started + took * (1 + VECTOR_RELOAD_SPACING) if took > 0.05 else 0.0
            self.snapshot = snap
        return True

    def warm(self, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Load the query model, then read and analyse documents once (wiki pages, then tables and sources,
        then their members), so the first calls answer at warm speed. Stops when the document cache is full."""
        if not should_stop():
            self.query_vector("warm up")
            self.vectors.probes()
        room = CACHED_DOCUMENTS
        members = [kind for kind in SEARCH_KINDS if kind not in (*CONTAINER_KINDS, "wiki")]
        for kinds in (["wiki"], list(CONTAINER_KINDS), members):
            docs = list(itertools.islice(self.store.docs.iter(kinds=kinds), room))
            self._cache_documents(docs)
            room -= len(docs)
            unstopped = itertools.takewhile(lambda _: not should_stop(), docs)
            if snippets.warm(unstopped, WARM_TEXTS) < len(docs) or should_stop() or room <= 0:
                return

    def documents(self, uids: list[str]) -> dict[str, Document]:
        """The documents behind results, each read from the store once per snapshot (at most CACHED_DOCUMENTS
        kept): questions return the same tables and pages again and again, and decompressing and parsing a
        document is most of fetching it. Callers only read them."""
        with self._documents_lock:
            cache = self._document_cache()
            found = {uid: doc for uid in uids if (doc := cache.get(uid)) is not None}
        missing = [uid for uid in uids if uid not in found]
        if missing:
            fetched = self.store.docs.get_many(missing)  # outside the lock: other threads' cached reads go on
            self._cache_documents(fetched.values())
            found.update(fetched)
        return {uid: found[uid] for uid in uids if uid in found}

    def _cache_documents(self, docs: Iterable[Document]) -> None:
        with self._documents_lock:
            self._document_cache().update((doc.uid, doc) for doc in docs)

    def _document_cache(self) -> LRUCache[str, Document]:
        """This snapshot's parsed documents (callers hold _documents_lock)."""
        derived = self.snapshot.derived
        cache: LRUCache[str, Document] | None = derived.get("documents")  # type: ignore[assignment]
        if cache is None:
            cache = derived["documents"] = LRUCache(CACHED_DOCUMENTS)
        return cache

    def stale(self) -> dict[str, str]:
        """The documents kept from a file's last good version → the file and why its latest does not parse. Refs
        carry it, so an agent knows what it reads. Read each time (an indexed read of the few stale rows, almost
        always none): marking a file stale, or fresh again, commits no new generation for a snapshot to key on."""
        return self.store.docs.stale_by_uid()

    def per_generation(self, name: str, build: Callable[[], T]) -> T:
        """What a tool derives from the index at its current generation (``name`` tells them apart), built
        by ``build`` once per generation: the dictionary's value index reads every profiled value."""
        generation = self.snapshot.generation  # before building: a commit meanwhile makes the next call rebuild
        with self._per_generation_lock:
            cached = self._per_generation.get(name)
            if cached is None or cached[0] != generation:
                cached = self._per_generation[name] = (generation, build())
        return cached[1]  # type: ignore[return-value]

    # ------------------------------------------------------------------ ranking

    def query_vector(self, query: str) -> np.ndarray | None:
        """The query's embedding (cached), or None when there is no model or it fails (lexical-only then)."""
        return self.vectors.get(query)

    @property
    def model_error(self) -> str | None:
        return self.vectors.error

    def noise(self, snap: Snapshot, query: Query, matrix: np.ndarray | None = None, key: str = "noise") -> float | None:
        """The noise level the question must clear over ``matrix`` (all the project's vectors by default): two
        levels measured once per snapshot, the one that applies chosen by whether the question has an English
        word (``Query.in_english``, search/calibration.py). None when there are no vectors to calibrate on."""
        matrix = snap.matrix if matrix is None else matrix
        if matrix is None or not len(matrix):
            return None
        cached = snap.derived.get(key)
        if cached is None:
            probes = self.vectors.probes()
            if probes is None:
                return None
            cached = snap.derived[key] = noise_level(matrix, probes)
        return cached.of(query.in_english)  # type: ignore[attr-defined]

    def rank(
        self,
        query: str | Query,
        kinds: list[str],
        connection: str | None = None,
        pool: int | None = None,
        vector: Future[np.ndarray | None] | None = None,
    ) -> list[Candidate]:
        """Score candidates from every lane (``pool`` from each, the params' pool by default) on one scale; best
        first. ``vector``: the question's embedding the caller started (``vector_ahead``)."""
        p, q = self.params, Query.of(query)
        pool = pool or p.pool
        snap = self.snapshot  # one snapshot for the whole query: a commit may swap in a new one meanwhile
        candidates: dict[str, Candidate] = {}
        vector = vector if vector is not None else self.vector_ahead(snap, q.dense_text, kinds)
        lexical_lane(
            self.lexical,
            q,
            kinds,
            connection,
            pool,
            candidates,
            p=p,
            bridged=self.bridged,
            abbreviation=self.abbreviation,
        )
        for uid in self._exact_uids(snap, q):
            candidates.setdefault(uid, Candidate(uid)).exact = True
        cosines = self._dense(snap, vector, kinds, connection, pool, candidates)
        kind_set = set(kinds)
        out = []
        for cand in candidates.values():  # a lexical hit not yet in this snapshot (a commit racing) keeps -1
            if cand.idx < 0:
                cand.idx = snap.uid_index.get(cand.uid, -1)  # type: ignore[assignment]
        add_parents(snap, candidates)
        term_context(snap, candidates, p)
        if cosines is not None and cosines.estimated:  # every candidate's exact cosine in one product
            idx = np.array([cand.idx for cand in candidates.values()], dtype=np.int64)
            in_groups = snap.doc_group[idx[idx >= 0]]
            cosines.exact(in_groups[in_groups >= 0])
        indexed = [(cand, cand.idx) for cand in candidates.values() if cand.idx >= 0 and cand.uid not in snap.shadowed]
        wanted = scope_mask(snap, np.array([idx for _, idx in indexed], dtype=np.int64), kind_set, connection)
        for (cand, idx), keep in zip(indexed, wanted.tolist(), strict=True):
            if not keep:
                continue
            kind = SEARCH_KINDS[snap.doc_kind[idx]]
            cand.cosine = cosine(snap, idx, cosines)
            cand.semantic = None if cand.cosine is None else semantic_score(cand.cosine, p)
            key = not cand.exact and kind in KEY_KINDS and not q.asks_keys and is_key_name(member_name(cand.uid))
            cand.prior = weight = prior(kind, p, key)
            cand.score = fuse(cand.lexical, cand.semantic, cand.exact, p) * weight
            out.append(cand)
        Lifts(snap, out, kind_set, connection, cosines, p).run(q, functools.partial(self.member_shapes, snap))
        out.sort(key=lambda c: (-c.score, c.uid))
        return out

    def member_shapes(self, snap: Snapshot, container: int) -> list[MemberShape]:
        """The shaped columns of a table or dimensions of a source (search/shapes.py), read from the store once
        per snapshot: only the few tables a question with values reaches need them (lifts.shaped asks)."""
        cache: dict[int, list[MemberShape]] = snap.derived.setdefault("shapes", {})  # type: ignore[assignment]
        shapes = cache.get(container)
        if shapes is None:
            members = [int(i) for i in np.flatnonzero(snap.doc_parent == container)]
            docs = self.store.docs.get_many([snap.doc_uids[i] for i in members])
            shapes = []
            for i in members:
                doc = docs.get(snap.doc_uids[i])
                if doc is None:
                    continue
                types = tuple(str(doc.attrs.get(k) or "") for k in ("nativeType", "dimensionType", "type"))
                shape = column_shape(doc.sample_values, types, member_name(doc.uid))
                if shape is not None:
                    shapes.append((i, shape, closed_values(doc.sample_values, doc.attrs.get("distinctCount"))))
            cache[container] = shapes
        return shapes

    def bridged(self, words: Mapping[str, str], terms: list[str]) -> dict[str, tuple[str, float]]:
        """Terms of the question that no field holds → the nearest project term the index holds, with the
        cosine of the two words (search/bridge.py; ``words``: the word each term came from, Query.term_words);
        nothing without a model or a vocabulary."""
        if self.embedder is None or not terms:
            return {}
        return bridged_terms(self.bridge(), self.vectors.word, lambda t: self.lexical.doc_freq(t) > 0, words, terms)

    def abbreviation(self, word: str) -> str | None:
        """The term of the project's abbreviation of a word the index also holds, searched beside it by the lexical
        lane (bridge.held_abbreviation, from MIN_EXPANSION letters); None without a model."""
        if self.embedder is None:
            return None
        short = held_abbreviation(self.bridge(), word, lambda t: self.lexical.doc_freq(t) > 0, MIN_EXPANSION)
        return stem(short) if short is not None else None

    def abbreviated(self, q: Query, kinds: list[str]) -> Query:
        """The question with its words the project lacks but abbreviates tellingly (``Query.abbreviations``,
        bridge.telling_abbreviations), so the dense lane embeds ``Query.dense_text``. Only where a search bridges
        (lexical_lane.bridges) and with a model."""
        if self.embedder is None or not bridges(kinds) or all(self.lexical.doc_freq(t) for t in q.terms):
            return q  # every word held: the bridge is not even loaded
        found = telling_abbreviations(self.bridge(), q, self.lexical.doc_freq)
        return dataclasses.replace(q, abbreviations=found) if found else q

    def bridge(self) -> Bridge:
        """The project's embedded vocabulary, read again only when vectors were added or re-keyed or a word came or
        went."""
        snap = self.snapshot
        key = (snap.vector_epoch, snap.vector_rows_seen, snap.embed_fingerprint, snap.words_epoch)
        cached = self._bridge
        if cached is None or cached[0] != key:
            dim = self.embedder.dim if self.embedder is not None else 0
            cached = self._bridge = (key, load_bridge(self.store, VectorFile(self.layout.vectors, dim)))
        return cached[1]

    def _exact_uids(self, snap: Snapshot, query: Query) -> list[str]:
        """Items whose name or id is the query; for a long identifier, also within one or two edits."""
        key = query.identifier
        if not key:
            return []
        if key in snap.exact:
            return snap.exact[key]
        edits = edit_budget(len(key), IDENTIFIER_EDITS)
        if edits and len(query.text.split()) <= 3:
            near = nearest_key(snap.exact_by_length, key, edits)
            if near is not None:
                return snap.exact[near[0]]
        return []

    def vector_ahead(self, snap: Snapshot, query: str, kinds: list[str]) -> Future[np.ndarray | None] | None:
        """The query's embedding, started on the vectors' worker so the lexical lane and the bridge's own word
        embeddings run meanwhile (a wiki-only search too: once MCP answered warm searches on its event loop, the
        hand-off measured 0.2-0.35 ms faster there than embedding in line). None when there is nothing to embed
        or nothing to compare it with."""
        if self.embedder is None or snap.matrix is None or not len(snap.matrix) or not query.strip():
            return None
        return self.vectors.ahead(query)

    def _dense(
        self,
        snap: Snapshot,
        pending: Future[np.ndarray | None] | None,
        kinds: list[str],
        connection: str | None,
        pool: int,
        out: dict[str, Candidate],
    ) -> DocCosines | None:
        vector = pending.result() if pending is not None else None
        if vector is None:
            return None
        groups = snap.derived.get("groups")
        if groups is None:
            groups = snap.derived["groups"] = groups_of(snap.chunk_rows, snap.chunk_starts)
        allowed = embedded_mask(snap, kinds, connection)
        p = self.params
        cosines, top = doc_cosines(
            snap.matrix, snap.coarse, groups, snap.chunk_rows, snap.chunk_starts, vector, allowed, pool, p.cos_low,
            p.second_chunk, p.dense_nearest,
        )  # fmt: skip
        for i in top:
            doc = int(snap.chunk_docs[i])
            out.setdefault(snap.doc_uids[doc], Candidate(snap.doc_uids[doc], idx=doc))
        return cosines

    def semantic_status(self, snap: Snapshot | None = None) -> tuple[str, str | None]:
        """How the semantic lane stands on ``snap`` (the current snapshot by default) and why, when not available."""
        snap = snap if snap is not None else self.snapshot
        if self.embedder is None:
            return "skipped", "embeddings disabled (index.embeddings: false)"
        if self.model_error or self.vector_error:
            return "failed", self.model_error or self.vector_error
        if self.embedding_status.startswith("unavailable") and snap.embedded_docs < len(snap.doc_uids):
            return "failed", f"embedding model {self.embedding_status}; searching lexically"
        if snap.embedded_docs == 0:
            return "skipped", (
                "no vectors yet: searching lexically until they are embedded (`ktx-index rebuild` embeds them; "
                "`ktx-index serve` does in the background, unless started with --no-build on an existing index)"
            )
        if snap.embedded_docs < len(snap.doc_uids):
            return "partial", f"{snap.embedded_docs}/{len(snap.doc_uids)} documents embedded; embeddings catching up"
        return "available", None
