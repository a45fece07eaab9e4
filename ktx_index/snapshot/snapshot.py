"""What a query needs in memory, loaded from the store at one generation, and kept current by deltas.

Per-document kind and connection codes, the exact-identifier map, container parents, wiki
pages' scopes and the vector matrix; documents themselves stay in the store and are fetched only
for the few results returned.

A commit changes a few documents of a large index, so a reader does not load everything
again: ``apply_documents`` and ``apply_vectors`` (snapshot/delta.py) derive a new snapshot from
the previous one and the documents the store logged as changed. Everything a snapshot holds
per document comes from ``doc_entry`` (one store row → one ``DocEntry``) and the arrays
``doc_arrays`` makes, which the full load and a delta both use: a new per-document value is added
in those two places. Snapshots are never mutated once a query may hold them (copy-on-write).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein, Levenshtein

from indexers.models import CONTAINER_KINDS, CONTAINER_OF, SEARCH_KINDS
from ktx_index.analysis import identifier_part_key, uid_stem
from ktx_index.index.store import DocStore, unpack
from ktx_index.index.store.documents import SearchableRow
from ktx_index.index.vectors import VectorFile
from ktx_index.snapshot.coarse import Coarse, coarse_for
from ktx_index.snapshot.facts import Facts, load_facts
from ktx_index.snapshot.uids import UidIndex

KIND_CODE = {kind: i for i, kind in enumerate(SEARCH_KINDS)}
#: The kinds that hold others (a source's measures and dimensions, a table's columns).
CONTAINER_CODES = frozenset(KIND_CODE[kind] for kind in CONTAINER_KINDS)


@dataclass(frozen=True, slots=True)
class WikiInfo:
    scope: str | None  # USER or GLOBAL
    ref_id: str
    connections: tuple[str, ...] = ()  # the connections a tagged page applies to (none: every connection)


@dataclass(frozen=True, slots=True)
class DocEntry:
    """What the snapshot keeps of one document, derived from its store row by ``doc_entry``."""

    kind: int
    connection: str | None
    keys: tuple[str, ...]  # its identifier keys (exact map)
    parent: str | None  # uid of its source or table
    wiki: WikiInfo | None


@dataclass
class Snapshot:
    generation: int = -1
    vectors_version: str = ""
    doc_uids: list[str] = field(default_factory=list)  # sorted: a delta keeps the order a full load has
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
    exact_by_length: dict[int, list[str]] = field(default_factory=dict)  # the identifier keys, by length, sorted
    kind_masks: dict[tuple, np.ndarray | None] = field(default_factory=dict)  # (kinds, connection) → embedded-doc mask
    doc_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # source/table index or -1
    facts: Facts = field(default_factory=Facts)  # joins, twins and measure inputs, by uid (facts.py)
    shadowed: set[str] = field(default_factory=set)  # global wiki uids hidden by a user page
    wiki_connections: dict[str, tuple[str, ...]] = field(default_factory=dict)  # tagged pages → their connections
    derived: dict[str, object] = field(default_factory=dict)  # per-snapshot caches of searches (reset with vectors)
    uid_index: UidIndex = field(default_factory=lambda: UidIndex([]))
    # kept for deltas
    entries: dict[str, DocEntry] = field(default_factory=dict)
    orphans: dict[str, list[str]] = field(default_factory=dict)  # missing parent uid → its children's uids
    pages: dict[str, WikiInfo] = field(default_factory=dict)  # wiki uid → what shadowing and scoping need
    stems: dict[str, tuple[str, ...]] = field(default_factory=dict)  # layer stem → its tables and sources (sorted)
    matrix_buffer: np.ndarray | None = None  # matrix is its head; rows past it are free for the next delta
    matrix_file_rows: np.ndarray | None = None  # vector-file row of each matrix row
    coarse: Coarse | None = None  # the matrix's coarse projection, on large indexes (snapshot/coarse.py)
    vector_rows_seen: int = -1  # the store's largest vector row when vectors were last read
    words_epoch: str = ""  # changes when the vocabulary gains or loses a word (the bridge reads it again)
    vector_epoch: str = ""  # changes when vector rows are forgotten or re-keyed: deltas do not apply then
    embed_fingerprint: str = ""


def doc_arrays(snap: Snapshot, entries: Iterable[DocEntry]) -> tuple[np.ndarray, np.ndarray]:
    """(``doc_kind``, ``doc_conn``) of these documents, in their order: the full load fills the snapshot's
    per-document arrays with it, a delta the rows of the documents it changed (connection codes are assigned
    first)."""
    entries = list(entries)
    kinds = np.array([e.kind for e in entries], dtype=np.int8)
    return kinds, np.array([snap.connections[e.connection] for e in entries], dtype=np.int32)


def curated(snap: Snapshot) -> bool:
    """Whether the project has a hand-written semantic layer: a measure is defined (a scan-generated source has
    none). Its answers are curated sources, measures and dimensions beside their scanned copies, and they score
    higher than a scan-only project's: the learned order and the confidence rule read it (search/learned.py,
    search/signals.py). Read once per snapshot."""
    known = snap.derived.get("curated")
    if known is None:
        known = snap.derived["curated"] = bool(np.any(snap.doc_kind == SEARCH_KINDS.index("sl_measure")))
    return bool(known)


def parent_uid(kind: str, conn: str | None, name: str, ref_id: str, display: str) -> str | None:
    """The source a measure or dimension belongs to, the table a column belongs to."""
    container = CONTAINER_OF.get(kind)
    owned = ref_id if container == "sl_source" else display  # a source's members by its id, a table's by display
    if container is None or not owned.endswith("." + name):
        return None
    return f"{container}:{conn}:{owned[: -len(name) - 1]}"


def exact_keys(*names: str | None) -> set[str]:
    """Identifier keys an item answers to: its name, id, display, and each dotted suffix of them
    ('main.Sales.SalesOrderHeader' answers to 'Sales.SalesOrderHeader' and 'SalesOrderHeader')."""
    keys: set[str] = set()
    for i, text in enumerate(names):
        if not text or text in names[:i]:  # an id and its display are often the same
            continue
        suffix = ""
        # a key drops separators, so a suffix's key is its parts' keys joined (parts repeat: cached)
        for part in reversed(text.split(".")):
            suffix = identifier_part_key(part) + suffix
            if suffix:
                keys.add(suffix)
    return keys


def snapshot_rows(store: DocStore, uids: Iterable[str] | None = None) -> list[SearchableRow]:
    """The rows ``doc_entry`` reads: every searchable document sorted by uid, or only these uids."""
    return store.docs.searchable_rows(SEARCH_KINDS, uids)


def doc_entry(row: SearchableRow) -> DocEntry:
    """One store row (``snapshot_rows``) → what the snapshot keeps of that document."""
    _uid, kind, conn, name, ref_id, display, body = row
    wiki = None
    if kind == "wiki":
        attrs = unpack(body).get("attrs") or {}
        wiki = WikiInfo(attrs.get("scope"), ref_id, tuple(attrs.get("connections") or ()))
    return DocEntry(
        kind=KIND_CODE[kind],
        connection=conn,
        keys=tuple(sorted(exact_keys(name, ref_id, display or ""))),
        parent=parent_uid(kind, conn, name, ref_id, display or ""),
        wiki=wiki,
    )


def load_documents(store: DocStore, generation: int) -> Snapshot:
    """Per-document codes, the identifier map, container parents and wiki pages, from the store."""
    snap = Snapshot(generation=generation)
    for row in snapshot_rows(store):
        snap.entries[row[0]] = doc_entry(row)
    snap.doc_uids = list(snap.entries)
    snap.uid_index = UidIndex(snap.doc_uids)
    for entry in snap.entries.values():
        snap.connections.setdefault(entry.connection, len(snap.connections))
    snap.doc_kind, snap.doc_conn = doc_arrays(snap, snap.entries.values())
    snap.doc_parent = np.full(len(snap.doc_uids), -1, dtype=np.int64)
    for i, (uid, entry) in enumerate(snap.entries.items()):
        for key in entry.keys:
            snap.exact.setdefault(key, []).append(uid)
        if entry.wiki is not None:
            snap.pages[uid] = entry.wiki
        if entry.parent is not None:
            parent = snap.uid_index.get(entry.parent, -1)
            snap.doc_parent[i] = parent
            if parent < 0:
                snap.orphans.setdefault(entry.parent, []).append(uid)
    snap.stems = edited_stems({}, (), (uid for uid, entry in snap.entries.items() if entry.kind in CONTAINER_CODES))
    for key in snap.exact:
        snap.exact_by_length.setdefault(len(key), []).append(key)
    for keys in snap.exact_by_length.values():
        keys.sort()
    derive_wiki(snap)
    snap.facts = load_facts(store)
    return snap


def edited_stems(
    stems: dict[str, tuple[str, ...]], gone: Iterable[str], added: Iterable[str]
) -> dict[str, tuple[str, ...]]:
    """Layer stem → tables and sources (lifts.namesakes), with containers gone and added: a copy, whose
    changed entries are new tuples (a snapshot's are never modified)."""
    out = dict(stems)
    for uid in gone:
        stem = uid_stem(uid)
        out[stem] = tuple(u for u in out.get(stem, ()) if u != uid)
        if not out[stem]:
            del out[stem]
    grown: dict[str, list[str]] = {}
    for uid in added:
        grown.setdefault(uid_stem(uid), []).append(uid)
    for stem, uids in grown.items():
        out[stem] = tuple(sorted((*out.get(stem, ()), *uids)))
    return out


def nearest_key(keys_by_length: dict[int, list[str]], key: str, edits: int) -> tuple[str, int] | None:
    """The identifier key closest to ``key`` within ``edits`` Damerau-Levenshtein edits (the first of equals,
    shortest length first), or None.

    Keys more than ``edits`` characters longer or shorter cannot be that close. Within a length, plain
    Levenshtein (bit-parallel, ~20x faster) filters first: a transposition is one Damerau-Levenshtein edit
    but two Levenshtein ones, so no key within ``edits`` of the first is beyond ``2 * edits`` of the
    second, and the candidates keep their order: the answer is the one a full Damerau-Levenshtein scan gives."""
    near: tuple[str, int] | None = None
    for length in range(len(key) - edits, len(key) + edits + 1):
        keys = keys_by_length.get(length)
        if not keys:
            continue
        candidates = process.extract(key, keys, scorer=Levenshtein.distance, score_cutoff=2 * edits, limit=None)
        if not candidates:
            continue
        candidates.sort(key=lambda c: c[2])
        found = process.extractOne(
            key, [c[0] for c in candidates], scorer=DamerauLevenshtein.distance, score_cutoff=edits
        )
        if found is not None and (near is None or found[1] < near[1]):
            near = (found[0], found[1])
    return near


def derive_wiki(snap: Snapshot) -> None:
    """Shadowed global pages and tagged pages' connections: recomputed whole (pages are few)."""
    pages = sorted(snap.pages.items())
    user_keys = {w.ref_id for _uid, w in pages if w.scope == "USER"}
    snap.shadowed = {uid for uid, w in pages if w.scope == "GLOBAL" and w.ref_id in user_keys}
    snap.wiki_connections = {uid: w.connections for uid, w in pages if w.connections}


def insort_new(items: list[str], item: str) -> None:
    """Insert into a sorted list unless present."""
    at = bisect.bisect_left(items, item)
    if at == len(items) or items[at] != item:
        items.insert(at, item)


def group_chunks(snap: Snapshot, chunk_docs: np.ndarray, chunk_rows: np.ndarray) -> None:
    """Per-chunk doc indexes (sorted) and matrix rows → the grouped arrays the dense lane reduces over."""
    if len(chunk_docs):
        starts = np.flatnonzero(np.r_[True, chunk_docs[1:] != chunk_docs[:-1]])
    else:
        starts = np.zeros(0, dtype=np.int64)
    snap.kind_masks = {}  # masks are over the embedded documents, which may have changed
    snap.derived = {}  # caches of searches over the vectors (a copied snapshot must not share its parent's)
    snap.chunk_rows = chunk_rows.astype(np.int64, copy=False)
    snap.chunk_starts = starts.astype(np.int64)
    snap.chunk_docs = chunk_docs[starts].astype(np.int64)
    snap.embedded_docs = len(starts)
    snap.doc_group = np.full(len(snap.doc_uids), -1, dtype=np.int64)
    snap.doc_group[snap.chunk_docs] = np.arange(len(starts))


def group_rows(snap: Snapshot, group: int) -> np.ndarray:
    """The matrix rows of one embedded document's chunks (``group``: its position in ``chunk_docs``)."""
    starts = snap.chunk_starts
    end = starts[group + 1] if group + 1 < len(starts) else len(snap.chunk_rows)
    return snap.chunk_rows[starts[group] : end]


def load_vectors(store: DocStore, vectors: VectorFile, snap: Snapshot) -> str | None:
    """The matrix of unique vectors and the chunk → row → document maps; an error when the file does not
    match the store (the snapshot is then left without vectors: never rank with inconsistent parts)."""
    meta = store.meta.all()
    snap.vector_epoch = meta.get("vector_epoch", "")
    snap.embed_fingerprint = meta.get("embed_fingerprint", "")
    snap.vector_rows_seen = store.vectors.max_row()  # first: rows added while reading are taken next time
    doc_of_chunk, vec_rows = [], []
    for uid, row in store.chunks.rows():
        idx = snap.uid_index.get(uid)
        if row is not None and idx is not None:
            doc_of_chunk.append(idx)
            vec_rows.append(row)
    try:
        # twins (a source and its table, a dimension and its column) often share one vector row:
        # keep each row once and map chunks onto it
        unique, chunk_to_row = np.unique(np.array(vec_rows, dtype=np.int64), return_inverse=True)
        buffer = vectors.read_rows(unique, spare=len(unique) // 16 + 1024)
        matrix, error = buffer[: len(unique)], None
    except ValueError as exc:  # never rank with vectors that do not match the manifest
        unique, matrix = np.zeros(0, dtype=np.int64), np.zeros((0, vectors.dim), dtype=np.float32)
        buffer = matrix
        chunk_to_row, doc_of_chunk = np.zeros(0, dtype=np.int64), []
        error = f"vector file does not match the index ({exc}); run `ktx-index rebuild` to repair"
    snap.matrix, snap.matrix_buffer = matrix, buffer
    snap.matrix_file_rows = unique
    snap.coarse = coarse_for(matrix, spare=len(buffer) - len(matrix))
    group_chunks(snap, np.array(doc_of_chunk, dtype=np.int64), chunk_to_row)
    return error
