"""A document's compressed body (store/codec.py)."""

from __future__ import annotations

from indexers.models import Document
from ktx_index.index.store.codec import COLUMN_FIELDS, document, pack, unpack


def test_the_body_leaves_out_the_columns_and_rebuilds_the_document_with_them():
    doc = Document(uid="table:w:raw.t", kind="table", id="raw.t", connection_id="w", path="t.json", name="t",
                   comment="Orders placed " * 20)  # fmt: skip
    body = pack(doc)
    fields = unpack(body)
    assert not COLUMN_FIELDS & fields.keys() and fields["comment"] == doc.comment
    assert len(body) < len(doc.model_dump_json())  # compressed
    assert document(doc.uid, doc.kind, doc.connection_id, doc.path, doc.content_hash, body) == doc
