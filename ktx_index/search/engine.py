"""The read side: the ranking core over the snapshot a reader keeps (search/reader.py).

``rank`` scores candidates from every lane on one scale; ``refresh`` (the reader's) takes in what a writer
committed.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Mapping
from concurrent.futures import Future

import numpy as np

from indexers.models import CONTAINER_KINDS, SEARCH_KINDS
from ktx_index.analysis import is_key_name, member_name, stem
from ktx_index.embedding.embedder import Embedder
from ktx_index.index.layout import IndexLayout
from ktx_index.index.vectors import VectorFile
from ktx_index.search import snippets
from ktx_index.search.admission import admitted_mask, embedded_mask
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
from ktx_index.search.lifts import Lifts, MemberShape, add_parents, set_cosine, term_context
from ktx_index.search.query import Query
from ktx_index.search.query_vectors import QueryVectors
from ktx_index.search.reader import CACHED_DOCUMENTS, SnapshotReader
from ktx_index.search.scoring import PARAMS, Params, fuse, prior
from ktx_index.search.shapes import closed_values, column_shape
from ktx_index.search.spelling import edit_budget
from ktx_index.snapshot.snapshot import Snapshot, nearest_key

#: Texts analysed at warm-up at most: half of term_set's cache, the rest left to what queries bring.
WARM_TEXTS = 8192
#: Edits an identifier query may be from an item's name (edit_budget): none below 8 characters, 1 from 8, 2 from 12.
IDENTIFIER_EDITS = (8, 12)


#: The kinds whose documents may hold a key (scoring.Params.key_member).
KEY_KINDS = frozenset({"column", "sl_dimension"})


class Engine(SnapshotReader):
    """Ranks against the reader's snapshot: every lane, fusion, the structural steps; and the question's vectors."""

    def __init__(self, layout: IndexLayout, embedder: Embedder | None, params: Params = PARAMS) -> None:
        self.params = params
        self.query_vectors = QueryVectors(embedder)  # the questions' embeddings (the index's are the snapshot's)
        self._bridge: tuple[tuple, Bridge] | None = None  # (the vectors it was read with, the vocabulary)
        super().__init__(layout, embedder)

    def close(self) -> None:
        self.query_vectors.close()
        super().close()

    def warm(self, should_stop: Callable[[], bool] = lambda: False) -> None:
        """Load the query model, then read and analyse documents once (wiki pages, then tables and sources,
        then their members), so the first calls answer at warm speed. Stops when the document cache is full."""
        if not should_stop():
            self.query_vector("warm up")
            self.query_vectors.probes()
        room = CACHED_DOCUMENTS
        members = [kind for kind in SEARCH_KINDS if kind not in (*CONTAINER_KINDS, "wiki")]
        for kinds in (["wiki"], list(CONTAINER_KINDS), members):
            docs = list(itertools.islice(self.store.docs.iter(kinds=kinds), room))
            self._cache_documents(docs)
            room -= len(docs)
            unstopped = itertools.takewhile(lambda _: not should_stop(), docs)
            if snippets.warm(unstopped, WARM_TEXTS) < len(docs) or should_stop() or room <= 0:
                return

    # ------------------------------------------------------------------ ranking

    def query_vector(self, query: str) -> np.ndarray | None:
        """The query's embedding (cached), or None when there is no model or it fails (lexical-only then)."""
        return self.query_vectors.get(query)

    @property
    def model_error(self) -> str | None:
        return self.query_vectors.error

    def noise(self, snap: Snapshot, query: Query, matrix: np.ndarray | None = None, key: str = "noise") -> float | None:
        """The noise level the question must clear over ``matrix`` (all the project's vectors by default): two
        levels measured once per snapshot, the one that applies chosen by whether the question has an English
        word (``Query.in_english``, search/calibration.py). None when there are no vectors to calibrate on."""
        matrix = snap.matrix if matrix is None else matrix
        if matrix is None or not len(matrix):
            return None
        cached = snap.derived.get(key)
        if cached is None:
            probes = self.query_vectors.probes()
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
        wanted = admitted_mask(snap, np.array([idx for _, idx in indexed], dtype=np.int64), kind_set, connection)
        for (cand, idx), keep in zip(indexed, wanted.tolist(), strict=True):
            if not keep:
                continue
            kind = SEARCH_KINDS[snap.doc_kind[idx]]
            set_cosine(cand, snap, idx, cosines, p)
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
        return bridged_terms(self.bridge(), self.query_vectors.word, self.lexical.holds, words, terms)

    def abbreviation(self, word: str) -> str | None:
        """The term of the project's abbreviation of a word the index also holds, searched beside it by the lexical
        lane (bridge.held_abbreviation, from MIN_EXPANSION letters); None without a model."""
        if self.embedder is None:
            return None
        short = held_abbreviation(self.bridge(), word, self.lexical.holds, MIN_EXPANSION)
        return stem(short) if short is not None else None

    def abbreviated(self, q: Query, kinds: list[str]) -> Query:
        """The question with its words the project lacks but abbreviates tellingly (``Query.abbreviations``,
        bridge.telling_abbreviations), so the dense lane embeds ``Query.dense_text``. Only where a search bridges
        (lexical_lane.bridges) and with a model."""
        if self.embedder is None or not bridges(kinds) or all(map(self.lexical.holds, q.terms)):
            return q  # every word held: the bridge is not even loaded
        found = telling_abbreviations(self.bridge(), q, self.lexical.holds)
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
        return self.query_vectors.ahead(query)

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
        cosines, top = self._doc_cosines(snap, vector, kinds, connection, pool, self.params.cos_low, 0)
        for i in top:
            doc = int(snap.chunk_docs[i])
            out.setdefault(snap.doc_uids[doc], Candidate(snap.doc_uids[doc], idx=doc))
        return cosines

    def _doc_cosines(
        self, snap: Snapshot, vector: np.ndarray, kinds: list[str], connection: str | None, pool: int, floor: float,
        nearest: int,
    ) -> tuple[DocCosines, np.ndarray]:  # fmt: skip
        """dense.doc_cosines over the snapshot's admitted documents, keeping the ``dense_nearest`` (at least
        ``nearest``) best whatever their cosine."""
        groups = snap.derived.get("groups")
        if groups is None:
            groups = snap.derived["groups"] = groups_of(snap.chunk_rows, snap.chunk_starts)
        allowed = embedded_mask(snap, kinds, connection)
        p = self.params
        return doc_cosines(
            snap.matrix, snap.coarse, groups, snap.chunk_rows, snap.chunk_starts, vector, allowed, pool, floor,
            p.second_chunk, max(p.dense_nearest, nearest),
        )  # fmt: skip

    def nearest(
        self,
        snap: Snapshot,
        pending: Future[np.ndarray | None] | None,
        kinds: list[str],
        connection: str | None,
        count: int,
        taken: set[str],
    ) -> list[Candidate]:
        """Up to ``count`` documents nearest the question by meaning beyond those ``taken``, nearest first, at
        score 0: what fills an answer asked longer than ranking's candidates (the dense lane keeps its
        ``dense_nearest`` best whatever their cosine; a limit of 50 found 10 of a project's 21 tables). Kept out
        of ranking, so a longer answer begins as a shorter one does."""
        vector = pending.result() if pending is not None else None
        if vector is None or count <= 0:
            return []
        reach = count + len(taken)
        cosines, top = self._doc_cosines(snap, vector, kinds, connection, reach, np.inf, reach)
        docs = [int(snap.chunk_docs[i]) for i in top]
        docs = [d for d in docs if snap.doc_uids[d] not in taken and snap.doc_uids[d] not in snap.shadowed]
        keep = admitted_mask(snap, np.array(docs, dtype=np.int64), set(kinds), connection).tolist()
        out = []
        for doc, kept in zip(docs, keep, strict=True):
            if kept:
                cand = Candidate(snap.doc_uids[doc], idx=doc)
                set_cosine(cand, snap, doc, cosines, self.params)
                out.append(cand)
        out.sort(key=lambda c: (-(c.cosine or 0.0), c.uid))
        return out[:count]

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
