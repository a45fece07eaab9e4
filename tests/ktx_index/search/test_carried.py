"""Whether the best answers carry every word of a question (search/carried.py): the variants left out, the
weakest word's drop, and the whole measure over a real index with the hashing embedder, where a word carried
by an answer is one its text holds."""

from __future__ import annotations

import numpy as np
from projects import column, scan_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search import carried
from ktx_index.search.carried import CARRIED, left_out, weakest_carried
from ktx_index.search.query import Query
from ktx_index.service import KtxIndex
from ktx_index.tools.discover import normalize_kinds


def test_each_content_word_is_left_out_once():
    assert left_out("age of each patient") == ["of each patient", "age of each"]
    assert left_out("orders in 2019") == ["in 2019"]  # a number is data, not a concept
    assert left_out("the of and") == []
    assert left_out("patient age", carried=lambda word: word == "patient") == ["patient"]
    assert len(left_out("a b c d e f g h i j", most=3)) == 3


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
    assert abs(weakest_carried(cosines, owners) + 0.02) < 1e-9
    assert weakest_carried(cosines[:, :1], owners) is None  # no word left out
    assert weakest_carried(np.empty((0, 3)), np.empty(0)) is None


def test_a_word_the_answers_do_not_hold_is_not_carried(make_project):
    patients = {
        "catalog": None, "db": "main", "name": "patients",
        "columns": [column("patient_id", "int"), column("ward"), column("admitted_on", "date")],
    }  # fmt: skip
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [patients])), embedder=HashEmbedder()
    )
    service.rebuild()
    engine = service.refreshed_engine()
    snap = engine.snapshot

    def weakest(question: str) -> float | None:
        q = Query.parse(question)
        return carried.weakest(engine, snap, q, engine.rank(q, normalize_kinds(None)))

    assert weakest("ward of each patient") == CARRIED  # every word matched by the answers' terms: nothing embedded
    assert weakest("hospital ward of each patient") is not None
    assert weakest("hospital ward of each patient") < 0 <= weakest("ward of each patient")  # 'hospital' is held nowhere
    service.close()
