"""The bridge's word table (embedding/word_table.py): the model's whole vocabulary words, embedded once into the
model cache, looked up by every reader; a missing or damaged table is only ever a slower path, and a stop
writes nothing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ktx_index.embedding import word_table
from ktx_index.embedding.embedder import HashEmbedder, wordpiece_words
from ktx_index.search.query_vectors import QueryVectors
from ktx_index.service import KtxIndex

WORDS = ("revenue", "customer", "movie", "shoppers", "income")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KTX_INDEX_MODEL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_wordpiece_words_are_whole_lowercase_ascii_words(tmp_path: Path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[unused0]\na\nthe\n##ing\nrevenue\ncafé\nx2\nOxford\nsales\n", encoding="utf-8")
    assert wordpiece_words(vocab) == ["the", "revenue", "sales"]


def test_built_table_holds_each_words_own_vector(cache: Path):
    embedder = HashEmbedder(words=WORDS)
    assert word_table.load(embedder.fingerprint) is None
    assert word_table.build(embedder) == len(WORDS)
    table = word_table.load(embedder.fingerprint)
    assert table is not None and set(table.rows) == set(WORDS)
    for word in WORDS:
        assert np.array_equal(table.get(word), embedder.encode([word])[0])
    assert table.get("churn") is None
    assert word_table.load(HashEmbedder(dim=64).fingerprint) is None  # another model: a table of its own


def test_a_stop_or_a_damaged_file_leaves_no_table(cache: Path):
    embedder = HashEmbedder(words=WORDS)
    assert word_table.build(embedder, should_stop=lambda: True) == 0
    assert not any(cache.glob("words-*"))
    word_table.build(embedder)
    words_path, _ = word_table.table_paths(embedder.fingerprint)
    words_path.write_text("revenue\ncustomer", encoding="utf-8")  # rows no longer match the vectors
    assert word_table.load(embedder.fingerprint) is None
    assert word_table.build(HashEmbedder()) == 0  # a model without common words has no table


def test_query_vectors_look_words_up_and_embed_the_rest(cache: Path):
    embedder = HashEmbedder(words=WORDS)
    word_table.build(embedder)
    vectors = QueryVectors(embedder)
    calls = embedder.calls
    assert np.array_equal(vectors.word("movie"), embedder.encode(["movie"])[0])
    assert embedder.calls == calls + 1  # only this test's own encode: the table answered
    assert vectors.word("flurm") is not None and embedder.calls == calls + 2  # not in the table: embedded


def test_the_table_is_built_once_per_machine_and_never_inside_a_rebuild(cache: Path, make_project):
    root = make_project({"wiki/global/churn.md": "---\nsummary: Churn\n---\nCustomers who leave.\n"})
    service = KtxIndex(root, embedder=HashEmbedder(words=WORDS))
    try:
        assert service.rebuild().words_embedded == 0  # a rebuild may hold the engine's lock: not there
        assert service.status().bridge_words == 0
        assert service.ensure_word_table() == len(WORDS)  # what the `rebuild` command does next
        assert service.ensure_word_table() == 0
        assert service.status().bridge_words == len(WORDS)
    finally:
        service.close()
    again = KtxIndex(root, embedder=HashEmbedder(words=WORDS))
    try:
        assert again.ensure_word_table() == 0  # the table is the machine's, not the index's or the process's
    finally:
        again.close()


def test_an_empty_or_mismatched_table_is_ignored_and_built_again(cache: Path, make_project):
    embedder = HashEmbedder(words=WORDS)
    word_table.build(embedder)
    _, vectors_path = word_table.table_paths(embedder.fingerprint)
    vectors_path.write_bytes(b"")  # what a crash could leave
    assert word_table.load(embedder.fingerprint) is None
    assert QueryVectors(embedder).word("movie") is not None  # embedded instead
    word_table.build(embedder)
    assert word_table.load(embedder.fingerprint, dim=embedder.dim + 1) is None  # rows of another width
    vectors_path.write_bytes(b"")
    service = KtxIndex(make_project({}), embedder=embedder)
    try:
        assert service.ensure_word_table() == len(WORDS)
        assert word_table.load(embedder.fingerprint, embedder.dim) is not None
    finally:
        service.close()


class FallingBack(HashEmbedder):
    """Its int8 form fails as it loads, on the first encode: it then writes float32's vector space."""

    def encode(self, texts):
        self.fingerprint = "hash-float32"
        self.fallback_reason = "int8 model unavailable; using float32"  # as MiniLMEmbedder._fall_back says
        return super().encode(texts)


def test_a_model_that_falls_back_keeps_its_table_under_the_form_it_runs(cache: Path, make_project):
    """Built under the fingerprint read before the model loaded, a fallback's table would be another form's for
    the whole machine; the service refused to build one at all, even when only the fine-tuned delta was missing."""
    embedder = FallingBack(words=WORDS)
    embedder.fingerprint = "hash-int8"
    service = KtxIndex(make_project({}), embedder=embedder)
    try:
        embedder.encode(["a question answered first"])  # serve answers before its background thread builds it
        assert service.ensure_word_table() == len(WORDS)
        assert word_table.load("hash-int8") is None and word_table.load("hash-float32") is not None
    finally:
        service.close()


class Broken(HashEmbedder):
    def encode(self, texts):
        if len(texts) > 1:  # a batch of several texts fails (the table's); one text (a query) still embeds
            raise RuntimeError("model gone")
        return super().encode(texts)


def test_a_failed_build_is_reported_once_and_not_tried_again(cache: Path, make_project, caplog):
    root = make_project({"wiki/global/churn.md": "---\nsummary: Churn\n---\nCustomers who leave.\n"})
    service = KtxIndex(root, embedder=Broken(words=WORDS))
    try:
        with caplog.at_level("WARNING", logger="ktx_index.embedding.word_table"):
            assert service.rebuild().added == 1
            assert service.ensure_word_table() == 0
            assert service.ensure_word_table() == 0
        assert [r.getMessage() for r in caplog.records].count("word_table_failed") == 1
    finally:
        service.close()


def test_serve_background_embedding_builds_the_table(cache: Path, make_project):
    root = make_project({"wiki/global/churn.md": "---\nsummary: Churn\n---\nCustomers who leave.\n"})
    embedder = HashEmbedder(words=WORDS)
    service = KtxIndex(root, embedder=embedder)
    try:
        service.rebuild(embed=False)
        assert word_table.load(embedder.fingerprint) is None
        service.acquire_writer()
        service.embed_in_background().join(30)
        assert word_table.load(embedder.fingerprint) is not None
    finally:
        service.close()
