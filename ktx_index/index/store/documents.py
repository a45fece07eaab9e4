"""The ``docs`` table: every document with its content hash, scope and stale reason.

A document is stored as its identity columns (uid, kind, connection, path, hash, and the id / name /
display the snapshot loads for every document) plus the rest as a compressed body (codec.py). Reads
that return few rows give NamedTuples; the snapshot's bulk reads (``searchable_rows``) stay plain
tuples fetched whole, because wrapping 300k rows in NamedTuples took 2-3x the fetch itself.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from indexers.models import Document
from ktx_index.index.store.codec import document, pack, unpack
from ktx_index.index.store.sql import marks, select_in

#: The columns ``codec.document`` reads, in its argument order.
DOC_COLUMNS = "uid, kind, connection, path, hash, body"
#: One document as the snapshot keeps it (snapshot/snapshot.py ``doc_entry``): uid, kind, connection, name,
#: ref_id, display, and the body of wiki pages only (their scope and connections are in its attrs).
SearchableRow = tuple[str, str, str | None, str, str, str | None, bytes | None]
_SEARCHABLE_SQL = "SELECT uid, kind, connection, name, ref_id, display, CASE WHEN kind = 'wiki' THEN body END FROM docs"


class ScopeDoc(NamedTuple):
    """What the builder compares a scope's newly read documents with."""

    hash: str
    path: str
    stale: str | None


class FieldsRow(NamedTuple):
    uid: str
    connection: str | None
    fields: dict


class KindFields(NamedTuple):
    uid: str
    kind: str
    connection: str | None
    fields: dict


class TableRow(NamedTuple):
    uid: str
    catalog: str | None
    db: str | None
    name: str


class KindCount(NamedTuple):
    kind: str
    connection: str | None
    count: int


class StaleDoc(NamedTuple):
    path: str
    reason: str
    scope: str


