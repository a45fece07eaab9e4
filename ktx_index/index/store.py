"""The document store: SQLite (WAL) holding the manifest the rebuild diffs against.

It is the source of truth of the index: every document with its content hash and scope,
the fingerprint of each scope's files, the embedding chunks of each document, and the
vector-cache row of each embedded text. The tantivy index and the in-memory vector matrix
are derived from it and can be rebuilt from it alone.

A document is stored as its identity columns (uid, kind, connection, path, hash, and the
id / name / display the snapshot loads for every document) plus the rest as JSON
compressed with a preset dictionary of the field names: small documents compress ~4x
that way, which keeps a 100k-column index within its disk budget.
"""

from __future__ import annotations

import json
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from indexers.models import Diagnostic, Document

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scopes (
    key TEXT PRIMARY KEY, family TEXT NOT NULL, fingerprint TEXT NOT NULL,
    files TEXT NOT NULL, diagnostics TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS docs (
    uid TEXT PRIMARY KEY, kind TEXT NOT NULL, connection TEXT, scope TEXT NOT NULL, path TEXT NOT NULL,
    hash TEXT NOT NULL, ref_id TEXT NOT NULL, name TEXT NOT NULL, display TEXT, body BLOB NOT NULL, stale TEXT
);
CREATE INDEX IF NOT EXISTS docs_scope ON docs(scope);
CREATE INDEX IF NOT EXISTS docs_kind ON docs(kind, connection);
CREATE INDEX IF NOT EXISTS docs_stale ON docs(stale) WHERE stale IS NOT NULL;
CREATE TABLE IF NOT EXISTS chunks (
    uid TEXT NOT NULL, idx INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (uid, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_key ON chunks(key);
CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, row INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_row ON vectors(row);
CREATE TABLE IF NOT EXISTS changes (generation INTEGER NOT NULL, uid TEXT NOT NULL, PRIMARY KEY (generation, uid))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, key TEXT NOT NULL) WITHOUT ROWID;
"""
#: Values bound per ``IN (…)`` statement (``DocStore.select_in``).
IN_BATCH = 500
#: Generations of changed uids kept for readers (search/delta.py); a reader further behind loads everything.
CHANGE_LOG_GENERATIONS = 64
#: A commit changing more documents than this is not logged: readers load everything after it anyway.
CHANGE_LOG_MAX = 20_000
#: Held in columns, so left out of the compressed body.
COLUMN_FIELDS = {"uid", "kind", "connection_id", "path", "content_hash"}
#: The compression dictionary: field names seen in documents. Frozen; changing it needs a FORMAT_VERSION bump.
_DICTIONARY_KEYS = (
    "attrs body cardinality catalog column_name columns comment constraintName db description dimensionType "
    "display distinctCount driver estimatedRows expr exprOnly extractedAt files foreignKeys frequencyTier "
    "fromColumn id joins key measures mentions name nativeType normalizedType nullCount nullRate nullable origin "
    "primaryKey profileSyncId profiledRows refs rowCount sample_values scanRunId scope sections heading text "
    "slRefs snapshot source sourceName sql summary syncId table table_ref tags toCatalog toColumn toDb toTable "
    "type usage_mode yaml"
).split()
ZDICT = ('{"' + '":"","'.join(_DICTIONARY_KEYS) + '":""}').encode()


def pack(doc: Document) -> bytes:
    raw = doc.model_dump_json(exclude_defaults=True, exclude=COLUMN_FIELDS).encode()
    compressor = zlib.compressobj(6, zdict=ZDICT)
    return compressor.compress(raw) + compressor.flush()


def unpack(body: bytes) -> dict:
    decompressor = zlib.decompressobj(zdict=ZDICT)
    return json.loads(decompressor.decompress(body) + decompressor.flush())


def _document(uid: str, kind: str, connection: str | None, path: str, content_hash: str, body: bytes) -> Document:
    fields = unpack(body)
    fields.update(uid=uid, kind=kind, connection_id=connection, path=path, content_hash=content_hash)
    return Document.model_validate(fields)


_DOC_COLUMNS = "uid, kind, connection, path, hash, body"


class DocStore:
    def __init__(self, path: Path, readonly: bool = False) -> None:
        self.path = path
        if readonly:
            self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
        else:
            self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
        self.db.execute("PRAGMA busy_timeout=5000")
        self._diagnostics: dict[str, list[Diagnostic]] = {}  # stored diagnostics text → parsed (scope_diagnostics)
        # the writer's copy of the scope rows (key → fingerprint, diagnostics text), kept by put_scope and
        # delete_scope, dropped on rollback; a read-only store reads the table, which other processes write
        self._writable = not readonly
        self._scopes: dict[str, tuple[str, str]] | None = None

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ meta

    def meta(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, value FROM meta"))

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, values: dict[str, str]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", list(values.items()))

    def generation(self) -> int:
        return int(self.get_meta("generation", "0") or 0)

    # ------------------------------------------------------------------ transactions

    def begin(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        self.db.execute("COMMIT")

    def rollback(self) -> None:
        self._scopes = None
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    # ------------------------------------------------------------------ scopes

    def _scope_rows(self) -> dict[str, tuple[str, str]]:
        """Every scope's (fingerprint, diagnostics text). A watcher's commit plans against all of them and
        reports all diagnostics: at 1M columns reading the 40k rows was ~0.4 s of a one-table edit, so the
        writer keeps them."""
        if self._scopes is not None:
            return self._scopes
        rows = {
            key: (fp, diags) for key, fp, diags in self.db.execute("SELECT key, fingerprint, diagnostics FROM scopes")
        }
        if self._writable:
            self._scopes = rows
        return rows

    def scope_fingerprints(self) -> dict[str, str]:
        return {key: fp for key, (fp, _) in self._scope_rows().items()}

    def put_scope(self, key: str, family: str, fingerprint: str, files: list[str], diags: list[Diagnostic]) -> None:
        raw = json.dumps([d.model_dump() for d in diags])
        self.db.execute(
            "INSERT OR REPLACE INTO scopes(key, family, fingerprint, files, diagnostics) VALUES (?, ?, ?, ?, ?)",
            (key, family, fingerprint, json.dumps(files), raw),
        )
        if self._scopes is not None:
            self._scopes[key] = (fingerprint, raw)

    def delete_scope(self, key: str) -> None:
        self.db.execute("DELETE FROM scopes WHERE key = ?", (key,))
        if self._scopes is not None:
            self._scopes.pop(key, None)

    def scope_diagnostics(self) -> list[Diagnostic]:
        """Every scope's diagnostics, each stored text parsed once while it stays stored: a report after every
        commit reads them all (at 1M columns, 32k per-table diagnostics cost 0.8 s of each targeted commit)."""
        out: list[Diagnostic] = []
        seen: dict[str, list[Diagnostic]] = {}
        for _, raw in self._scope_rows().values():
            if raw == "[]":
                continue
            parsed = seen.get(raw) or self._diagnostics.get(raw)
            if parsed is None:
                parsed = [Diagnostic(**d) for d in json.loads(raw)]
            seen[raw] = parsed
            out.extend(parsed)
        self._diagnostics = seen  # texts no longer stored are forgotten
        return out

    def scope_files(self) -> dict[str, list[str]]:
        return {key: json.loads(files) for key, files in self.db.execute("SELECT key, files FROM scopes")}

    # ------------------------------------------------------------------ documents

    def scope_docs(self, scope: str) -> dict[str, tuple[str, str, str | None]]:
        """uid → (content hash, path, stale reason) for one scope."""
        rows = self.db.execute("SELECT uid, hash, path, stale FROM docs WHERE scope = ?", (scope,))
        return {uid: (h, path, stale) for uid, h, path, stale in rows}

    def has_doc(self, uid: str) -> bool:
        return self.db.execute("SELECT 1 FROM docs WHERE uid = ?", (uid,)).fetchone() is not None

    def put_doc(self, doc: Document, scope: str, stale: str | None = None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO docs(uid, kind, connection, scope, path, hash, ref_id, name, display, body, stale) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)",
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
            ),
        )

    def mark_stale(self, uids: Iterable[str], reason: str | None) -> None:
        self.db.executemany("UPDATE docs SET stale = ? WHERE uid = ?", [(reason, uid) for uid in uids])

    def delete_doc(self, uid: str) -> None:
        self.db.execute("DELETE FROM docs WHERE uid = ?", (uid,))
        self.db.execute("DELETE FROM chunks WHERE uid = ?", (uid,))

    def get(self, uid: str) -> Document | None:
        row = self.db.execute(f"SELECT {_DOC_COLUMNS} FROM docs WHERE uid = ?", (uid,)).fetchone()
        return _document(*row) if row else None

    def get_many(self, uids: list[str]) -> dict[str, Document]:
        sql = f"SELECT {_DOC_COLUMNS} FROM docs WHERE uid IN ({{marks}})"
        return {row[0]: _document(*row) for row in self.select_in(sql, uids)}

    def select_in(self, sql: str, values: list[str]) -> Iterator[tuple]:
        """The rows of ``sql``, whose ``IN ({marks})`` takes the values, for any number of them: SQLite caps the
        parameters of one statement (999 in older builds), so they go IN_BATCH at a time. Each batch is fetched
        whole: a caller stopped mid-iteration (a SIGTERM) leaves no open cursor for the finaliser to close after
        the database has."""
        for start in range(0, len(values), IN_BATCH):
            batch = values[start : start + IN_BATCH]
            yield from self.db.execute(sql.format(marks=",".join("?" * len(batch))), batch).fetchall()

    def iter_docs(
        self, kinds: Iterable[str] | None = None, connection: str | None = None, write_order: bool = False
    ) -> Iterator[Document]:
        """Documents by uid, or with write_order in the order they were last written (the order a lexical
        index built alongside holds them: re-deriving it in that order reproduces its tie-breaking)."""
        sql, args = f"SELECT {_DOC_COLUMNS} FROM docs WHERE 1=1", []
        if kinds is not None:
            kinds = list(kinds)
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += kinds
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        for row in self.db.execute(sql + (" ORDER BY rowid" if write_order else " ORDER BY uid"), args):
            yield _document(*row)

    def fields(self, kind: str, connection: str | None = None) -> Iterator[tuple[str, str | None, dict]]:
        """(uid, connection, stored fields) of every document of a kind, without validating documents."""
        sql, args = "SELECT uid, connection, body FROM docs WHERE kind = ?", [kind]
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        for uid, conn, body in self.db.execute(sql + " ORDER BY uid", args):
            yield uid, conn, unpack(body)

    def snapshot_attrs(self) -> dict[str | None, dict]:
        """Connection → the attributes of its scan snapshot (driver, profile coverage)."""
        return {conn: fields.get("attrs") or {} for _uid, conn, fields in self.fields("snapshot")}

    def scope_siblings(self, uid: str, kind: str) -> list[Document]:
        """Documents of a kind read from the same files as ``uid`` (a scanned table's columns)."""
        rows = self.db.execute(
            f"SELECT {_DOC_COLUMNS} FROM docs WHERE scope = (SELECT scope FROM docs WHERE uid = ?) AND kind = ? "
            "ORDER BY uid",
            (uid, kind),
        )
        return [_document(*row) for row in rows]

    def table_refs(self, connection: str) -> list[tuple[str, str | None, str | None, str]]:
        """(uid, catalog, db, name) of every scanned table of a connection."""
        out = []
        for uid, _conn, fields in self.fields("table", connection):
            ref = fields.get("table_ref") or {}
            out.append((uid, ref.get("catalog"), ref.get("db"), ref.get("name") or fields.get("name", "")))
        return out

    def ids(self, kind: str, connection: str | None = None) -> list[str]:
        sql, args = "SELECT ref_id FROM docs WHERE kind = ?", [kind]
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        return [ref_id for (ref_id,) in self.db.execute(sql, args)]

    def counts(self) -> list[tuple[str, str | None, int]]:
        return list(self.db.execute("SELECT kind, connection, COUNT(*) FROM docs GROUP BY kind, connection"))

    def stale_docs(self) -> list[tuple[str, str, str]]:
        return list(self.db.execute("SELECT DISTINCT path, stale, scope FROM docs WHERE stale IS NOT NULL"))

    def uid_hashes(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT uid, hash FROM docs"))

    # ------------------------------------------------------------------ change log (reader deltas)

    def log_changes(self, generation: int, uids: Iterable[str], everything: bool = False) -> None:
        """Record which documents a commit at ``generation`` touched (inside its transaction), so readers
        can apply it as a delta; ``everything`` (a forced or very large commit) makes them load it whole."""
        uids = set(uids)
        if everything or len(uids) > CHANGE_LOG_MAX:
            self.db.execute("DELETE FROM changes")
            self.set_meta({"changes_from": str(generation)})
            return
        floor = max(int(self.get_meta("changes_from", str(generation - 1)) or 0), generation - CHANGE_LOG_GENERATIONS)
        self.db.executemany(
            "INSERT OR IGNORE INTO changes(generation, uid) VALUES (?, ?)", [(generation, u) for u in uids]
        )
        self.db.execute("DELETE FROM changes WHERE generation <= ?", (floor,))
        self.set_meta({"changes_from": str(floor)})

    def changes_since(self, generation: int, meta: dict[str, str]) -> set[str] | None:
        """uids changed after ``generation`` up to ``meta``'s generation, or None when the log does not cover
        that span (too old, forced, a new store): the caller loads everything."""
        start = meta.get("changes_from")
        if start is None or generation < int(start) or generation > int(meta.get("generation", "0")):
            return None
        return {uid for (uid,) in self.db.execute("SELECT uid FROM changes WHERE generation > ?", (generation,))}

    # ------------------------------------------------------------------ chunks and vectors

    def put_chunks(self, uid: str, keys: list[str]) -> None:
        self.db.execute("DELETE FROM chunks WHERE uid = ?", (uid,))
        self.db.executemany(
            "INSERT INTO chunks(uid, idx, key) VALUES (?, ?, ?)", [(uid, i, k) for i, k in enumerate(keys)]
        )

    def chunk_rows(self) -> list[tuple[str, int | None]]:
        """(uid, vector row or None when not embedded yet) for every chunk, grouped by uid."""
        return list(
            self.db.execute(
                "SELECT c.uid, v.row FROM chunks c LEFT JOIN vectors v ON v.key = c.key ORDER BY c.uid, c.idx"
            )
        )

    def chunk_rows_of(self, uids: list[str]) -> list[tuple[str, int | None]]:
        """``chunk_rows`` for these documents only."""
        sql = (
            "SELECT c.uid, v.row FROM chunks c LEFT JOIN vectors v ON v.key = c.key "
            "WHERE c.uid IN ({marks}) ORDER BY c.uid, c.idx"
        )
        return sorted(self.select_in(sql, uids), key=lambda r: r[0])  # stable: a document's chunks stay in order

    def uids_with_vectors_after(self, row: int) -> list[str]:
        """Documents with a chunk whose vector row is above ``row`` (embedded since a reader read them)."""
        # CROSS JOIN keeps vectors (by its row index) as the outer loop: the few new rows, not every chunk
        sql = "SELECT DISTINCT c.uid FROM vectors v CROSS JOIN chunks c ON c.key = v.key WHERE v.row > ?"
        return [uid for (uid,) in self.db.execute(sql, (row,))]

    def forget_vectors_from(self, row: int) -> None:
        """Drop vector rows from ``row`` on; readers holding them must load their vectors whole."""
        self.db.execute("DELETE FROM vectors WHERE row >= ?", (row,))
        self.bump_vector_epoch()

    def bump_vector_epoch(self) -> None:
        self.set_meta({"vector_epoch": str(time.time_ns())})

    def missing_vector_keys(self, among: list[str] | None = None) -> list[str]:
        """Keys of chunk texts (of every document, or only of the ``among`` uids), then of vocabulary words,
        that have no vector yet."""
        sql = "SELECT DISTINCT c.key FROM chunks c LEFT JOIN vectors v ON v.key = c.key WHERE v.row IS NULL"
        rows = self.db.execute(sql) if among is None else self.select_in(sql + " AND c.uid IN ({marks})", among)
        words = self.db.execute("SELECT w.key FROM words w LEFT JOIN vectors v ON v.key = w.key WHERE v.row IS NULL")
        return list(dict.fromkeys([key for (key,) in rows] + [key for (key,) in words]))

    # ------------------------------------------------------------------ vocabulary words (search/bridge.py)

    def put_words(self, keys: dict[str, str]) -> None:
        """Vocabulary words (word → vector key); a word already known keeps its row. Words are never removed:
        a word whose documents are gone bridges to a term the lexical index no longer holds, which is checked."""
        self.db.executemany("INSERT OR IGNORE INTO words(word, key) VALUES (?, ?)", list(keys.items()))

    def rekey_words(self, key_of: Callable[[str], str]) -> None:
        """Give every word the vector key of a new embedding fingerprint."""
        words = [word for (word,) in self.db.execute("SELECT word FROM words")]
        self.db.executemany("UPDATE words SET key = ? WHERE word = ?", [(key_of(w), w) for w in words])

    def word_texts(self, keys: list[str]) -> dict[str, str]:
        """Vector key → word, for the words among these keys."""
        return dict(self.select_in("SELECT key, word FROM words WHERE key IN ({marks})", keys))

    def word_rows(self) -> list[tuple[str, int]]:
        """(word, vector row) of every embedded vocabulary word, by word."""
        sql = "SELECT w.word, v.row FROM words w JOIN vectors v ON v.key = w.key ORDER BY w.word"
        return list(self.db.execute(sql))

    def uids_for_keys(self, keys: list[str]) -> list[str]:
        """Documents that have a chunk with one of these vector keys."""
        return sorted(
            {uid for (uid,) in self.select_in("SELECT DISTINCT uid FROM chunks WHERE key IN ({marks})", keys)}
        )

    def put_vectors(self, rows: dict[str, int]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO vectors(key, row) VALUES (?, ?)", list(rows.items()))

    def max_vector_row(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(row), -1) FROM vectors").fetchone()[0]

    def chunk_stats(self) -> tuple[int, int]:
        """(chunks, chunks with a vector)."""
        return self.db.execute(
            "SELECT COUNT(*), COUNT(v.row) FROM chunks c LEFT JOIN vectors v ON v.key = c.key"
        ).fetchone()
