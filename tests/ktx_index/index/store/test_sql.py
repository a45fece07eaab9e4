"""The shared connection (store/sql.py): batched IN lookups and SQLite's own check of the file."""

from __future__ import annotations

import sqlite3

import pytest

from ktx_index.index.store.sql import IN_BATCH, connect, quick_check, select_in


def _words(tmp_path, count: int) -> sqlite3.Connection:
    db = connect(tmp_path / "store.sqlite", readonly=False)
    db.executemany("INSERT INTO words(word, key) VALUES (?, ?)", [(f"word{i}", f"key{i}") for i in range(count)])
    return db


def test_lookups_by_many_keys_cross_the_batch_boundary(tmp_path):
    db = _words(tmp_path, IN_BATCH * 2 + 7)
    wanted = [f"key{i}" for i in range(IN_BATCH * 2 + 7)]
    rows = list(select_in(db, "SELECT word FROM words WHERE key IN ({marks})", wanted))
    assert sorted(word for (word,) in rows) == sorted(f"word{i}" for i in range(IN_BATCH * 2 + 7))
    assert list(select_in(db, "SELECT word FROM words WHERE key IN ({marks})", [])) == []
    db.close()


def test_a_lookup_stopped_midway_closes_cleanly_after_the_store(tmp_path):
    """A SIGTERM can stop a caller mid-iteration and close the store before the generator is finalised: closing it
    then must not touch the closed database (CI saw 'Cannot operate on a closed database' at exit)."""
    db = _words(tmp_path, 10)
    rows = select_in(db, "SELECT word FROM words WHERE key IN ({marks})", [f"key{i}" for i in range(10)])
    next(rows)
    db.close()
    rows.close()  # raised sqlite3.ProgrammingError while the batch's cursor was still open


def test_a_reader_cannot_write_and_the_check_passes_an_intact_file(tmp_path):
    _words(tmp_path, 3).close()
    reader = connect(tmp_path / "store.sqlite", readonly=True)
    assert quick_check(reader) == "ok"
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.execute("DELETE FROM words")
    reader.close()
