"""The read side: a snapshot of the index loaded for querying, and the shared ranking core.

A snapshot holds what a query needs in memory (the vector matrix, per-document kind and
connection codes, the exact-identifier map); documents themselves are fetched from the
store only for the few results returned. ``refresh`` reloads when a writer committed.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from indexers.models import SEARCH_KINDS
from ktx_index.analysis import identifier_key, query_terms
from ktx_index.embedder import Embedder
from ktx_index.layout import IndexLayout
from ktx_index.lexical import LexicalIndex
from ktx_index.search import scoring
from ktx_index.search.spelling import CANDIDATES_PER_FIELD, VOCABULARY_FIELDS, nearest_term
from ktx_index.store import DocStore
from ktx_index.vectors import VectorFile

POOL = 100
#: A mention that names more items than this (e.g. 'created_at') is not linked.
MAX_LINK_TARGETS = 6


@dataclass
class Candidate:
    uid: str
    lexical: float = 0.0
    cosine: float | None = None  # best chunk cosine, None when the document has no vector
    semantic: float | None = None
    exact: bool = False
    score: float = 0.0


@dataclass
class Snapshot:
    generation: int = -1
    vectors_version: str = ""
    doc_uids: list[str] = field(default_factory=list)
    doc_kind: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    doc_conn: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    connections: dict[str | None, int] = field(default_factory=dict)
    matrix: np.ndarray | None = None
    chunk_rows: np.ndarray | None = None  # matrix row of each chunk (rows are unique texts)
    chunk_starts: np.ndarray | None = None  # first chunk of each embedded doc
    chunk_docs: np.ndarray | None = None  # doc index of each group in chunk_starts
    doc_group: np.ndarray | None = None  # doc index → its position in chunk_docs, or -1
    embedded_docs: int = 0
    exact: dict[str, list[str]] = field(default_factory=dict)
    exact_keys: list[str] = field(default_factory=list)
    doc_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # source/table index or -1
    links: dict[int, list[int]] = field(default_factory=dict)  # wiki page index → indexes of what it mentions
    shadowed: set[str] = field(default_factory=set)  # global wiki uids hidden by a user page
    uid_index: dict[str, int] = field(default_factory=dict)


def parent_uid(kind: str, conn: str | None, name: str, ref_id: str, display: str) -> str | None:
    """The source a measure or dimension belongs to, the table a column belongs to."""
    if kind in ("sl_measure", "sl_dimension"):
        return f"sl_source:{conn}:{ref_id[: -len(name) - 1]}" if ref_id.endswith("." + name) else None
    if kind == "column":
        return f"table:{conn}:{display[: -len(name) - 1]}" if display.endswith("." + name) else None
    return None


def exact_keys(*names: str | None) -> set[str]:
    """Identifier keys an item answers to: its name, id, display, and each dotted suffix of them
    ('main.Sales.SalesOrderHeader' answers to 'Sales.SalesOrderHeader' and 'SalesOrderHeader')."""
    keys = set()
    for text in names:
        if not text:
            continue
        parts = text.split(".")
        for i in range(len(parts)):
            key = identifier_key(".".join(parts[i:]))
            if key:
                keys.add(key)
    return keys


class Engine:
    def __init__(self, layout: IndexLayout, embedder: Embedder | None) -> None:
        self.layout = layout
        self.embedder = embedder
        self.store = DocStore(layout.store, readonly=True)
        self.lexical = LexicalIndex(layout.lexical, create=False)
        self.snapshot = Snapshot()
        self._lock = threading.Lock()
        self._query_vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self.vector_error: str | None = None
        self.lexical_error: str | None = None
        self.model_error: str | None = None
        self.embedding_status = ""
        self.refresh()

    def close(self) -> None:
        self.store.close()

    # ------------------------------------------------------------------ loading

    def refresh(self, force: bool = False) -> bool:
        """Reload what changed since the last query. Cheap when nothing did."""
        meta = self.store.meta()
        self.embedding_status = meta.get("embedding_status", "")
        generation = int(meta.get("generation", "0"))
        vectors_version = meta.get("vectors_version", "")
        snap = self.snapshot
        if not force and generation == snap.generation and vectors_version == snap.vectors_version:
            return False
        with self._lock:
            if force or generation != snap.generation:
                self.lexical.reload()
                lexical_generation = self.lexical.generation()
                if lexical_generation < generation:  # behind the store: never a state a writer commits
                    self.lexical_error = (
                        f"lexical index is at generation {lexical_generation}, the store at {generation}"
                    )
                snap = self._load_docs(generation)
            else:
                snap = Snapshot(**{**snap.__dict__})
            snap.vectors_version = vectors_version
            self._load_vectors(snap)
            self.snapshot = snap
        return True

    def _load_docs(self, generation: int) -> Snapshot:
        snap = Snapshot(generation=generation)
        kind_code = {kind: i for i, kind in enumerate(SEARCH_KINDS)}
        marks = ",".join("?" * len(SEARCH_KINDS))
        rows = self.store.db.execute(
            "SELECT uid, kind, connection, json_extract(json, '$.name'), json_extract(json, '$.id'), "
            f"COALESCE(json_extract(json, '$.display'), ''), json_extract(json, '$.attrs.scope') FROM docs WHERE kind IN ({marks}) "
            "ORDER BY uid",
            SEARCH_KINDS,
        ).fetchall()
        snap.doc_uids = [r[0] for r in rows]
        snap.uid_index = {uid: i for i, uid in enumerate(snap.doc_uids)}
        snap.doc_kind = np.array([kind_code[r[1]] for r in rows], dtype=np.int8)
        for r in rows:
            snap.connections.setdefault(r[2], len(snap.connections))
        snap.doc_conn = np.array([snap.connections[r[2]] for r in rows], dtype=np.int32)
        user_keys = {r[4] for r in rows if r[1] == "wiki" and r[6] == "USER"}
        for uid, kind, _conn, name, ref_id, display, scope in rows:
            if kind == "wiki" and scope == "GLOBAL" and ref_id in user_keys:
                snap.shadowed.add(uid)
            for key in exact_keys(name, ref_id, display):
                snap.exact.setdefault(key, []).append(uid)
        snap.exact_keys = list(snap.exact)
        snap.links = self._resolve_links(snap)
        snap.doc_parent = np.full(len(rows), -1, dtype=np.int64)
        for i, (_uid, kind, conn, name, ref_id, display, _scope) in enumerate(rows):
            parent = parent_uid(kind, conn, name, ref_id, display)
            if parent is not None:
                snap.doc_parent[i] = snap.uid_index.get(parent, -1)
        return snap

    def _resolve_links(self, snap: Snapshot) -> dict[int, list[int]]:
        """Wiki page → the sources, tables, measures and columns its sl_refs and `code spans` name.

        A mention resolves through the exact-identifier map, trying dotted suffixes
        ('postgres-warehouse.mart_arr_daily' → 'mart_arr_daily'); a name shared by many items
        ('created_at') is too vague to link."""
        links: dict[int, list[int]] = {}
        rows = self.store.db.execute(
            "SELECT uid, json_extract(json, '$.attrs.mentions') FROM docs WHERE kind = 'wiki' AND json_extract(json, '$.attrs.mentions') IS NOT NULL"
        )
        for uid, raw in rows:
            page = snap.uid_index.get(uid)
            if page is None:
                continue
            targets: list[int] = []
            for mention in json.loads(raw):
                parts = mention.split(".")
                for i in range(len(parts)):
                    hits = snap.exact.get(identifier_key(".".join(parts[i:])), [])
                    if hits:
                        if len(hits) <= MAX_LINK_TARGETS:
                            targets.extend(snap.uid_index[h] for h in hits if snap.uid_index[h] != page)
                        break
            if targets:
                links[page] = list(dict.fromkeys(targets))
        return links

    def _load_vectors(self, snap: Snapshot) -> None:
        if self.embedder is None:
            return
        chunk_rows = self.store.chunk_rows()
        vec_rows, starts, docs = [], [], []
        last = None
        for uid, row in chunk_rows:
            idx = snap.uid_index.get(uid)
            if row is None or idx is None:
                continue
            if uid != last:
                starts.append(len(vec_rows))
                docs.append(idx)
                last = uid
            vec_rows.append(row)
        try:
            # twins (a source and its table, a dimension and its column) often share one vector row:
            # keep each row once and map chunks onto it
            unique, chunk_to_row = np.unique(np.array(vec_rows, dtype=np.int64), return_inverse=True)
            matrix = VectorFile(self.layout.vectors, self.embedder.dim).read_rows(unique)
            self.vector_error = None
        except ValueError as exc:  # never rank with vectors that do not match the manifest
            matrix = np.zeros((0, self.embedder.dim), dtype=np.float32)
            chunk_to_row = np.zeros(0, dtype=np.int64)
            starts, docs = [], []
            self.vector_error = f"vector file does not match the index ({exc}); run `ktx-index rebuild` to repair"
        snap.matrix = matrix
        snap.chunk_rows = chunk_to_row
        snap.chunk_starts = np.array(starts, dtype=np.int64)
        snap.chunk_docs = np.array(docs, dtype=np.int64)
        snap.embedded_docs = len(docs)
        snap.doc_group = np.full(len(snap.doc_uids), -1, dtype=np.int64)
        snap.doc_group[snap.chunk_docs] = np.arange(len(docs))

    # ------------------------------------------------------------------ ranking

    def query_vector(self, query: str) -> np.ndarray | None:
        """The query's embedding (cached), or None when there is no model or it fails (lexical-only then)."""
        if self.embedder is None:
            return None
        cached = self._query_vectors.get(query)
        if cached is None:
            try:
                cached = self.embedder.encode([query])[0]
            except Exception as exc:
                self.model_error = f"embedding model unavailable ({type(exc).__name__}: {exc}); searching lexically"
                return None
            self.model_error = None
            self._query_vectors[query] = cached
            if len(self._query_vectors) > 512:
                self._query_vectors.popitem(last=False)
        return cached

    def rank(self, query: str, kinds: list[str], connection: str | None = None, pool: int = POOL) -> list[Candidate]:
        """Score candidates from every lane on one scale; best first, floor not applied."""
        snap = self.snapshot
        candidates: dict[str, Candidate] = {}
        unknown_share = self._lexical(query, kinds, connection, pool, candidates)
        for uid in self._exact_uids(query):
            candidates.setdefault(uid, Candidate(uid)).exact = True
        per_doc = self._dense(query, kinds, connection, pool, candidates)
        kind_set = set(kinds)
        out = []
        self._add_parents(candidates, per_doc)
        for cand in candidates.values():
            idx = snap.uid_index.get(cand.uid)
            if idx is None or cand.uid in snap.shadowed:
                continue
            if SEARCH_KINDS[snap.doc_kind[idx]] not in kind_set:
                continue
            if connection is not None and not self._in_connection(idx, connection):
                continue
            cand.semantic = None if cand.cosine is None else scoring.semantic_score(cand.cosine)
            cand.score = scoring.with_prior(
                scoring.fuse(cand.lexical, cand.semantic, cand.exact, unknown_share), SEARCH_KINDS[snap.doc_kind[idx]]
            )
            out.append(cand)
        self._follow_links(out, kind_set, connection, per_doc)
        self._propagate(out)
        out.sort(key=lambda c: (-c.score, c.uid))
        return out

    def _follow_links(
        self, ranked: list[Candidate], kinds: set[str], connection: str | None, per_doc: np.ndarray | None
    ) -> None:
        """What a matching wiki page names is relevant too, at LINK_SHARE of the page's score."""
        snap = self.snapshot
        by_uid = {c.uid: c for c in ranked}
        for page in [c for c in ranked if c.uid.startswith("wiki:") and c.score >= scoring.RELEVANCE_FLOOR]:
            for target in snap.links.get(snap.uid_index[page.uid], []):
                if SEARCH_KINDS[snap.doc_kind[target]] not in kinds:
                    continue
                if connection is not None and not self._in_connection(target, connection):
                    continue
                uid = snap.doc_uids[target]
                cand = by_uid.get(uid)
                if cand is None:
                    cand = by_uid[uid] = Candidate(uid)
                    if per_doc is not None and snap.doc_group is not None and snap.doc_group[target] >= 0:
                        cand.cosine = float(per_doc[snap.doc_group[target]])
                        cand.semantic = scoring.semantic_score(cand.cosine)
                    cand.score = scoring.fuse(cand.lexical, cand.semantic, cand.exact)
                    ranked.append(cand)
                cand.score = max(cand.score, scoring.LINK_SHARE * page.score)

    def _add_parents(self, candidates: dict[str, Candidate], per_doc: np.ndarray | None) -> None:
        """Every matched member brings its source or table in, so the container can be ranked too."""
        snap = self.snapshot
        for uid in list(candidates):
            idx = snap.uid_index.get(uid)
            parent = int(snap.doc_parent[idx]) if idx is not None else -1
            if parent >= 0 and snap.doc_uids[parent] not in candidates:
                cand = Candidate(snap.doc_uids[parent])
                if per_doc is not None and snap.doc_group is not None and snap.doc_group[parent] >= 0:
                    cand.cosine = float(per_doc[snap.doc_group[parent]])
                candidates[cand.uid] = cand

    def _propagate(self, ranked: list[Candidate]) -> None:
        """A source or table scores at least PARENT_SHARE of its best-matching member."""
        snap = self.snapshot
        by_uid = {c.uid: c for c in ranked}
        best: dict[int, float] = {}
        for cand in ranked:
            parent = int(snap.doc_parent[snap.uid_index[cand.uid]])
            if parent >= 0:
                best[parent] = max(best.get(parent, 0.0), cand.score)
        for parent, score in best.items():
            cand = by_uid.get(snap.doc_uids[parent])
            if cand is not None:
                cand.score = max(cand.score, scoring.PARENT_SHARE * score)

    def _lexical(
        self, query: str, kinds: list[str], connection: str | None, pool: int, out: dict[str, Candidate]
    ) -> None:
        """Per query term, the share of it each document matches (saturating per term, idf-weighted)."""
        weighted: list[tuple[str, float, float]] = []  # (indexed term, idf weight, factor)
        for term in query_terms(query):
            if self.lexical.doc_freq(term) == 0:
                vocabulary = self.lexical.vocabulary(term[:2], VOCABULARY_FIELDS, CANDIDATES_PER_FIELD)
                fixed = nearest_term(term, vocabulary)
                if fixed is None:
                    weighted.append((term, self.lexical.idf(term), 0.0))  # unknown: counts against coverage
                    continue
                term, factor = fixed, scoring.CORRECTED_TERM
            else:
                factor = 1.0
            weighted.append((term, self.lexical.idf(term), factor))
        total = sum(weight for _, weight, _ in weighted)
        unknown = sum(weight for _, weight, factor in weighted if factor == 0.0)
        for term, weight, factor in weighted:
            if factor == 0.0:
                continue
            norm = weight * scoring.REFERENCE_BOOST
            for hit in self.lexical.search([term], kinds, connection, pool):
                cand = out.setdefault(hit.uid, Candidate(hit.uid))
                cand.lexical += weight * factor * scoring.term_score(hit.score, norm) / total
        return unknown / total if total else 0.0

    def _exact_uids(self, query: str) -> list[str]:
        """Items whose name or id is the query; for a long identifier, also within one or two edits."""
        snap = self.snapshot
        key = identifier_key(query)
        if not key:
            return []
        if key in snap.exact:
            return snap.exact[key]
        if len(key) >= 8 and len(query.split()) <= 3:
            near = process.extractOne(
                key, snap.exact_keys, scorer=DamerauLevenshtein.distance, score_cutoff=1 if len(key) < 12 else 2
            )
            if near is not None:
                return snap.exact[near[0]]
        return []

    def _in_connection(self, idx: int, connection: str) -> bool:
        snap = self.snapshot
        if SEARCH_KINDS[snap.doc_kind[idx]] == "wiki":
            return True
        return snap.connections.get(connection, -1) == snap.doc_conn[idx]

    def _dense(
        self, query: str, kinds: list[str], connection: str | None, pool: int, out: dict[str, Candidate]
    ) -> None:
        snap = self.snapshot
        if snap.matrix is None or not len(snap.matrix) or not query.strip():
            return
        vector = self.query_vector(query)
        if vector is None:
            return None
        per_chunk = (snap.matrix @ vector)[snap.chunk_rows]
        per_doc = np.maximum.reduceat(per_chunk, snap.chunk_starts) if len(snap.chunk_starts) else per_chunk[:0]
        docs = snap.chunk_docs
        mask = np.isin(snap.doc_kind[docs], [SEARCH_KINDS.index(k) for k in kinds])
        if connection is not None:
            code = snap.connections.get(connection, -1)
            mask &= (snap.doc_conn[docs] == code) | (snap.doc_kind[docs] == SEARCH_KINDS.index("wiki"))
        sims = np.where(mask, per_doc, -1.0)
        top = np.argpartition(-sims, min(pool, len(sims) - 1))[:pool] if len(sims) > pool else np.arange(len(sims))
        for i in top:
            if sims[i] > scoring.COS_LOW:
                uid = snap.doc_uids[docs[i]]
                out.setdefault(uid, Candidate(uid))
        # semantic score for every candidate that has a vector (lexical and exact ones too)
        for cand in out.values():
            idx = snap.uid_index.get(cand.uid)
            group = int(snap.doc_group[idx]) if idx is not None else -1
            cand.cosine = float(per_doc[group]) if group >= 0 else None
        return per_doc

    def semantic_status(self) -> tuple[str, str | None]:
        snap = self.snapshot
        if self.embedder is None:
            return "skipped", "embeddings disabled (index.embeddings: false)"
        if self.model_error or self.vector_error:
            return "failed", self.model_error or self.vector_error
        if self.embedding_status.startswith("unavailable") and snap.embedded_docs < len(snap.doc_uids):
            return "failed", f"embedding model {self.embedding_status}; searching lexically"
        if snap.embedded_docs == 0:
            return "skipped", "no vectors yet; run `ktx-index rebuild`"
        if snap.embedded_docs < len(snap.doc_uids):
            return "partial", f"{snap.embedded_docs}/{len(snap.doc_uids)} documents embedded; embeddings catching up"
        return "available", None


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