class Documents:
    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    # ------------------------------------------------------------------ writes

    def put(self, doc: Document, scope: str, stale: str | None = None, words: Iterable[str] = ()) -> None:
        """``words``: the vocabulary words the document names (texts.vocabulary_words), kept beside it so that
        replacing or deleting it takes them out of the counts (store/words.py) without reading it whole."""
        self._db.execute(
            "INSERT OR REPLACE INTO docs(uid, kind, connection, scope, path, hash, ref_id, name, display, body, stale, "
            "words) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                doc.uid,
                doc.kind,
                doc.connection_id,
                scope,
                doc.path,
                doc.content_hash,
                doc.id,
                doc.name,
                doc.display,
                pack(doc),
                stale,
                " ".join(sorted(words)),
            ),
        )

    def words_of(self, uid: str) -> list[str]:
        """The vocabulary words the stored version of a document names (none when there is no such document)."""
        row = self._db.execute("SELECT words FROM docs WHERE uid = ?", (uid,)).fetchone()
        return row[0].split() if row else []

    def all_words(self) -> Iterator[str]:
        """Every stored document's vocabulary words, once per document naming each."""
        for (words,) in self._db.execute("SELECT words FROM docs WHERE words != ''"):
            yield from words.split()

    def mark_stale(self, uids: Iterable[str], reason: str | None) -> None:
        self._db.executemany("UPDATE docs SET stale = ? WHERE uid = ?", [(reason, uid) for uid in uids])

    def delete(self, uid: str) -> None:
        """The document's row only: ``DocStore.delete_doc`` also drops its chunks."""
        self._db.execute("DELETE FROM docs WHERE uid = ?", (uid,))

    # ------------------------------------------------------------------ whole documents

    def has(self, uid: str) -> bool:
        return self._db.execute("SELECT 1 FROM docs WHERE uid = ?", (uid,)).fetchone() is not None

    def get(self, uid: str) -> Document | None:
        row = self._db.execute(f"SELECT {DOC_COLUMNS} FROM docs WHERE uid = ?", (uid,)).fetchone()
        return document(*row) if row else None

    def get_many(self, uids: list[str]) -> dict[str, Document]:
        sql = f"SELECT {DOC_COLUMNS} FROM docs WHERE uid IN ({{marks}})"
        return {row[0]: document(*row) for row in select_in(self._db, sql, uids)}

    def iter(
        self, kinds: Iterable[str] | None = None, connection: str | None = None, write_order: bool = False
    ) -> Iterator[Document]:
        """Documents by uid, or with write_order in the order they were last written (the order a lexical
        index built alongside holds them: re-deriving it in that order reproduces its tie-breaking)."""
        sql, args = f"SELECT {DOC_COLUMNS} FROM docs WHERE 1=1", []
        if kinds is not None:
            kinds = list(kinds)
            sql += f" AND kind IN ({marks(kinds)})"
            args += kinds
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        for row in self._db.execute(sql + (" ORDER BY rowid" if write_order else " ORDER BY uid"), args):
            yield document(*row)

    def siblings(self, uid: str, kind: str) -> list[Document]:
        """Documents of a kind read from the same files as ``uid`` (a scanned table's columns)."""
        rows = self._db.execute(
            f"SELECT {DOC_COLUMNS} FROM docs WHERE scope = (SELECT scope FROM docs WHERE uid = ?) AND kind = ? "
            "ORDER BY uid",
            (uid, kind),
        )
        return [document(*row) for row in rows]

    # ------------------------------------------------------------------ stored fields, without validating

    def fields(self, kind: str, connection: str | None = None) -> Iterator[FieldsRow]:
        """(uid, connection, stored fields) of every document of a kind, by uid."""
        sql, args = "SELECT uid, connection, body FROM docs WHERE kind = ?", [kind]
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        for uid, conn, body in self._db.execute(sql + " ORDER BY uid", args):
            yield FieldsRow(uid, conn, unpack(body))

    def kind_fields(self, kinds: Sequence[str], uids: Iterable[str] | None = None) -> Iterator[KindFields]:
        """(uid, kind, connection, stored fields) of every document of these kinds, or of those among ``uids``
        (snapshot/facts.py reads tables' and sources' joins this way)."""
        if uids is None:
            sql = f"SELECT uid, kind, connection, body FROM docs WHERE kind IN ({marks(kinds)})"
            for uid, kind, conn, body in self._db.execute(sql, list(kinds)):
                yield KindFields(uid, kind, conn, unpack(body))
            return
        wanted = frozenset(kinds)
        sql = "SELECT uid, kind, connection, body FROM docs WHERE uid IN ({marks})"
        for uid, kind, conn, body in select_in(self._db, sql, sorted(uids)):
            if kind in wanted:
                yield KindFields(uid, kind, conn, unpack(body))

    def snapshot_attrs(self) -> dict[str | None, dict]:
        """Connection → the attributes of its scan snapshot (driver, profile coverage)."""
        return {row.connection: row.fields.get("attrs") or {} for row in self.fields("snapshot")}

    def table_refs(self, connection: str) -> list[TableRow]:
        """(uid, catalog, db, name) of every scanned table of a connection."""
        out = []
        for uid, _conn, fields in self.fields("table", connection):
            ref = fields.get("table_ref") or {}
            out.append(TableRow(uid, ref.get("catalog"), ref.get("db"), ref.get("name") or fields.get("name", "")))
        return out

    # ------------------------------------------------------------------ identity columns

    def searchable_rows(self, kinds: Sequence[str], uids: Iterable[str] | None = None) -> list[SearchableRow]:
        """The rows a snapshot loads (``SearchableRow``): every document of these kinds sorted by uid, or only
        those among ``uids``. Fetched whole, as plain tuples: this is every searchable document of a load."""
        if uids is None:
            return self._db.execute(f"{_SEARCHABLE_SQL} WHERE kind IN ({marks(kinds)}) ORDER BY uid", kinds).fetchall()
        # by uid only: with a kind condition SQLite may walk the kind index, i.e. every document
        wanted = frozenset(kinds)
        return sorted(
            row
            for row in select_in(self._db, f"{_SEARCHABLE_SQL} WHERE uid IN ({{marks}})", sorted(uids))
            if row[1] in wanted
        )

    def in_scope(self, scope: str) -> dict[str, ScopeDoc]:
        """uid → (content hash, path, stale reason) for one scope."""
        rows = self._db.execute("SELECT uid, hash, path, stale FROM docs WHERE scope = ?", (scope,))
        return {uid: ScopeDoc(h, path, stale) for uid, h, path, stale in rows}

    def owners(self, uids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """uid → (the scope that wrote it, its path), for the given uids the store holds."""
        sql = "SELECT uid, scope, path FROM docs WHERE uid IN ({marks})"
        return {uid: (scope, path) for uid, scope, path in select_in(self._db, sql, sorted(set(uids)))}

    def paths(self, kind: str) -> list[tuple[str, str | None, str]]:
        """(uid, connection, path) of every document of a kind, its fields not read: which to read whole (the
        hand-written semantic-layer sources among 100k manifest entries, ``index/checks.py``)."""
        return self._db.execute("SELECT uid, connection, path FROM docs WHERE kind = ?", (kind,)).fetchall()

    def ids(self, kind: str, connection: str | None = None) -> list[str]:
        sql, args = "SELECT ref_id FROM docs WHERE kind = ?", [kind]
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        return [ref_id for (ref_id,) in self._db.execute(sql, args)]

    def hashes(self) -> dict[str, str]:
        """uid → content hash of every document."""
        return dict(self._db.execute("SELECT uid, hash FROM docs"))

    def count(self, kinds: Sequence[str]) -> int:
        """How many documents of these kinds (the lexical index must hold as many of the searchable ones)."""
        sql = f"SELECT COUNT(*) FROM docs WHERE kind IN ({marks(kinds)})"
        return self._db.execute(sql, list(kinds)).fetchone()[0]

    def counts(self) -> list[KindCount]:
        sql = "SELECT kind, connection, COUNT(*) FROM docs GROUP BY kind, connection"
        return [KindCount(*row) for row in self._db.execute(sql)]

    def stale_by_uid(self, uid: str | None = None) -> dict[str, str]:
        """uid → "path: reason" of every document (or of ``uid`` alone) kept from an earlier read of a file that
        no longer parses."""
        sql, args = "SELECT uid, path, stale FROM docs WHERE stale IS NOT NULL", []
        if uid is not None:
            sql, args = sql + " AND uid = ?", [uid]
        return {found: f"{path}: {reason}" for found, path, reason in self._db.execute(sql, args)}

    def stale(self) -> list[StaleDoc]:
        """(path, reason, scope) of the files whose documents are kept from an earlier read."""
        sql = "SELECT DISTINCT path, stale, scope FROM docs WHERE stale IS NOT NULL"
        return [StaleDoc(*row) for row in self._db.execute(sql)]
