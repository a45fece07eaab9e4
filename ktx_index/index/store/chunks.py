"""The ``chunks`` table: the vector keys of each document's embedding texts, in order.

A document's chunks are joined to the ``vectors`` table to find their matrix rows; a chunk whose text
has no vector yet reads as row None (embedded later, or never without a model).
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple

from ktx_index.index.store.sql import select_in

#: (uid, vector row or None) of one chunk. Plain tuples: a snapshot load reads every chunk of the index.
ChunkRow = tuple[str, int | None]
_CHUNK_ROWS = "SELECT c.uid, v.row FROM chunks c LEFT JOIN vectors v ON v.key = c.key"


class ChunkStats(NamedTuple):
    chunks: int
    embedded: int  # chunks whose text has a vector


class Chunks:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def put(self, uid: str, keys: list[str]) -> None:
        """A document's chunks, replacing the ones it had."""
        self.delete(uid)
        self._db.executemany(
            "INSERT INTO chunks(uid, idx, key) VALUES (?, ?, ?)", [(uid, i, k) for i, k in enumerate(keys)]
        )

    def delete(self, uid: str) -> None:
        self._db.execute("DELETE FROM chunks WHERE uid = ?", (uid,))

    def rows(self) -> list[ChunkRow]:
        """(uid, vector row or None when not embedded yet) for every chunk, grouped by uid, fetched whole."""
        return self._db.execute(f"{_CHUNK_ROWS} ORDER BY c.uid, c.idx").fetchall()

    def rows_of(self, uids: list[str]) -> list[ChunkRow]:
        """``rows`` for these documents only."""
        sql = f"{_CHUNK_ROWS} WHERE c.uid IN ({{marks}}) ORDER BY c.uid, c.idx"
        return sorted(select_in(self._db, sql, uids), key=lambda r: r[0])  # stable: a document's chunks stay in order

    def uids_with_vectors_after(self, row: int) -> list[str]:
        """Documents with a chunk whose vector row is above ``row`` (embedded since a reader read them)."""
        # CROSS JOIN keeps vectors (by its row index) as the outer loop: the few new rows, not every chunk
        sql = "SELECT DISTINCT c.uid FROM vectors v CROSS JOIN chunks c ON c.key = v.key WHERE v.row > ?"
        return [uid for (uid,) in self._db.execute(sql, (row,))]

    def uids_for_keys(self, keys: list[str]) -> list[str]:
        """Documents that have a chunk with one of these vector keys."""
        sql = "SELECT DISTINCT uid FROM chunks WHERE key IN ({marks})"
        return sorted({uid for (uid,) in select_in(self._db, sql, keys)})

    def missing_keys(self, among: list[str] | None = None) -> list[str]:
        """Keys of chunk texts (of every document, or only of the ``among`` uids) that have no vector yet."""
        sql = "SELECT DISTINCT c.key FROM chunks c LEFT JOIN vectors v ON v.key = c.key WHERE v.row IS NULL"
        rows = self._db.execute(sql) if among is None else select_in(self._db, sql + " AND c.uid IN ({marks})", among)
        return [key for (key,) in rows]

    def stats(self) -> ChunkStats:
        """(chunks, chunks with a vector)."""
        sql = "SELECT COUNT(*), COUNT(v.row) FROM chunks c LEFT JOIN vectors v ON v.key = c.key"
        return ChunkStats(*self._db.execute(sql).fetchone())
