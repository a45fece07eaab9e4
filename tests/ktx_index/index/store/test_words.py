"""The words table (store/words.py): vocabulary words keep their first key until re-keyed, and belong to the
vocabulary while some document names them."""

from __future__ import annotations

from ktx_index.index.store import DocStore


def key(word: str) -> str:
    return f"k-{word}"


def test_words_keep_their_key_and_read_their_rows_once_embedded(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    assert store.words.count({"film": 2, "actor": 1}, key)
    assert not store.words.count({"film": 1}, lambda word: "k-other")  # a known word keeps its key
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


def test_a_word_no_document_names_leaves_the_vocabulary_and_may_come_back(tmp_path):
    store = DocStore(tmp_path / "store.sqlite")
    store.words.count({"film": 2, "actor": 1}, key)
    store.vectors.put({"k-film": 4, "k-actor": 5})
    assert not store.words.count({"film": -1, "actor": 0}, key)  # still named once: nothing came or went
    assert store.words.count({"film": -1}, key)
    assert store.words.rows() == [("actor", 5)] and store.words.missing_keys() == []
    assert store.words.count({"film": 1}, key)  # back, under its old vector
    assert store.words.rows() == [("actor", 5), ("film", 4)]
    store.words.forget_counts()
    assert store.words.rows() == []
    store.close()
