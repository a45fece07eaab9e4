"""Whether the best answers carry every word of a question (search/carried.py): the words left out, the weakest
word's drop, and the whole measure over a real index with the hashing embedder, where a word carried by an
answer is one its text holds; and a discover answer it turns low."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from projects import column, scan_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search import carried
from ktx_index.search.carried import CARRIED, left_out, weakest_carried
from ktx_index.search.query import Query, content_words
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex
from ktx_index.tools.discover import normalize_kinds

PATIENTS = {
    "catalog": None, "db": "main", "name": "patients",
    "columns": [column("patient_id", "int"), column("ward"), column("admitted_on", "date")],
}  # fmt: skip


def test_each_content_word_is_left_out_once_wherever_it_occurs():
    question = "Age of each patient, and the patient's age in 2019"
    assert content_words(question) == ["Age", "patient"]  # filler, numbers and repeats dropped; first spelling kept
    assert left_out(question, list(Query.parse(question).words)) == [
        "of each patient, and the patient's in 2019",
        "Age of each , and the 's age in 2019",
    ]
    assert content_words("the of and") == [] and content_words("2019") == []
    assert left_out("revenue", list(Query.parse("revenue").words)) == [""]


def test_a_word_leaves_the_embedded_question_with_the_projects_abbreviation_of_it():
    q = dataclasses.replace(Query.parse("Payments per meter reading"), abbreviations=(("payments", "pymt"),))
    assert q.dense_text == "Payments pymt per meter reading"
    payments, meter, _reading = q.words
    assert carried.variants(q, [payments, meter]) == ["per meter reading", "Payments pymt per reading"]


def test_a_word_in_two_spellings_is_one_word_and_a_filler_verb_none():
    question = "volunteer shifts and volunteers per depot"
    volunteers, *_ = Query.parse(question).words  # then shifts, depot
    assert volunteers.spellings == ("volunteer", "volunteers") and volunteers.word == "volunteer"
    assert left_out(question, [volunteers]) == ["shifts and per depot"]  # every spelling leaves together
    assert [w.word for w in Query.parse("star ratings customers gave their deliveries").words] == [
        "star",
        "ratings",
        "customers",
        "deliveries",
    ]  # 'gave' is filler (give) once analysed: no answer could ever match it


def test_the_weakest_word_is_the_one_no_answer_carries():
    # columns: the whole question, then without word 1, without word 2; two answers, the first with two chunks
    cosines = np.array(
        [
            [0.60, 0.40, 0.62],  # answer 1, chunk 1: word 1 carried (0.20), word 2 not (-0.02)
            [0.50, 0.45, 0.52],  # answer 1, chunk 2: not its best chunk
            [0.55, 0.56, 0.60],  # answer 2: neither word (-0.01, -0.05)
        ]
    )
    owners = np.array([7, 7, 9])
    assert weakest_carried(cosines, owners) == pytest.approx(-0.02)
    assert weakest_carried(cosines[:, :1], owners) is None  # no word left out
    assert weakest_carried(np.empty((0, 3)), np.empty(0)) is None


@pytest.fixture
def patients(make_project):
    def service(embedder: HashEmbedder | None = None, **params) -> KtxIndex:
        root = make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [PATIENTS]))
        built = KtxIndex(root, embedder=embedder, params=dataclasses.replace(PARAMS, **params))
        built.rebuild()
        return built

    return service


def weakest(service: KtxIndex, question: str) -> float | None:
    engine = service.refreshed_engine()
    q = Query.parse(question)
    return carried.weakest(engine, engine.snapshot, q, engine.rank(q, normalize_kinds(None)))


def test_a_word_the_answers_do_not_hold_is_not_carried(patients):
    service = patients(HashEmbedder())
    assert weakest(service, "ward of each patient") == CARRIED  # every word matched by the answers' terms
    assert weakest(service, "hospital ward of each patient") < 0  # 'hospital' is held nowhere
    assert weakest(service, "2019") is None  # no word that names something: nothing to measure
    service.close()
    lexical_only = patients(None)
    assert weakest(lexical_only, "hospital ward of each patient") is None
    lexical_only.close()


def test_the_variants_of_words_the_index_lacks_are_foreseen_before_ranking(patients):
    service = patients(HashEmbedder())
    engine = service.refreshed_engine()
    q = Query.parse("hospital ward of each patient, by hospitl")
    assert carried.foreseen(engine.lexical, q) == [
        "ward of each patient, by hospitl",
        "hospital ward of each patient, by",
    ]
    assert carried.foreseen(engine.lexical, Query.parse("ward of each patient")) == []  # every word indexed
    service.close()


def test_discover_starts_the_foreseen_variants_before_ranking_and_embeds_them_once(patients):
    service = patients(HashEmbedder())
    engine = service.refreshed_engine()
    started: list[list[str]] = []
    prefetch = engine.query_vectors.prefetch
    engine.query_vectors.prefetch = lambda texts: (started.append(list(texts)), prefetch(texts))[1]  # type: ignore[method-assign]
    service.discover_data("hospital ward of each patient")
    assert started == [["ward of each patient"]]  # 'hospital' is held nowhere
    calls = engine.query_vectors.embedder.calls
    engine.query_vectors.get_many(("ward of each patient",))  # the carried check's variant: embedded once, cached
    assert engine.query_vectors.embedder.calls == calls
    service.close()


def test_a_confident_answer_that_carries_no_word_of_the_question_turns_low(patients):
    service = patients(HashEmbedder(), carried={"discover_data": (0.0, 0.06)})
    assert service.discover_data("hospital ward of each patient").confidence == "low"
    assert service.discover_data("ward of each patient").confidence is None  # confident
    service.close()
    unchecked = patients(HashEmbedder(), carried={})
    assert unchecked.discover_data("hospital ward of each patient").confidence is None
    unchecked.close()


def test_only_the_words_the_index_lacks_a_term_of_are_embedded(make_project):
    staff = {"catalog": None, "db": "main", "name": "staff", "columns": [column("staff_id", "int"), column("salary")]}
    root = make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [PATIENTS, staff]))
    service = KtxIndex(root, embedder=HashEmbedder(), params=dataclasses.replace(PARAMS, carried_top=1))
    service.rebuild()
    engine = service.refreshed_engine()
    asked: list[tuple[str, ...]] = []
    get_many = engine.query_vectors.get_many
    engine.query_vectors.get_many = lambda texts: (asked.append(texts), get_many(texts))[1]  # type: ignore[method-assign]
    q = Query.parse("ward salary of each patient")
    salary = q.words[1]
    assert not set(salary.terms) <= set(engine.rank(q, normalize_kinds(None))[0].terms)  # the best answer lacks it
    assert weakest(service, q.text) is None and asked == []  # ... but the index holds it: the level stands
    assert weakest(service, "ward of each patient") == CARRIED  # the best answer matches every word
    assert weakest(service, "hospital") is None and asked == []  # one word: nothing left to compare without it
    assert weakest(service, "hospital ward") < 0 and asked == [("ward",)]
    typos = Query.parse("hospital ward of each patient, by hospitl")
    assert [w.word for w in carried.absent(engine.lexical, typos)] == ["hospital", "hospitl"]
    compound = Query.parse("patient_ward salary")  # its parts are indexed, the whole term is not: a term lacking
    assert [w.word for w in carried.absent(engine.lexical, compound)] == ["patient_ward"]
    many = Query.parse("ward of each patient by hospital clinic doctor nurse surgeon bed")
    assert [w.word for w in carried.absent(engine.lexical, many)] == ["hospital", "clinic", "doctor", "nurse"][
        : carried.MOST_WORDS
    ]
    assert len(carried.foreseen(engine.lexical, many)) == carried.FORESEEN < carried.MOST_WORDS
    service.close()
