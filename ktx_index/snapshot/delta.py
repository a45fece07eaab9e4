"""Applying a commit to a loaded snapshot: only the documents and vectors it changed are read.

A full load reads every searchable document and chunk and gathers the whole vector matrix,
which is linear in the index with a large constant (a second or more at 100k columns). A
delta reads the changed rows (the store logs the uids each generation touched) and patches
copies of the snapshot's structures: per-document arrays through ``doc_arrays``, the
identifier map, parents and wiki pages, the ranking facts (snapshot/facts.py ``update_facts``, from
every changed uid, searchable or not), and the chunk → matrix-row maps, appending new vectors to
the matrix's spare rows. The previous snapshot is left as it was, for queries still
ranking against it. The result equals a full load of the same generation (tests compare
them), except that matrix rows can be in another order and a deleted document's vector can
stay in the matrix unreferenced until the next full load.
"""

from __future__ import annotations

import bisect
import copy
from collections.abc import Callable

import numpy as np

from ktx_index.index.store import DocStore
from ktx_index.index.vectors import VectorFile
from ktx_index.snapshot.coarse import coarse_for
from ktx_index.snapshot.facts import update_facts
from ktx_index.snapshot.snapshot import (
    CONTAINER_CODES,
    DocEntry,
    Snapshot,
    derive_wiki,
    doc_arrays,
    doc_entry,
    edited_stems,
    group_chunks,
    insort_new,
    snapshot_rows,
)
from ktx_index.snapshot.uids import UidIndex

#: A delta touching more than this share of the documents is loaded whole instead (as fast, simpler).
MAX_DELTA_SHARE = 0.2
#: Matrix rows no chunk references any more (deleted or re-embedded documents) beyond this share of
#: the matrix make the next vector update a full load, which drops them.
MAX_UNREFERENCED_SHARE = 0.25
#: Up to this many documents in or out, the uid list and map are edited rather than rebuilt.
SMALL_DELTA = 2000


def apply_documents(old: Snapshot, store: DocStore, generation: int, changed: set[str]) -> tuple[Snapshot, np.ndarray]:
    """A new snapshot at ``generation`` from ``old`` and the uids changed since; also old → new doc index (-1:
    gone) for the vector update."""
    snap = copy.copy(old)
    snap.generation = generation
    fresh = {row[0]: doc_entry(row) for row in snapshot_rows(store, changed)}
    previous = {uid: old.entries[uid] for uid in changed if uid in old.entries}
    gone = {uid for uid in previous if uid not in fresh}
    added = sorted(uid for uid in fresh if uid not in previous)
    # entries are read by deltas only, never by a query: updated in place, owned by the new snapshot from now
    snap.entries = entries = old.entries
    for uid in gone:
        del entries[uid]
    entries.update(fresh)
    snap.pages = pages = dict(old.pages)
    for uid in changed:
        pages.pop(uid, None)
    pages.update((uid, entry.wiki) for uid, entry in fresh.items() if entry.wiki is not None)
    snap.stems = edited_stems(
        old.stems,
        (uid for uid in gone if previous[uid].kind in CONTAINER_CODES),
        (uid for uid in added if fresh[uid].kind in CONTAINER_CODES),
    )
    snap.connections = dict(old.connections)
    for entry in fresh.values():
        snap.connections.setdefault(entry.connection, len(snap.connections))  # codes only grow
    snap.kind_masks = {}
    snap.derived = {}  # the old snapshot's caches stay its own
    # every uid the commit logged, not only searchable ones: tables and sources feed the facts (joins, twins, inputs)
    snap.facts = update_facts(old.facts, store, changed)

    if gone or added:
        _renumber(old, snap, gone, added)
        is_added = np.zeros(len(snap.doc_uids), dtype=bool)
        is_added[[snap.uid_index[uid] for uid in added]] = True
        keep = np.ones(len(old.doc_uids), dtype=bool)
        keep[[old.uid_index[uid] for uid in gone]] = False
        old_to_new = np.full(len(old.doc_uids), -1, dtype=np.int64)
        old_to_new[keep] = np.flatnonzero(~is_added)
    else:
        is_added, keep = None, None
        old_to_new = np.arange(len(old.doc_uids), dtype=np.int64)

    def moved(array: np.ndarray, fill: int) -> np.ndarray:
        """An old per-document array in the new order (a copy), added documents at ``fill``."""
        if keep is None:
            return array.copy()
        out = np.full(len(snap.doc_uids), fill, dtype=array.dtype)
        out[~is_added] = array[keep]
        return out

    snap.doc_kind, snap.doc_conn = moved(old.doc_kind, 0), moved(old.doc_conn, 0)
    rows = np.array([snap.uid_index[uid] for uid in fresh], dtype=np.int64)
    snap.doc_kind[rows], snap.doc_conn[rows] = doc_arrays(snap, fresh.values())
    _update_exact(old, snap, previous, fresh)
    _update_parents(old, snap, old_to_new, previous, gone, fresh, moved)
    derive_wiki(snap)
    return snap, old_to_new


