"""Bridging a question's words to the project's (search/bridge.py): real stores, a fake embedder that knows a
few synonyms, through the same seam as the real model."""

from __future__ import annotations

import numpy as np
import pytest
from projects import column, scan_files, with_params

from indexers.models import Document
from ktx_index.analysis import stem
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.index.texts import vocabulary_words
from ktx_index.search.bridge import CACHE_WORDS, Bridge, bridged_terms, telling_abbreviations
from ktx_index.search.query import Query, question_words
from ktx_index.service import KtxIndex

SYNONYMS = {"movie": "film", "movies": "film", "performer": "actor", "cinema": "theatre", "picture": "film"}


class SynonymEmbedder(HashEmbedder):
    """HashEmbedder that reads a few words as their synonyms: 'movie' embeds exactly as 'film'."""

    def __init__(self) -> None:
        super().__init__()
        self.fingerprint = "synonym-embedder"
        self.words: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.words.extend(t for t in texts if " " not in t)
        return super().encode([" ".join(SYNONYMS.get(w.lower(), w) for w in t.split()) for t in texts])


def rental_project(make_project, extra_tables: tuple[dict, ...] = ()):
    tables = [
        {"catalog": None, "db": "main", "name": "film", "columns": [column("film_id", "int"), column("rating")]},
        {"catalog": None, "db": "main", "name": "actor", "columns": [column("actor_id", "int"), column("last_name")]},
        *extra_tables,
    ]
    return make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", tables))


@pytest.fixture
def service(make_project):
    service = KtxIndex(rental_project(make_project), embedder=SynonymEmbedder())
    service.rebuild()
    yield service
    service.close()


def test_vocabulary_words_are_a_documents_naming_words():
    doc = Document(uid="column:w:main.film.rental_rate", kind="column", id="main.film.rental_rate",
                   name="rental_rate", display="main.film.rental_rate", description="What it costs to rent, per day",
                   connection_id="w", path="x", content_hash="h")  # fmt: skip
    words = vocabulary_words(doc)
    assert {"rental", "rate", "film", "costs", "rent", "day"} <= words
    assert not words & {"what", "it", "to", "per", "main.film.rental_rate"}  # filler and wholes are not words


def test_nearest_keeps_one_entry_per_stem_best_first():
    vectors = np.eye(3, dtype=np.float32)
    bridge = Bridge(["film", "films", "actor"], ["film", "film", "actor"], vectors[[0, 0, 1]] * [[1.0], [0.9], [1.0]])
    near = bridge.nearest("movie", np.array([0.8, 0.6, 0.0], dtype=np.float32))
    assert near == [("film", pytest.approx(0.8)), ("actor", pytest.approx(0.6))]


def test_a_term_is_bridged_to_its_nearest_held_term_other_than_itself():
    vectors = np.eye(3, dtype=np.float32)
    bridge = Bridge(["films", "film", "actor"], ["film", "film", "actor"], vectors)
    word_vectors = {"movies": vectors[0], "performers": vectors[2], "cinema": None}
    held = {"actor"}.__contains__  # the index holds no term of 'film' any more
    out = bridged_terms(
        bridge,
        word_vectors.get,
        held,
        question_words("movies with performers at the cinema"),
        [stem("movies"), stem("performers"), stem("cinema")],
    )
    assert out == {  # 'film' is skipped though nearer: the index no longer holds it; 'cinema' has no vector
        stem("movies"): ("actor", pytest.approx(0.0)),
        stem("performers"): ("actor", pytest.approx(1.0)),
    }


def test_a_words_neighbours_are_remembered_and_the_least_recently_asked_forgotten_first():
    bridge = Bridge(["film"], ["film"], np.eye(1, dtype=np.float32))
    first = bridge.nearest("movie", np.ones(1, dtype=np.float32))
    assert bridge.nearest("movie", np.ones(1, dtype=np.float32)) is first  # the same answer, not computed again
    for i in range(CACHE_WORDS):
        bridge.nearest(f"word{i}", np.ones(1, dtype=np.float32))
        bridge.nearest("movie", np.ones(1, dtype=np.float32))  # asked all along: kept
    assert bridge.nearest("movie", np.ones(1, dtype=np.float32)) is first
    assert len(bridge._nearest) == CACHE_WORDS and "word0" not in bridge._nearest


