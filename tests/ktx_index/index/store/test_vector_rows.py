"""The vectors table (store/vector_rows.py): forgetting rows tells readers, through the epoch."""

from __future__ import annotations

from ktx_index.index.store import DocStore


def test_forgetting_rows_bumps_the_epoch_only_when_some_go(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    assert store.vectors.max_row() == -1
    store.vectors.put({"k0": 0, "k1": 1, "k2": 2, "k3": 3})
    assert store.vectors.max_row() == 3 and store.vectors.count() == 4
    assert store.meta.get("vector_epoch") is None
    assert store.vectors.forget([1, 9]) == 1
    first = store.meta.get("vector_epoch")
    assert first is not None
    assert store.vectors.forget([9]) == 0 and store.meta.get("vector_epoch") == first
    assert store.vectors.forget_from(3) == 1
    assert store.vectors.keys_by_row() == {0: "k0", 2: "k2"}
    assert store.meta.get("vector_epoch") != first
    store.close()
