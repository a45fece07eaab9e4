"""The store (store/docstore.py): one transaction across the table families, and a reader's view of it."""

from __future__ import annotations

import sqlite3

import pytest

from indexers.models import Document
from ktx_index.index.store import DocStore


def test_a_rolled_back_transaction_leaves_every_family_as_it_was(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    doc = Document(uid="wiki:global:p", kind="wiki", id="p", path="p.md", name="p")
    store.begin()
    store.docs.put(doc, "wiki:p")
    store.chunks.put(doc.uid, ["k"])
    store.vectors.put({"k": 0})
    store.meta.set({"generation": "1"})
    store.rollback()
    assert not store.docs.has(doc.uid) and store.chunks.rows() == [] and store.vectors.max_row() == -1
    assert store.meta.generation() == 0
    store.rollback()  # nothing open: a no-op
    store.close()


def test_a_reader_sees_commits_and_cannot_write(tmp_path):
    writer = DocStore(tmp_path / "store.sqlite")
    reader = DocStore(tmp_path / "store.sqlite", readonly=True)
    writer.meta.set({"generation": "2"})
    assert reader.meta.generation() == 2 and reader.check() == "ok"
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        reader.meta.set({"generation": "3"})
    reader.close()
    writer.close()
