"""The ``meta`` table: the store's key → value facts (generation, format stamp, vector epoch, statuses).

Readers poll it to decide what to reload (a new ``generation`` reloads documents, a new ``vectors_version``
the vectors), so every value is a string written inside the writer's transaction.
"""

from __future__ import annotations

import sqlite3


class Meta:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def all(self) -> dict[str, str]:
        """Every value at once: a reader compares several of them to one moment of the store."""
        return dict(self._db.execute("SELECT key, value FROM meta"))

    def get(self, key: str, default: str | None = None) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set(self, values: dict[str, str]) -> None:
        self._db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items()))

    def generation(self) -> int:
        """The last committed build's number (0 for a new store)."""
        return int(self.get("generation", "0") or 0)