def _renumber(old: Snapshot, snap: Snapshot, gone: set[str], added: list[str]) -> None:
    """The sorted uid list and uid → index map with documents gone and added. For a few, the old list is
    edited and the map records the change (snapshot/uids.py); for many, both are rebuilt."""
    if len(gone) + len(added) > SMALL_DELTA:
        kept = [uid for uid in old.doc_uids if uid not in gone] if gone else old.doc_uids
        snap.doc_uids = sorted(kept + added) if added else kept  # two sorted runs: a linear merge
        snap.uid_index = UidIndex(snap.doc_uids)
        return
    uids = list(old.doc_uids)
    for at in sorted((old.uid_index[uid] for uid in gone), reverse=True):
        del uids[at]
    for uid in added:
        bisect.insort(uids, uid)
    snap.doc_uids, snap.uid_index = uids, old.uid_index.edited(uids, gone, added)


def _update_exact(old: Snapshot, snap: Snapshot, previous: dict[str, DocEntry], fresh: dict[str, DocEntry]) -> None:
    """Take changed documents' old keys out of the identifier map and put their new keys in (copied lists)."""
    snap.exact = exact = dict(old.exact)
    snap.exact_by_length = by_length = dict(old.exact_by_length)
    copied: set[str] = set()
    copied_lengths: set[int] = set()

    def own(key: str) -> list[str]:
        if key not in copied:
            exact[key] = list(exact.get(key, ()))
            copied.add(key)
        return exact[key]

    def own_length(length: int) -> list[str]:
        if length not in copied_lengths:
            by_length[length] = list(by_length.get(length, ()))
            copied_lengths.add(length)
        return by_length.setdefault(length, [])  # emptied and deleted by an earlier key of this commit

    for uid, entry in previous.items():
        for key in entry.keys:
            own(key).remove(uid)
    for uid, entry in fresh.items():
        for key in entry.keys:
            insort_new(own(key), uid)
    for key in sorted(copied):  # in order: the same commit updates the length map the same way every time
        if exact[key]:
            if key not in old.exact:
                insort_new(own_length(len(key)), key)
        else:
            del exact[key]
            if key in old.exact:
                keys = own_length(len(key))
                keys.remove(key)
                if not keys:
                    del by_length[len(key)]


def _update_parents(
    old: Snapshot,
    snap: Snapshot,
    old_to_new: np.ndarray,
    previous: dict[str, DocEntry],
    gone: set[str],
    fresh: dict[str, DocEntry],
    moved: Callable[[np.ndarray, int], np.ndarray],
) -> None:
    """Container parents: old links renumbered, changed documents' recomputed, orphans adopted or made."""
    parents = old.doc_parent
    parents = moved(np.where(parents >= 0, old_to_new[np.maximum(parents, 0)], -1), -1)
    snap.orphans = orphans = {k: list(v) for k, v in old.orphans.items()}
    for uid in set(fresh) | gone:  # changed documents leave the orphan lists they were on
        entry = previous.get(uid)
        if entry is not None and entry.parent in orphans and uid in orphans[entry.parent]:
            orphans[entry.parent].remove(uid)
            if not orphans[entry.parent]:
                del orphans[entry.parent]
    for uid in gone:  # a vanished container orphans its members
        children = np.flatnonzero(old.doc_parent == old.uid_index[uid])
        for child in children:
            child_uid = old.doc_uids[child]
            if child_uid not in gone and child_uid not in fresh:
                orphans.setdefault(uid, []).append(child_uid)
    for uid, entry in fresh.items():
        if entry.parent is not None:
            parent = snap.uid_index.get(entry.parent, -1)
            parents[snap.uid_index[uid]] = parent
            if parent < 0:
                orphans.setdefault(entry.parent, []).append(uid)
    for uid in fresh:  # a new container adopts the members that were waiting for it
        for child in orphans.pop(uid, ()):
            parents[snap.uid_index[child]] = snap.uid_index[uid]
    for children in orphans.values():
        children.sort()
    snap.doc_parent = parents


