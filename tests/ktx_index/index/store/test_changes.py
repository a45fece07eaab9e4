"""The change log (store/changes.py): what a reader at an older generation must reload, or None for all."""

from __future__ import annotations

from ktx_index.index.store import CHANGE_LOG_GENERATIONS, CHANGE_LOG_MAX, DocStore


def _commit(store: DocStore, generation: int, uids: list[str], everything: bool = False) -> None:
    store.begin()
    store.changes.log(generation, uids, everything=everything)
    store.meta.set({"generation": str(generation)})
    store.commit()


def test_a_reader_gets_the_uids_changed_since_its_generation(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    assert store.changes.since(0, store.meta.all()) is None  # a new store: nothing logged yet
    _commit(store, 1, ["a"])
    _commit(store, 2, ["b", "c"])
    _commit(store, 3, ["a"])
    meta = store.meta.all()
    assert store.changes.since(2, meta) == {"a"}
    assert store.changes.since(1, meta) == {"a", "b", "c"}
    assert store.changes.since(3, meta) == set()
    assert store.changes.since(4, meta) is None  # ahead of the store: another store
    _commit(store, 4, ["d"], everything=True)
    assert store.changes.since(3, store.meta.all()) is None  # a forced commit is loaded whole
    store.close()


def test_the_log_keeps_its_last_generations_and_skips_huge_commits(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    for generation in range(1, CHANGE_LOG_GENERATIONS + 3):
        _commit(store, generation, [f"u{generation}"])
    last = CHANGE_LOG_GENERATIONS + 2
    meta = store.meta.all()
    assert store.changes.since(1, meta) is None  # too far behind
    assert store.changes.since(last - 1, meta) == {f"u{last}"}
    _commit(store, last + 1, [f"x{i}" for i in range(CHANGE_LOG_MAX + 1)])
    assert store.changes.since(last, store.meta.all()) is None
    store.close()
