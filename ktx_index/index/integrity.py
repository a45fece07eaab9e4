"""Opening the index for writing: detect damage, repair it from what is intact, say what was done.

The store is the source of truth: a damaged store is rebuilt from the project files; a
damaged or out-of-step lexical index is re-derived from the store; the vector file keeps a
key and checksum per row, so vectors are re-attached to a rebuilt store and only rows that
are missing or fail their checksum are embedded again. Each repair is returned as a sentence for
the rebuild report and ``status``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import tantivy

from indexers.models import SEARCH_KINDS
from ktx_index.errors import IndexUnavailable
from ktx_index.index.layout import IndexLayout
from ktx_index.index.lexical import LexicalIndex
from ktx_index.index.store import DocStore
from ktx_index.index.vectors import VectorFile


def unusable(path: Path) -> str | None:
    """Why the index cannot be used at ``path`` though nothing in it may be damaged (permissions, a folder
    where a file belongs), or None: such an index is left alone and reported, never wiped as damaged."""
    parts = [path.parent, *([path] if path.exists() else [])]
    if path.is_dir() and os.access(path, os.R_OK):
        parts += path.iterdir()
    for part in parts:
        if not os.access(part, os.R_OK | os.W_OK | (os.X_OK if part.is_dir() else 0)):
            return f"{part}: permission denied"
    if path.suffix and path.is_dir():
        return f"{path}: a folder where the index keeps a file"
    return None


def _refuse(path: Path, exc: BaseException) -> None:
    reason = unusable(path)
    if reason is not None:
        raise IndexUnavailable(
            f"cannot open the index ({reason})", "fix its permissions, or delete .ktx/index to build it again"
        ) from exc


def open_store(layout: IndexLayout) -> tuple[DocStore, list[str]]:
    try:
        store = DocStore(layout.store)
        verdict = store.check()
        if verdict != "ok":
            store.close()
            raise sqlite3.DatabaseError(verdict)
        return store, []
    except sqlite3.DatabaseError as exc:
        _refuse(layout.store, exc)
        layout.wipe(keep_vectors=True)  # they describe themselves (vectors.py): re-attached by check_vectors
        return DocStore(layout.store), [f"document store was damaged ({exc}); rebuilt from the project files"]


def open_lexical(layout: IndexLayout, store: DocStore) -> tuple[LexicalIndex, list[str]]:
    """Open tantivy; if it cannot be read, or disagrees with the store, re-derive it from the store."""
    repairs: list[str] = []
    try:
        lexical = LexicalIndex(layout.lexical)
        lexical.searcher.search(tantivy.Query.all_query(), 1)
        lexical.generation()
    except (ValueError, OSError, RuntimeError) as exc:
        _refuse(layout.lexical, exc)
        shutil.rmtree(layout.lexical, ignore_errors=True)
        lexical = LexicalIndex(layout.lexical)
        repairs.append(f"lexical index could not be read ({exc}); re-derived from the document store")
    stored = store.docs.count(SEARCH_KINDS)
    brand_new = stored == 0 and store.meta.generation() == 0 and lexical.num_docs() == 0
    if not brand_new and (lexical.generation() != store.meta.generation() or lexical.num_docs() != stored):
        if not repairs:
            repairs.append(
                f"lexical index was at generation {lexical.generation()} with {lexical.num_docs()} documents, "
                f"the store at {store.meta.generation()} with {stored}; re-derived from the store"
            )
        rederive(lexical, store)
    return lexical, repairs


def rederive(lexical: LexicalIndex, store: DocStore) -> None:
    writer = lexical.writer()
    writer.delete_all_documents()
    for doc in store.docs.iter(SEARCH_KINDS, write_order=True):  # the order a clean build adds them in
        lexical.add(writer, doc)
    lexical.set_generation(writer, store.meta.generation())
    writer.commit()
    writer.wait_merging_threads()
    lexical.reload()


def check_vectors(layout: IndexLayout, store: DocStore, dim: int) -> tuple[list[str], int]:
    """Make the store's key → row map and the vector file agree, losing no vector that can be trusted.

    References past the end of the file (truncated or replaced) are forgotten; rows whose checksum fails
    are forgotten (only those texts are embedded again); rows the sidecar names but the store does not
    (a store rebuilt from the project files, a build that crashed before its store commit) are
    re-attached, so their texts are not embedded again. A lost sidecar is rewritten from the store.
    Returns the repairs made and how many vectors were lost (to be embedded again)."""
    vectors = VectorFile(layout.vectors, dim)
    repairs: list[str] = []
    rows = vectors.rows()
    referenced = store.vectors.max_row() + 1
    lost = 0
    if referenced > rows:
        lost += store.vectors.forget_from(rows)
        repairs.append(
            f"vector file holds {rows} rows but the store references {referenced}; "
            "the missing vectors will be embedded again"
        )
    key_of_row = store.vectors.keys_by_row()
    records = vectors.records()
    if not rows and records:  # the vector file is gone, its key records stayed: they describe nothing
        vectors.rewrite_keys([])
        records = []
        repairs.append("vector file is missing; its key records were dropped and every text will be embedded again")
    if rows and (len(records) != rows or any(records[r][0] != k for r, k in key_of_row.items() if r < len(records))):
        missing = rows - min(len(records), rows)
        fixed = [
            (
                key_of_row.get(i, records[i][0] if i < len(records) else None),
                records[i][1] if i < len(records) else None,
            )
            for i in range(rows)
        ]
        vectors.rewrite_keys(fixed)
        records = vectors.records()
        if missing:
            repairs.append(f"vector key file lacked {missing} of {rows} records; rewritten from the store")
    damaged = vectors.damaged_rows(records) if records else []
    if damaged:
        bad = set(damaged)
        forget = [row for row in key_of_row if row in bad]
        store.vectors.forget(forget)
        lost += len(forget)
        repairs.append(
            f"{len(damaged)} vector rows failed their checksum; {len(forget)} texts will be embedded again (only those)"
        )
    else:
        bad = set()
    known = set(key_of_row.values())
    adopt: dict[str, int] = {}
    for row, (key, _crc) in enumerate(records[:rows]):
        if key is not None and row not in bad and key not in known and key not in adopt:
            adopt[key] = row
    if adopt:
        store.vectors.put(adopt)
        repairs.append(f"re-attached {len(adopt)} vectors from the vector file's own keys (nothing re-embedded)")
    if lost or adopt:  # rows forgotten or re-keyed: readers load their vectors whole (snapshot/delta.py)
        store.vectors.bump_epoch()
    return repairs, lost
