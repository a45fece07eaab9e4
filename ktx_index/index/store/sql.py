"""The SQLite connection every table family shares: schema, pragmas, and batched ``IN (…)`` lookups.

The store's folder is the only code that runs SQL (tests/test_imports.py checks it): the rest of the
index asks a table family (documents.py, chunks.py, vector_rows.py, words.py, changes.py, scopes.py,
meta.py) for typed rows, so a schema change is made and reviewed in one place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scopes (
    key TEXT PRIMARY KEY, family TEXT NOT NULL, fingerprint TEXT NOT NULL,
    files TEXT NOT NULL, diagnostics TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS docs (
    uid TEXT PRIMARY KEY, kind TEXT NOT NULL, connection TEXT, scope TEXT NOT NULL, path TEXT NOT NULL,
    hash TEXT NOT NULL, ref_id TEXT NOT NULL, name TEXT NOT NULL, display TEXT, body BLOB NOT NULL, stale TEXT,
    words TEXT NOT NULL DEFAULT ''
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
CREATE TABLE IF NOT EXISTS words (word TEXT PRIMARY KEY, key TEXT NOT NULL, docs INTEGER NOT NULL DEFAULT 0)
    WITHOUT ROWID;
"""
#: Values bound per ``IN (…)`` statement (``select_in``).
IN_BATCH = 500


def connect(path: Path, readonly: bool) -> sqlite3.Connection:
    """A reader's connection is read-only (other processes write the file); the writer's runs in autocommit
    mode with explicit BEGIN IMMEDIATE (``DocStore.begin``), in WAL so readers never block it."""
    if readonly:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    else:
        db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(SCHEMA)
    db.execute("PRAGMA busy_timeout=5000")
    return db


def marks(values: Sequence[object]) -> str:
    """The ``?`` placeholders of an ``IN (…)`` over these values."""
    return ",".join("?" * len(values))


def select_in(db: sqlite3.Connection, sql: str, values: Sequence[str]) -> Iterator[tuple]:
    """The rows of ``sql``, whose ``IN ({marks})`` takes the values, for any number of them: SQLite caps the
    parameters of one statement (999 in older builds), so they go IN_BATCH at a time. Each batch is fetched
    whole: a caller stopped mid-iteration (a SIGTERM) leaves no open cursor for the finaliser to close after
    the database has."""
    for start in range(0, len(values), IN_BATCH):
        batch = list(values[start : start + IN_BATCH])
        yield from db.execute(sql.format(marks=marks(batch)), batch).fetchall()


def quick_check(db: sqlite3.Connection) -> str:
    """SQLite's own verdict on the file ('ok', or what is damaged): opening a damaged file often succeeds."""
    return db.execute("PRAGMA quick_check").fetchone()[0]
