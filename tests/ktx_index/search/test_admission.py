"""The one kind/connection rule (search/admission.py), for one document and for many at once."""

import itertools

import numpy as np

from indexers.models import SEARCH_KINDS
from ktx_index.search.admission import admits, admitted, admitted_mask, embedded_mask
from ktx_index.snapshot.snapshot import Snapshot


def test_a_document_is_admitted_by_its_kind_and_connection_and_a_page_by_its_kind_alone():
    assert admits("column", 0, {"column", "table"}, None)
    assert not admits("column", 0, {"table"}, None)
    assert admits("column", 1, {"column"}, 1)
    assert not admits("column", 0, {"column"}, 1)
    assert not admits("column", 0, {"column"}, -1)  # a connection the snapshot has not seen
    assert admits("wiki", 0, {"wiki"}, -1)  # pages belong to every connection
    assert not admits("wiki", 0, {"column"}, 0)


def snapshot() -> Snapshot:
    """Every kind in each of two connections (None and 'warehouse'), as a loaded snapshot codes them."""
    pairs = list(itertools.product(range(len(SEARCH_KINDS)), range(2)))
    return Snapshot(
        doc_kind=np.array([k for k, _ in pairs], dtype=np.int8),
        doc_conn=np.array([c for _, c in pairs], dtype=np.int32),
        connections={None: 0, "warehouse": 1},
    )


def test_the_mask_is_the_rule_applied_to_each_document():
    snap = snapshot()
    docs = np.arange(len(snap.doc_kind))
    for kinds in ({"column"}, {"wiki", "table"}, set(SEARCH_KINDS), set()):
        for connection in (None, "warehouse", "elsewhere"):
            expected = [admitted(snap, int(i), kinds, connection) for i in docs]
            assert admitted_mask(snap, docs, kinds, connection).tolist() == expected
    in_warehouse = admitted_mask(snap, docs, {"wiki", "column"}, "warehouse")
    kept = {(SEARCH_KINDS[snap.doc_kind[i]], int(snap.doc_conn[i])) for i in docs[in_warehouse]}
    assert kept == {("wiki", 0), ("wiki", 1), ("column", 1)}


def test_the_dense_lanes_mask_is_over_the_embedded_documents_and_none_when_it_admits_them_all():
    snap = snapshot()
    snap.chunk_docs = np.array([0, 3, 10, 11], dtype=np.int64)  # the documents with a vector
    every = embedded_mask(snap, list(SEARCH_KINDS), None)
    assert every is None
    columns = embedded_mask(snap, ["column"], "warehouse")
    assert columns is not None
    assert columns.tolist() == [False, False, False, True]  # the column of warehouse; not the one of no connection
    assert embedded_mask(snap, ["column"], "warehouse") is columns  # kept for the snapshot