def apply_vectors(
    old: Snapshot, snap: Snapshot, store: DocStore, vectors: VectorFile, changed: set[str], old_to_new: np.ndarray
) -> bool:
    """Bring ``snap``'s chunk maps and matrix up to date from ``old``'s: chunks of changed documents and of
    documents whose texts got vectors since ``old`` was read. False when a full vector load is due instead."""
    meta = store.meta.all()
    if (
        old.matrix is None
        or old.matrix_file_rows is None
        or meta.get("vector_epoch", "") != old.vector_epoch
        or meta.get("embed_fingerprint", "") != old.embed_fingerprint
    ):
        return False
    seen = store.vectors.max_row()
    touched = set(changed) | set(store.chunks.uids_with_vectors_after(old.vector_rows_seen))
    if len(touched) > MAX_DELTA_SHARE * max(1, len(snap.doc_uids)):
        return False
    rows = store.chunks.rows_of(sorted(uid for uid in touched if uid in snap.uid_index))
    new_docs = np.array([snap.uid_index[uid] for uid, row in rows if row is not None], dtype=np.int64)
    new_file_rows = np.array([row for _uid, row in rows if row is not None], dtype=np.int64)

    # the old chunks that stay: not of a touched or deleted document, renumbered to the new order
    sizes = np.diff(np.r_[old.chunk_starts, len(old.chunk_rows)])
    old_docs = np.repeat(old.chunk_docs, sizes)
    replaced = np.zeros(len(old.doc_uids), dtype=bool)
    replaced[[old.uid_index[uid] for uid in touched if uid in old.uid_index]] = True
    stay = ~replaced[old_docs] & (old_to_new[old_docs] >= 0)
    kept_docs, kept_rows = old_to_new[old_docs[stay]], old.chunk_rows[stay]

    # new vector-file rows go to the matrix's spare rows (the old snapshot's matrix never covers them)
    file_rows = old.matrix_file_rows
    order = np.argsort(file_rows, kind="stable")
    at = np.searchsorted(file_rows, new_file_rows, sorter=order)
    found = at < len(file_rows)
    found[found] = file_rows[order[at[found]]] == new_file_rows[found]
    missing = np.unique(new_file_rows[~found])
    try:
        block = vectors.read_rows(missing)
    except ValueError:
        return False
    buffer, used = old.matrix_buffer, len(old.matrix)
    if buffer is None or len(buffer) < used + len(missing):
        buffer = np.empty((used + len(missing) + used // 8 + 1024, vectors.dim), dtype=np.float32)
        buffer[:used] = old.matrix
    buffer[used : used + len(missing)] = block
    snap.matrix_buffer, snap.matrix = buffer, buffer[: used + len(missing)]
    spare = len(buffer) - len(snap.matrix)
    snap.coarse = coarse_for(snap.matrix, spare) if old.coarse is None else old.coarse.extended(snap.matrix)
    snap.matrix_file_rows = all_rows = np.concatenate([file_rows, missing])
    matrix_rows = np.empty(len(new_file_rows), dtype=np.int64)
    matrix_rows[found] = order[at[found]]
    matrix_rows[~found] = used + np.searchsorted(missing, new_file_rows[~found])

    docs = np.concatenate([kept_docs, new_docs])
    chunk_rows = np.concatenate([kept_rows, matrix_rows])
    by_doc = np.argsort(docs, kind="stable")  # a document's chunks are all kept or all new, in order
    group_chunks(snap, docs[by_doc], chunk_rows[by_doc])
    snap.vector_rows_seen = seen
    referenced = np.count_nonzero(np.bincount(snap.chunk_rows, minlength=len(all_rows)))
    return len(all_rows) - referenced <= MAX_UNREFERENCED_SHARE * max(1, len(all_rows))
