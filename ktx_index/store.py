"""The document store: SQLite (WAL) holding the manifest the rebuild diffs against.

It is the source of truth of the index: every document as JSON with its content hash
and scope, the fingerprint of each scope's files, the embedding chunks of each
document, and the vector-cache row of each embedded text. The tantivy index and the
in-memory vector matrix are derived from it and can be rebuilt from it alone.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from indexers.models import Diagnostic, Document

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scopes (
    key TEXT PRIMARY KEY, family TEXT NOT NULL, fingerprint TEXT NOT NULL,
    files TEXT NOT NULL, diagnostics TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS docs (
    uid TEXT PRIMARY KEY, kind TEXT NOT NULL, connection TEXT, scope TEXT NOT NULL,
    path TEXT NOT NULL, hash TEXT NOT NULL, json TEXT NOT NULL, stale TEXT
);
CREATE INDEX IF NOT EXISTS docs_scope ON docs(scope);
CREATE INDEX IF NOT EXISTS docs_kind ON docs(kind, connection);
CREATE INDEX IF NOT EXISTS docs_path ON docs(path);
CREATE TABLE IF NOT EXISTS chunks (uid TEXT NOT NULL, idx INTEGER NOT NULL, key TEXT NOT NULL, PRIMARY KEY (uid, idx));
CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, row INTEGER NOT NULL);
"""


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
        if self.db.in_transaction:
            self.db.execute("ROLLBACK")

    # ------------------------------------------------------------------ scopes

    def scope_fingerprints(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT key, fingerprint FROM scopes"))

    def put_scope(self, key: str, family: str, fingerprint: str, files: list[str], diags: list[Diagnostic]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO scopes(key, family, fingerprint, files, diagnostics) VALUES (?, ?, ?, ?, ?)",
            (key, family, fingerprint, json.dumps(files), json.dumps([d.model_dump() for d in diags])),
        )

    def delete_scope(self, key: str) -> None:
        self.db.execute("DELETE FROM scopes WHERE key = ?", (key,))

    def scope_diagnostics(self) -> list[Diagnostic]:
        out = []
        for (raw,) in self.db.execute("SELECT diagnostics FROM scopes WHERE diagnostics != '[]'"):
            out.extend(Diagnostic(**d) for d in json.loads(raw))
        return out

    def scope_files(self) -> dict[str, list[str]]:
        return {key: json.loads(files) for key, files in self.db.execute("SELECT key, files FROM scopes")}

    # ------------------------------------------------------------------ documents

    def scope_docs(self, scope: str) -> dict[str, tuple[str, str, str | None]]:
        """uid → (content hash, path, stale reason) for one scope."""
        rows = self.db.execute("SELECT uid, hash, path, stale FROM docs WHERE scope = ?", (scope,))
        return {uid: (h, path, stale) for uid, h, path, stale in rows}

    def put_doc(self, doc: Document, scope: str, stale: str | None = None) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO docs(uid, kind, connection, scope, path, hash, json, stale) VALUES (?,?,?,?,?,?,?,?)",
            (
                doc.uid,
                doc.kind,
                doc.connection_id,
                scope,
                doc.path,
                doc.content_hash,
                doc.model_dump_json(exclude_defaults=True),
                stale,
            ),
        )

    def mark_stale(self, uids: Iterable[str], reason: str | None) -> None:
        self.db.executemany("UPDATE docs SET stale = ? WHERE uid = ?", [(reason, uid) for uid in uids])

    def delete_doc(self, uid: str) -> None:
        self.db.execute("DELETE FROM docs WHERE uid = ?", (uid,))
        self.db.execute("DELETE FROM chunks WHERE uid = ?", (uid,))

    def get(self, uid: str) -> Document | None:
        row = self.db.execute("SELECT json FROM docs WHERE uid = ?", (uid,)).fetchone()
        return Document.model_validate_json(row[0]) if row else None

    def get_many(self, uids: list[str]) -> dict[str, Document]:
        out: dict[str, Document] = {}
        for start in range(0, len(uids), 500):
            batch = uids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for uid, raw in self.db.execute(f"SELECT uid, json FROM docs WHERE uid IN ({marks})", batch):
                out[uid] = Document.model_validate_json(raw)
        return out

    def iter_docs(self, kinds: Iterable[str] | None = None, connection: str | None = None) -> Iterator[Document]:
        sql, args = "SELECT json FROM docs WHERE 1=1", []
        if kinds is not None:
            kinds = list(kinds)
            sql += f" AND kind IN ({','.join('?' * len(kinds))})"
            args += kinds
        if connection is not None:
            sql += " AND connection = ?"
            args.append(connection)
        for (raw,) in self.db.execute(sql + " ORDER BY uid", args):
            yield Document.model_validate_json(raw)

    def docs_at(self, path: str, kind: str) -> list[Document]:
        rows = self.db.execute("SELECT json FROM docs WHERE path = ? AND kind = ? ORDER BY uid", (path, kind))
        return [Document.model_validate_json(raw) for (raw,) in rows]

    def table_refs(self, connection: str) -> list[tuple[str, str | None, str | None, str]]:
        """(uid, catalog, db, name) of every scanned table of a connection, without loading documents."""
        return list(
            self.db.execute(
                "SELECT uid, json_extract(json, '$.table_ref.catalog'), json_extract(json, '$.table_ref.db'), "
                "json_extract(json, '$.table_ref.name') FROM docs WHERE kind = 'table' AND connection = ? ORDER BY uid",
                (connection,),
            )
        )

    def ids(self, kind: str, connection: str | None = None) -> list[str]:
        sql, args = "SELECT json_extract(json, '$.id') FROM docs WHERE kind = ?", [kind]
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

    def missing_vector_keys(self) -> list[str]:
        rows = self.db.execute(
            "SELECT DISTINCT c.key FROM chunks c LEFT JOIN vectors v ON v.key = c.key WHERE v.row IS NULL"
        )
        return [key for (key,) in rows]

    def uids_for_keys(self, keys: list[str]) -> list[str]:
        """Documents that have a chunk with one of these vector keys."""
        out: set[str] = set()
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            out.update(
                uid for (uid,) in self.db.execute(f"SELECT DISTINCT uid FROM chunks WHERE key IN ({marks})", batch)
            )
        return sorted(out)

    def put_vectors(self, rows: dict[str, int]) -> None:
        self.db.executemany("INSERT OR REPLACE INTO vectors(key, row) VALUES (?, ?)", list(rows.items()))

    def max_vector_row(self) -> int:
        return self.db.execute("SELECT COALESCE(MAX(row), -1) FROM vectors").fetchone()[0]

    def chunk_stats(self) -> tuple[int, int]:
        """(chunks, chunks with a vector)."""
        return self.db.execute(
            "SELECT COUNT(*), COUNT(v.row) FROM chunks c LEFT JOIN vectors v ON v.key = c.key"
        ).fetchone()
