"""The document store: SQLite (WAL) holding the manifest the rebuild diffs against.

It is the source of truth of the index: every document with its content hash and scope,
the fingerprint of each scope's files, the embedding chunks of each document, and the
vector-cache row of each embedded text. The tantivy index and the in-memory vector matrix
are derived from it and can be rebuilt from it alone.

``DocStore`` owns the connection and the transaction; each table family is a small class on it
(``store.docs``, ``store.chunks``, ``store.vectors``, ``store.words``, ``store.changes``,
``store.scopes``, ``store.meta``), so a caller's line says which tables it touches. What spans
families (a document's removal, the texts still to embed) is here.
"""

from __future__ import annotations

from pathlib import Path

from ktx_index.index.store.changes import ChangeLog
from ktx_index.index.store.chunks import Chunks
from ktx_index.index.store.documents import Documents
from ktx_index.index.store.meta import Meta
from ktx_index.index.store.scopes import Scopes
from ktx_index.index.store.sql import connect, quick_check
from ktx_index.index.store.vector_rows import VectorRows
from ktx_index.index.store.words import Words


class DocStore:
    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        self._db = connect(path, readonly)
        self.meta = Meta(self._db)
        self.scopes = Scopes(self._db, writable=not readonly)
        self.docs = Documents(self._db)
        self.chunks = Chunks(self._db)
        self.vectors = VectorRows(self._db, self.meta)
        self.words = Words(self._db)
        self.changes = ChangeLog(self._db, self.meta)

    def close(self) -> None:
        self._db.close()

    def check(self) -> str:
        """SQLite's verdict on the file: 'ok', or what is damaged (index/integrity.py rebuilds it then)."""
        return quick_check(self._db)

    # ------------------------------------------------------------------ transactions

    def begin(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self._db.execute("COMMIT")

    def rollback(self) -> None:
        self.scopes.forget()
        if self._db.in_transaction:
            self._db.execute("ROLLBACK")

    # ------------------------------------------------------------------ across families

    def delete_doc(self, uid: str) -> None:
        """A document and its chunks (their vectors stay cached: another document may share the texts)."""
        self.docs.delete(uid)
        self.chunks.delete(uid)

    def missing_vector_keys(self, among: list[str] | None = None) -> list[str]:
        """Keys of chunk texts (of every document, or only of the ``among`` uids), then of vocabulary words,
        that have no vector yet."""
        return list(dict.fromkeys(self.chunks.missing_keys(among) + self.words.missing_keys()))
