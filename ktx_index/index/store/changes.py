"""The ``changes`` table: which documents each recent commit touched, so readers apply it as a delta.

A reader at generation G asks for the uids changed after G (snapshot/delta.py); the log keeps the last
``CHANGE_LOG_GENERATIONS`` and the meta value ``changes_from`` says where it starts, so a reader further
behind (or after a forced or very large commit, which is not logged) loads everything.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from ktx_index.index.store.meta import Meta

#: Generations of changed uids kept for readers (snapshot/delta.py); a reader further behind loads everything.
CHANGE_LOG_GENERATIONS = 64
#: A commit changing more documents than this is not logged: readers load everything after it anyway.
CHANGE_LOG_MAX = 20_000


class ChangeLog:
    def __init__(self, db: sqlite3.Connection, meta: Meta) -> None:
        self._db, self._meta = db, meta

    def log(self, generation: int, uids: Iterable[str], everything: bool = False) -> None:
        """Record which documents a commit at ``generation`` touched (inside its transaction), so readers
        can apply it as a delta; ``everything`` (a forced or very large commit) makes them load it whole."""
        uids = set(uids)
        if everything or len(uids) > CHANGE_LOG_MAX:
            self._db.execute("DELETE FROM changes")
            self._meta.set({"changes_from": str(generation)})
            return
        start = self._meta.get("changes_from", str(generation - 1))
        floor = max(int(start or 0), generation - CHANGE_LOG_GENERATIONS)
        self._db.executemany(
            "INSERT OR IGNORE INTO changes(generation, uid) VALUES (?, ?)", [(generation, u) for u in uids]
        )
        self._db.execute("DELETE FROM changes WHERE generation <= ?", (floor,))
        self._meta.set({"changes_from": str(floor)})

    def since(self, generation: int, meta: dict[str, str]) -> set[str] | None:
        """uids changed after ``generation`` up to ``meta``'s generation, or None when the log does not cover
        that span (too old, forced, a new store): the caller loads everything."""
        start = meta.get("changes_from")
        if start is None or generation < int(start) or generation > int(meta.get("generation", "0")):
            return None
        return {uid for (uid,) in self._db.execute("SELECT uid FROM changes WHERE generation > ?", (generation,))}
