"""What a query needs in memory, loaded from the store at one generation.

Per-document kind and connection codes, the exact-identifier map, container parents, wiki
links and the vector matrix; documents themselves stay in the store and are fetched only
for the few results returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from indexers.models import SEARCH_KINDS
from ktx_index.analysis import identifier_key, identifier_part_key
from ktx_index.search.facts import Facts, load_facts
from ktx_index.store import DocStore
from ktx_index.vectors import VectorFile

#: A mention that names more items than this (e.g. 'created_at') is not linked.
MAX_LINK_TARGETS = 6


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
    exact_by_length: dict[int, list[str]] = field(default_factory=dict)  # the identifier keys, by length
    kind_masks: dict[tuple, np.ndarray] = field(default_factory=dict)  # (kinds, connection) → embedded-doc mask
    doc_parent: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # source/table index or -1
    links: dict[int, list[int]] = field(default_factory=dict)  # wiki page index → indexes of what it mentions
    facts: Facts = field(default_factory=Facts)  # joins, usage tiers and stored values, by uid
    shadowed: set[str] = field(default_factory=set)  # global wiki uids hidden by a user page
    wiki_connections: dict[str, tuple[str, ...]] = field(default_factory=dict)  # tagged pages → their connections
    derived: dict[str, object] = field(default_factory=dict)  # per-snapshot caches of searches (reset with vectors)
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


def load_documents(store: DocStore, generation: int) -> Snapshot:
    """Per-document codes, the identifier map, container parents and wiki links, from the store."""
    snap = Snapshot(generation=generation)
    kind_code = {kind: i for i, kind in enumerate(SEARCH_KINDS)}
    marks = ",".join("?" * len(SEARCH_KINDS))
    wiki = {uid: fields for uid, _conn, fields in store.fields("wiki")}
    rows = [
        (
            uid,
            kind,
            conn,
            name,
            ref_id,
            display or "",
            (wiki[uid].get("attrs") or {}).get("scope") if uid in wiki else None,
        )
        for uid, kind, conn, name, ref_id, display in store.db.execute(
            f"SELECT uid, kind, connection, name, ref_id, display FROM docs WHERE kind IN ({marks}) ORDER BY uid",
            SEARCH_KINDS,
        )
    ]
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
    for key in snap.exact:
        snap.exact_by_length.setdefault(len(key), []).append(key)
    snap.links = resolve_links(wiki, snap)
    for uid, fields in wiki.items():
        tagged = (fields.get("attrs") or {}).get("connections")
        if tagged:
            snap.wiki_connections[uid] = tuple(tagged)
    snap.doc_parent = np.full(len(rows), -1, dtype=np.int64)
    for i, (_uid, kind, conn, name, ref_id, display, _scope) in enumerate(rows):
        parent = parent_uid(kind, conn, name, ref_id, display)
        if parent is not None:
            snap.doc_parent[i] = snap.uid_index.get(parent, -1)
    snap.facts = load_facts(store)
    return snap


def resolve_links(wiki: dict[str, dict], snap: Snapshot) -> dict[int, list[int]]:
    """Wiki page → the sources, tables, measures and columns its sl_refs and `code spans` name.

    A mention resolves through the exact-identifier map, trying dotted suffixes
    ('postgres-warehouse.mart_arr_daily' → 'mart_arr_daily'); a name shared by many items
    ('created_at') is too vague to link."""
    links: dict[int, list[int]] = {}
    for uid, fields in wiki.items():
        page = snap.uid_index.get(uid)
        if page is None:
            continue
        targets: list[int] = []
        for mention in (fields.get("attrs") or {}).get("mentions") or []:
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


def load_vectors(store: DocStore, vectors: VectorFile, snap: Snapshot) -> str | None:
    """The matrix of unique vectors and the chunk → row → document maps; an error when the file does not
    match the store (the snapshot is then left without vectors: never rank with inconsistent parts)."""
    chunk_rows = store.chunk_rows()
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
        matrix = vectors.read_rows(unique)
        error = None
    except ValueError as exc:  # never rank with vectors that do not match the manifest
        matrix = np.zeros((0, vectors.dim), dtype=np.float32)
        chunk_to_row = np.zeros(0, dtype=np.int64)
        starts, docs = [], []
        error = f"vector file does not match the index ({exc}); run `ktx-index rebuild` to repair"
    snap.matrix = matrix
    snap.kind_masks = {}  # masks are over the embedded documents, which may have changed
    snap.derived = {}
    snap.chunk_rows = chunk_to_row
    snap.chunk_starts = np.array(starts, dtype=np.int64)
    snap.chunk_docs = np.array(docs, dtype=np.int64)
    snap.embedded_docs = len(docs)
    snap.doc_group = np.full(len(snap.doc_uids), -1, dtype=np.int64)
    snap.doc_group[snap.chunk_docs] = np.arange(len(docs))
    return error
