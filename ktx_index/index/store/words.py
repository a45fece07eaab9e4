"""The ``words`` table: vocabulary words (search/bridge.py) and the vector key each is embedded under.

Words are never removed: a word whose documents are gone bridges to a term the lexical index no longer
holds, which the bridge checks.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ktx_index.index.store.sql import select_in

#: (word, vector row) of one embedded word. Plain tuples: the bridge reads the whole vocabulary.
WordRow = tuple[str, int]


class Words:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def put(self, keys: dict[str, str]) -> None:
        """Vocabulary words (word → vector key); a word already known keeps its row."""
        self._db.executemany("INSERT OR IGNORE INTO words(word, key) VALUES (?, ?)", list(keys.items()))

    def rekey(self, key_of: Callable[[str], str]) -> None:
        """Give every word the vector key of a new embedding fingerprint."""
        words = [word for (word,) in self._db.execute("SELECT word FROM words")]
        self._db.executemany("UPDATE words SET key = ? WHERE word = ?", [(key_of(w), w) for w in words])

    def texts(self, keys: list[str]) -> dict[str, str]:
        """Vector key → word, for the words among these keys."""
        return dict(select_in(self._db, "SELECT key, word FROM words WHERE key IN ({marks})", keys))

    def rows(self) -> list[WordRow]:
        """(word, vector row) of every embedded vocabulary word, by word."""
        sql = "SELECT w.word, v.row FROM words w JOIN vectors v ON v.key = w.key ORDER BY w.word"
        return self._db.execute(sql).fetchall()

    def missing_keys(self) -> list[str]:
        """Keys of words that have no vector yet."""
        sql = "SELECT w.key FROM words w LEFT JOIN vectors v ON v.key = w.key WHERE v.row IS NULL"
        return [key for (key,) in self._db.execute(sql)]
