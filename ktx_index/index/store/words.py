"""The ``words`` table: vocabulary words (search/bridge.py), the vector key each is embedded under, and how many
documents name it.

A word no document names any longer (``docs`` 0) keeps its row and vector, in case it comes back, but is no longer
part of the vocabulary: a word left behind by an edit bridged questions to it, so an index answered differently from
a fresh build of the same files (an outside pass).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping

from ktx_index.index.store.sql import select_in

#: (word, vector row) of one embedded word. Plain tuples: the bridge reads the whole vocabulary.
WordRow = tuple[str, int]


class Words:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def count(self, change: Mapping[str, int], key_of: Callable[[str], str]) -> bool:
        """Add ``change`` (word → documents naming it added, minus those removed) to the counts, a new word under
        the vector key ``key_of`` gives it. Whether the vocabulary changed: a word came in or went out."""
        change = {word: n for word, n in change.items() if n}
        if not change:
            return False
        before = dict(select_in(self._db, "SELECT word, docs FROM words WHERE word IN ({marks})", list(change)))
        self._db.executemany(
            "INSERT INTO words(word, key, docs) VALUES (?, ?, ?) ON CONFLICT(word) DO UPDATE SET docs = docs + excluded.docs",
            [(word, key_of(word), n) for word, n in change.items()],
        )
        return any((before.get(word, 0) > 0) != (before.get(word, 0) + n > 0) for word, n in change.items())

    def forget_counts(self) -> None:
        """Every word named by no document, before a forced rebuild counts them all again."""
        self._db.execute("UPDATE words SET docs = 0")

    def rekey(self, key_of: Callable[[str], str]) -> None:
        """Give every word the vector key of a new embedding fingerprint."""
        words = [word for (word,) in self._db.execute("SELECT word FROM words")]
        self._db.executemany("UPDATE words SET key = ? WHERE word = ?", [(key_of(w), w) for w in words])

    def texts(self, keys: list[str]) -> dict[str, str]:
        """Vector key → word, for the words among these keys."""
        return dict(select_in(self._db, "SELECT key, word FROM words WHERE key IN ({marks})", keys))

    def rows(self) -> list[WordRow]:
        """(word, vector row) of every embedded word some document names, by word."""
        sql = "SELECT w.word, v.row FROM words w JOIN vectors v ON v.key = w.key WHERE w.docs > 0 ORDER BY w.word"
        return self._db.execute(sql).fetchall()

    def missing_keys(self) -> list[str]:
        """Keys of the words some document names that have no vector yet."""
        sql = "SELECT w.key FROM words w LEFT JOIN vectors v ON v.key = w.key WHERE v.row IS NULL AND w.docs > 0"
        return [key for (key,) in self._db.execute(sql)]