def test_the_writer_embeds_each_vocabulary_word_once(service):
    words = dict(service.ensure_index().store.words.rows())
    assert {"film", "actor", "rating", "last"} <= set(words) and "name" not in words  # filler
    assert len(set(words.values())) == len(words)  # a row each
    embedder = service.embedder
    embedder.words.clear()
    service.rebuild(force=True)
    assert not {"film", "actor"} & set(embedder.words)  # cached by key: never embedded twice


def test_a_word_the_project_never_uses_is_bridged_to_its_nearest_term(service):
    engine = service.ensure_index()
    assert engine.bridged(question_words("movie rating"), [stem("movie")]) == {
        stem("movie"): ("film", pytest.approx(1.0))
    }
    film = next(c for c in engine.rank("movie rating", ["table"]) if c.uid.endswith("main.film"))
    assert film.terms.get("film", 0) > 0  # the lexical lane searched the bridged term


def test_known_words_and_typos_are_not_bridged(service):
    engine = service.ensure_index()
    actor = next(c for c in engine.rank("actr name", ["table"]) if c.uid.endswith("main.actor"))
    assert "actor" in actor.terms  # the typo correction, not a bridge
    assert engine.bridged(question_words("rating"), []) == {}


def test_bridging_off_leaves_unknown_words_unmatched(service):
    engine = with_params(service.ensure_index(), bridged_term=0.0)
    assert all("film" not in c.terms for c in engine.rank("movie", ["table", "column"]))


def test_new_words_are_bridged_after_the_commit_that_brings_them(make_project):
    root = rental_project(make_project)
    service = KtxIndex(root, embedder=SynonymEmbedder())
    service.rebuild()
    engine = service.ensure_index()
    assert engine.bridged(question_words("cinema"), [stem("cinema")]).get(stem("cinema"), ("",))[0] != "theatr"
    theatre = {"catalog": None, "db": "main", "name": "theatre", "columns": [column("seats", "int")]}
    rental_project(make_project, (theatre,))
    service.rebuild()
    engine = service.refreshed_engine()
    assert engine.bridged(question_words("cinema"), [stem("cinema")])[stem("cinema")][0] == "theatr"
    refs = service.discover_data("cinema", connection_id="warehouse").refs
    assert refs and refs[0].id == "main.theatre"
    service.close()


def test_a_word_an_edit_took_away_is_bridged_to_no_longer(make_project):
    """A column renamed and renamed back leaves the vocabulary as a fresh build of the same files has it: the
    word of the passing name bridged questions to it before (an outside pass), and a forced rebuild too."""
    theatre = {"catalog": None, "db": "main", "name": "theatre", "columns": [column("seats", "int")]}
    root = rental_project(make_project)
    service = KtxIndex(root, embedder=SynonymEmbedder())
    service.rebuild()
    fresh = {word for word, _ in service.ensure_index().store.words.rows()}
    rental_project(make_project, (theatre,))
    service.rebuild()
    assert "theatre" in {word for word, _ in service.refreshed_engine().store.words.rows()}
    for table in root.rglob("*.json"):
        if "theatre" in table.read_text() and "tables" in table.parts:
            table.unlink()
    service.rebuild()
    engine = service.refreshed_engine()
    assert {word for word, _ in engine.store.words.rows()} == fresh
    assert engine.bridged(question_words("cinema"), [stem("cinema")]).get(stem("cinema"), ("",))[0] != "theatr"
    service.rebuild(force=True)
    assert {word for word, _ in service.refreshed_engine().store.words.rows()} == fresh
    service.close()


def test_another_model_embeds_the_vocabulary_again(make_project):
    root = rental_project(make_project)
    first = KtxIndex(root, embedder=SynonymEmbedder())
    first.rebuild()
    first.close()
    other = SynonymEmbedder()
    other.fingerprint = "another-model"  # a new vector space: every key changes, words included
    second = KtxIndex(root, embedder=other)
    second.rebuild()
    assert {"film", "actor"} <= set(other.words)
    assert {"film", "actor"} <= {word for word, _ in second.ensure_index().store.words.rows()}
    second.close()


def test_a_wiki_only_search_does_not_bridge(service):
    engine, words = service.ensure_index(), service.embedder.words
    words.clear()
    engine.rank("movie rating", ["wiki"])
    assert "movie" not in words  # no word embedded alone: pages are matched on their whole text
    engine.rank("movie rating", ["wiki", "table"])
    assert "movie" in words


