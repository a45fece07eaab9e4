"""The meta table (store/meta.py)."""

from __future__ import annotations

from ktx_index.index.store import DocStore


def test_values_replace_and_the_generation_starts_at_zero(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    assert store.meta.generation() == 0 and store.meta.get("format", "none") == "none"
    store.meta.set({"generation": "3", "format": "f1"})
    store.meta.set({"format": "f2"})
    assert store.meta.all() == {"generation": "3", "format": "f2"} and store.meta.generation() == 3
    store.close()
