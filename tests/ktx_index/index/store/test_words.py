"""The words table (store/words.py): vocabulary words keep their first key until re-keyed."""

from __future__ import annotations

from ktx_index.index.store import DocStore


def test_words_keep_their_key_and_read_their_rows_once_embedded(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    store.words.put({"film": "k-film", "actor": "k-actor"})
    store.words.put({"film": "k-other"})  # a known word keeps its key
    assert store.words.texts(["k-film", "k-other", "k-none"]) == {"k-film": "film"}
    assert sorted(store.words.missing_keys()) == ["k-actor", "k-film"]
    store.vectors.put({"k-film": 4})
    assert store.words.rows() == [("film", 4)] and store.words.missing_keys() == ["k-actor"]
    store.words.rekey(lambda word: f"new-{word}")
    assert store.words.rows() == [] and store.words.texts(["new-film"]) == {"new-film": "film"}
    store.chunks.put("doc", ["c1"])
    missing = store.missing_vector_keys()  # chunk texts first, then words
    assert missing[0] == "c1" and sorted(missing[1:]) == ["new-actor", "new-film"]
    store.close()
