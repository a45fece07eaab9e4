"""The scopes table (store/scopes.py): the writer's copy of the rows and the parsed diagnostics."""

from __future__ import annotations

from indexers.models import Diagnostic
from ktx_index.index.store import DocStore


def test_scope_diagnostics_follow_the_stored_scopes_and_parse_each_text_once(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    broken = [Diagnostic(path="raw-sources/w/t.json", message="truncated JSON")]
    store.scopes.put("scan:a", "scan", "f1", ["raw-sources/w/t.json"], broken)
    store.scopes.put("scan:b", "scan", "f2", ["raw-sources/w/u.json"], [])
    first = store.scopes.diagnostics()
    assert first == broken
    again = store.scopes.diagnostics()
    assert again == broken and again[0] is first[0]  # the same stored text is not parsed again
    fixed = [Diagnostic(path="raw-sources/w/t.json", message="unreadable", code="warning")]
    store.scopes.put("scan:a", "scan", "f3", ["raw-sources/w/t.json"], fixed)
    assert store.scopes.diagnostics() == fixed
    store.scopes.delete("scan:a")
    assert store.scopes.diagnostics() == []
    store.close()


def test_the_writers_scope_rows_match_the_table_and_forget_a_rollback(tmp_path):
    writer = DocStore(tmp_path / "store.sqlite")
    writer.scopes.put("scan:a", "scan", "f1", ["a.json"], [])
    assert writer.scopes.fingerprints() == {"scan:a": "f1"}  # read once, then kept by the writer
    writer.begin()
    writer.scopes.put("scan:b", "scan", "f2", ["b.json"], [Diagnostic(path="b.json", message="truncated JSON")])
    writer.scopes.delete("scan:a")
    assert writer.scopes.fingerprints() == {"scan:b": "f2"} and len(writer.scopes.diagnostics()) == 1
    writer.rollback()  # a batch discarded whole: what the writer kept of it goes too
    assert writer.scopes.fingerprints() == {"scan:a": "f1"} and writer.scopes.diagnostics() == []
    writer.scopes.put("scan:c", "scan", "f3", ["c.json"], [])
    reader = DocStore(tmp_path / "store.sqlite", readonly=True)
    assert reader.scopes.fingerprints() == writer.scopes.fingerprints() == {"scan:a": "f1", "scan:c": "f3"}
    reader.close()
    writer.close()
