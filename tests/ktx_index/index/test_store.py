"""The document store (store.py): what the builder's reports read back from it."""

from __future__ import annotations

from indexers.models import Diagnostic
from ktx_index.index.store import DocStore


def test_scope_diagnostics_follow_the_stored_scopes_and_parse_each_text_once(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    broken = [Diagnostic(path="raw-sources/w/t.json", message="truncated JSON")]
    store.put_scope("scan:a", "scan", "f1", ["raw-sources/w/t.json"], broken)
    store.put_scope("scan:b", "scan", "f2", ["raw-sources/w/u.json"], [])
    first = store.scope_diagnostics()
    assert first == broken
    again = store.scope_diagnostics()
    assert again == broken and again[0] is first[0]  # the same stored text is not parsed again
    fixed = [Diagnostic(path="raw-sources/w/t.json", message="unreadable", code="warning")]
    store.put_scope("scan:a", "scan", "f3", ["raw-sources/w/t.json"], fixed)
    assert store.scope_diagnostics() == fixed
    store.delete_scope("scan:a")
    assert store.scope_diagnostics() == []
    store.close()


def test_the_writers_scope_rows_match_the_table_and_forget_a_rollback(tmp_path):
    writer = DocStore(tmp_path / "store.sqlite")
    writer.put_scope("scan:a", "scan", "f1", ["a.json"], [])
    assert writer.scope_fingerprints() == {"scan:a": "f1"}  # read once, then kept by the writer
    writer.begin()
    writer.put_scope("scan:b", "scan", "f2", ["b.json"], [Diagnostic(path="b.json", message="truncated JSON")])
    writer.delete_scope("scan:a")
    assert writer.scope_fingerprints() == {"scan:b": "f2"} and len(writer.scope_diagnostics()) == 1
    writer.rollback()  # a batch discarded whole: what the writer kept of it goes too
    assert writer.scope_fingerprints() == {"scan:a": "f1"} and writer.scope_diagnostics() == []
    writer.put_scope("scan:c", "scan", "f3", ["c.json"], [])
    reader = DocStore(tmp_path / "store.sqlite", readonly=True)
    assert reader.scope_fingerprints() == writer.scope_fingerprints() == {"scan:a": "f1", "scan:c": "f3"}
    reader.close()
    writer.close()


def test_lookups_by_many_keys_cross_the_batch_boundary(tmp_path):
    from ktx_index.index.store import IN_BATCH

    store = DocStore(tmp_path / "store.sqlite")
    words = {f"word{i}": f"key{i}" for i in range(IN_BATCH * 2 + 7)}
    store.put_words(words)
    wanted = sorted(words.values())
    assert store.word_texts(wanted) == {key: word for word, key in words.items()}
    assert len(list(store.select_in("SELECT word FROM words WHERE key IN ({marks})", wanted))) == len(words)
    assert list(store.select_in("SELECT word FROM words WHERE key IN ({marks})", [])) == []
    store.close()


def test_a_lookup_stopped_midway_closes_cleanly_after_the_store(tmp_path):
    """A SIGTERM can stop a caller mid-iteration and close the store before the generator is finalised: closing it
    then must not touch the closed database (CI saw 'Cannot operate on a closed database' at exit)."""
    store = DocStore(tmp_path / "store.sqlite")
    store.put_words({f"word{i}": f"key{i}" for i in range(10)})
    rows = store.select_in("SELECT word FROM words WHERE key IN ({marks})", [f"key{i}" for i in range(10)])
    next(rows)
    store.close()
    rows.close()  # raised sqlite3.ProgrammingError while the batch's cursor was still open
