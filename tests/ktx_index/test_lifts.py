"""Structural steps of ranking (search/lifts.py) over a small scan: real store, fake embedder."""

from __future__ import annotations

import pytest
from projects import column, scan_files

from ktx_index.embedder import HashEmbedder
from ktx_index.search import scoring
from ktx_index.search.lifts import named_keys
from ktx_index.service import KtxIndex

CLINIC = [
    {"catalog": None, "db": "main", "name": "Patient", "columns": [column("ID", "int"), column("Birthday", "date")]},
    {
        "catalog": None, "db": "main", "name": "Laboratory",
        "columns": [column("ID", "int"), column("PLT", "int", comment="platelet count"), column("HGB", "int")],
    },
    {"catalog": None, "db": "main", "name": "gasstations", "columns": [column("Segment")]},
]  # fmt: skip


def test_named_keys_are_a_questions_phrases_singular_and_plural():
    keys = named_keys("How many gas stations are in the Czech Republic?")
    assert {"gasstations", "gasstation", "gas", "czechrepublic"} <= keys
    assert not keys & {"how", "many", "howmany", "the"}  # phrases do not start or end on filler
    assert {"category", "categories"} <= named_keys("sales by categories")


@pytest.fixture
def clinic(make_project):
    service = KtxIndex(make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", CLINIC)), embedder=HashEmbedder())
    service.rebuild()
    yield service.ensure_index()
    service.close()


def score_of(engine, query: str, uid_end: str) -> tuple[float, float]:
    """(the table's score, the best table's score)."""
    ranked = [c for c in engine.rank(query, ["table", "column"]) if c.uid.startswith("table:")]
    return next(c.score for c in ranked if c.uid.endswith(uid_end)), max(c.score for c in ranked)


def test_a_table_the_question_names_scores_near_the_best_table(clinic, monkeypatch):
    query = "patients with a platelet count below normal"
    monkeypatch.setattr(scoring, "NAMED_SHARE", 0.0)
    off, best_off = score_of(clinic, query, "main.Patient")
    monkeypatch.setattr(scoring, "NAMED_SHARE", 0.95)
    on, best = score_of(clinic, query, "main.Patient")
    assert off < 0.95 * best_off  # the columns matched are the laboratory's
    assert on == pytest.approx(0.95 * best) and best == pytest.approx(best_off)  # lifted, never above the best


def test_a_phrase_names_a_table_and_kinds_not_asked_for_are_never_added(clinic):
    lifted, best = score_of(clinic, "patients and gas stations by segment", "main.gasstations")
    assert lifted >= 0.95 * best - 1e-9  # 'gas stations' names gasstations, found through its Segment column
    ranked = clinic.rank("patients", ["column"])
    assert ranked and not any(c.uid.startswith("table:") for c in ranked)
