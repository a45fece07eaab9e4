"""The chunks table (store/chunks.py): each document's vector keys joined to their rows."""

from __future__ import annotations

from ktx_index.index.store import DocStore
from ktx_index.index.store.chunks import ChunkStats


def test_chunks_read_their_vector_rows_or_none_until_embedded(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    store.chunks.put("b", ["k2", "k1"])
    store.chunks.put("a", ["k1"])
    store.chunks.put("c", ["k3"])
    assert store.chunks.rows() == [("a", None), ("b", None), ("b", None), ("c", None)]
    assert sorted(store.chunks.missing_keys()) == ["k1", "k2", "k3"]
    store.vectors.put({"k1": 0, "k2": 1})
    assert store.chunks.rows() == [("a", 0), ("b", 1), ("b", 0), ("c", None)]  # a document's chunks in order
    assert store.chunks.rows_of(["c", "b"]) == [("b", 1), ("b", 0), ("c", None)]
    assert store.chunks.missing_keys() == ["k3"] and store.chunks.missing_keys(["a", "b"]) == []
    assert store.chunks.stats() == ChunkStats(chunks=4, embedded=3)
    assert store.chunks.uids_for_keys(["k2", "k9"]) == ["b"]
    assert store.chunks.uids_with_vectors_after(0) == ["b"]
    store.chunks.put("b", ["k3"])  # replaces its chunks
    assert store.chunks.rows_of(["b"]) == [("b", None)]
    store.close()
