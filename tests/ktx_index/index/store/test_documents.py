"""The docs table (store/documents.py): documents round-trip, and the bulk reads agree with the targeted ones."""

from __future__ import annotations

from indexers.models import SEARCH_KINDS, Document, TableRef
from ktx_index.index.store import DocStore
from ktx_index.index.store.documents import KindCount, ScopeDoc, StaleDoc, TableRow


def _docs() -> list[Document]:
    table = Document(uid="table:w:raw.t", kind="table", id="raw.t", connection_id="w", path="t.json", name="t",
                     display="raw.t", table_ref=TableRef(db="raw", name="t"), comment="Orders")  # fmt: skip
    column = Document(uid="column:w:raw.t.a", kind="column", id="raw.t.a", connection_id="w", path="t.json",
                      name="a", display="raw.t.a", column_name="a")  # fmt: skip
    page = Document(uid="wiki:global:p", kind="wiki", id="p", path="wiki/global/p.md", name="p",
                    attrs={"scope": "GLOBAL"}, body="Late boxes.")  # fmt: skip
    value = Document(uid="dictionary_value:w:x", kind="dictionary_value", id="x", connection_id="w",
                     path="t.json", name="x")  # fmt: skip
    return [table, column, page, value]


def _store(tmp_path) -> DocStore:
    store = DocStore(tmp_path / "store.sqlite")
    table, column, page, value = _docs()
    store.docs.put(table, "scan:t")
    store.docs.put(column, "scan:t", stale="unreadable")
    store.docs.put(page, "wiki:p")
    store.docs.put(value, "scan:t")
    return store


def test_a_document_reads_back_as_written(tmp_path):
    store = _store(tmp_path)
    for doc in _docs():
        assert store.docs.get(doc.uid) == doc
    assert store.docs.get_many([d.uid for d in _docs()]) == {d.uid: d for d in _docs()}
    assert store.docs.get("table:w:missing") is None and not store.docs.has("table:w:missing")
    assert [d.uid for d in store.docs.iter(["column", "table"])] == ["column:w:raw.t.a", "table:w:raw.t"]
    assert [d.uid for d in store.docs.siblings("table:w:raw.t", "column")] == ["column:w:raw.t.a"]
    store.delete_doc("column:w:raw.t.a")
    assert not store.docs.has("column:w:raw.t.a") and store.docs.has("table:w:raw.t")
    store.close()


def test_the_identity_reads_give_typed_rows(tmp_path):
    store = _store(tmp_path)
    table, column, _page, value = _docs()
    assert store.docs.in_scope("scan:t") == {
        table.uid: ScopeDoc(table.content_hash, "t.json", None),
        column.uid: ScopeDoc(column.content_hash, "t.json", "unreadable"),
        value.uid: ScopeDoc(value.content_hash, "t.json", None),
    }
    assert store.docs.stale() == [StaleDoc("t.json", "unreadable", "scan:t")]
    assert sorted(store.docs.counts()) == [
        KindCount("column", "w", 1), KindCount("dictionary_value", "w", 1), KindCount("table", "w", 1),
        KindCount("wiki", None, 1),
    ]  # fmt: skip
    assert store.docs.count(SEARCH_KINDS) == 3
    assert store.docs.table_refs("w") == [TableRow("table:w:raw.t", None, "raw", "t")]
    assert store.docs.ids("column", "w") == ["raw.t.a"]
    store.docs.mark_stale([column.uid], None)
    assert store.docs.stale() == []
    store.close()


def test_the_snapshots_rows_by_uid_are_the_full_reads_rows(tmp_path):
    """A delta reads the changed uids' rows: they must be the rows a full load reads, of searchable kinds only,
    with a body for wiki pages alone."""
    store = _store(tmp_path)
    full = store.docs.searchable_rows(SEARCH_KINDS)
    assert [row[0] for row in full] == ["column:w:raw.t.a", "table:w:raw.t", "wiki:global:p"]
    assert [row[6] is not None for row in full] == [False, False, True]
    every = [d.uid for d in _docs()] + ["table:w:gone"]
    assert store.docs.searchable_rows(SEARCH_KINDS, every) == full
    assert store.docs.searchable_rows(SEARCH_KINDS, ["wiki:global:p"]) == full[2:]
    store.close()


def test_the_kinds_fields_by_uid_are_the_full_reads_fields(tmp_path):
    store = _store(tmp_path)
    full = list(store.docs.kind_fields(("table", "sl_source")))
    assert [(row.uid, row.kind, row.connection, row.fields["comment"]) for row in full] == [
        ("table:w:raw.t", "table", "w", "Orders")
    ]
    assert list(store.docs.kind_fields(("table", "sl_source"), [d.uid for d in _docs()])) == full
    assert [row.uid for row in store.docs.fields("dictionary_value")] == ["dictionary_value:w:x"]
    store.close()