def test_a_word_is_bridged_to_the_project_word_abbreviating_it_before_its_nearest_in_meaning():
    words = ["pymt", "pmt", "mins", "pay", "acct"]
    bridge = Bridge(words, [stem(w) for w in words], np.eye(5, dtype=np.float32))
    held = {"pymt", "pmt", "min", "pay", "acct"}.__contains__
    out = bridged_terms(
        bridge,
        lambda word: np.eye(5, dtype=np.float32)[3],  # every word's nearest in meaning: 'pay'
        held,
        question_words("payments per account in minutes"),
        [stem("payments"), stem("account"), stem("minutes")],
    )
    assert out == {
        stem("payments"): ("pymt", 1.0),  # the longer of the two abbreviations: more of the word
        stem("account"): ("acct", 1.0),
        stem("minutes"): ("pay", pytest.approx(1.0)),  # 'mins' stems to 'min', which minimum's columns hold too
    }
    assert bridge.abbreviations("payments") == ("pymt",) and bridge.abbreviations("zebra") == ()
    renamed = Bridge(["pymnt", "pymt"], ["pymnt", "pymt"], np.eye(2, dtype=np.float32))  # PYMNT_DT renamed PYMT_DT
    assert renamed.abbreviations("payment") == ("pymnt", "pymt")
    assert bridged_terms(renamed, lambda w: None, {"pymt"}.__contains__, {"payment": "payment"}, ["payment"]) == {
        "payment": ("pymt", 1.0)  # the first the index still holds
    }
    assert renamed.abbreviations("s" * 20) == ()  # no abbreviation, and no time spent backtracking
    agency = Bridge(["agcy"], [stem("agcy")], np.eye(1, dtype=np.float32))  # its stem is 'agci': the term searched
    assert bridged_terms(agency, lambda w: None, {"agci"}.__contains__, {"agenc": "agency"}, ["agenc"]) == {
        "agenc": ("agci", 1.0)
    }


def test_an_abbreviated_warehouse_answers_in_its_users_words(make_project):
    tables = [
        {"catalog": None, "db": "dw", "name": "PYMT_TXN", "columns": [column("PYMT_AMT", "decimal")]},
        {"catalog": None, "db": "dw", "name": "MTR_RDG", "columns": [column("RDG_DT", "date")]},
    ]
    service = KtxIndex(make_project(scan_files("dw", "2026-01-01-000000-aaaa", tables)), embedder=HashEmbedder())
    service.rebuild()
    assert service.discover_data("meter reading", limit=2).refs[0].id == "dw.MTR_RDG"
    assert {r.id for r in service.discover_data("payment amounts", limit=2).refs} == {
        "dw.PYMT_TXN",
        "dw.PYMT_TXN.PYMT_AMT",
    }
    service.close()


def test_only_a_telling_abbreviation_of_a_word_the_index_lacks_is_embedded_beside_it():
    words = ["pymt", "amt", "mtr"]
    bridge = Bridge(words, words, np.eye(3, dtype=np.float32))
    held = {"pymt": 3, "amt": 5, "meter": 2, "mtr": 4}
    q = Query.parse("payment amount per meter")
    assert telling_abbreviations(bridge, q, lambda term: held.get(term, 0) > 0) == (("payment", "pymt"),)
    # 'amt' keeps two consonants of 'amount': the lane bridges it, the model would read another word;
    # 'meter' is held: nothing to bridge


def test_a_word_the_index_holds_is_also_searched_as_the_projects_abbreviation_of_it(make_project):
    tables = [
        {"catalog": None, "db": "dw", "name": "PYMT_TXN", "columns": [column("PYMT_AMT", "decimal")]},
        {"catalog": None, "db": "dw", "name": "BILL_HDR", "columns": [column("DUE_DT", "date", comment="payment due")]},
    ]
    service = KtxIndex(make_project(scan_files("dw", "2026-01-01-000000-aaaa", tables)), embedder=HashEmbedder())
    service.rebuild()
    engine = service.ensure_index()
    assert engine.abbreviation("payment") == "pymt" and engine.abbreviation("amount") is None  # 'amt': 3 letters
    table = next(c for c in engine.rank("payment", ["table"]) if c.uid.endswith("dw.PYMT_TXN"))
    assert table.terms.get("pymt", 0) > 0  # 'payment' is held (a comment), and still finds the table it names
    service.close()
