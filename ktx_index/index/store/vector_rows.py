"""The ``vectors`` table: which row of the vector file holds the vector of each embedded text (by key).

Texts are keyed by their content and the embedding fingerprint, so a text shared by many documents,
or seen again after a rebuild, is embedded once. Forgetting rows bumps the meta ``vector_epoch``:
readers holding those rows must load their vectors whole (snapshot/delta.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable

from ktx_index.index.store.meta import Meta


class VectorRows:
    def __init__(self, db: sqlite3.Connection, meta: Meta) -> None:
        self._db, self._meta = db, meta

    def put(self, rows: dict[str, int]) -> None:
        """Vector key → its row in the vector file."""
        self._db.executemany("INSERT OR REPLACE INTO vectors(key, row) VALUES (?, ?)", list(rows.items()))

    def max_row(self) -> int:
        """The largest row referenced (-1 when none): the next vector is written after it."""
        return self._db.execute("SELECT COALESCE(MAX(row), -1) FROM vectors").fetchone()[0]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]

    def keys_by_row(self) -> dict[int, str]:
        """Every referenced row → its vector key (index/integrity.py checks them against the vector file's own
        keys). Built by row in one pass: every writer's open reads them all."""
        return dict(self._db.execute("SELECT row, key FROM vectors"))

    def forget_from(self, row: int) -> int:
        """Drop the rows from ``row`` on (the file was truncated or is rewritten from there); how many went."""
        return self._forgotten(self._db.execute("DELETE FROM vectors WHERE row >= ?", (row,)).rowcount)

    def forget(self, rows: Iterable[int]) -> int:
        """Drop these rows (their vectors failed a checksum); how many went."""
        return self._forgotten(
            self._db.executemany("DELETE FROM vectors WHERE row = ?", [(row,) for row in rows]).rowcount
        )

    def _forgotten(self, lost: int) -> int:
        if lost:
            self.bump_epoch()
        return lost

    def bump_epoch(self) -> None:
        """Rows were forgotten or re-keyed: deltas do not apply across this (snapshot/delta.py)."""
        self._meta.set({"vector_epoch": str(time.time_ns())})
