"""The judged-blind questions (tests/benchmarks/judged/blind, quality.py's ``blind_corpora``) judge the KTX-style
projects on questions nothing was tuned on, so they must be sound: every judged id names an item of its project,
no-answer questions are typed so, and the learned order never trains on them."""

import sys

import pytest
from projects import REPO, assert_sound_judged_set

sys.path.insert(0, str(REPO / "tests" / "benchmarks"))

import quality

from indexers import load_project, read_project

CORPORA = quality.blind_corpora(quality.DEFAULT_CORPORA)


@pytest.mark.parametrize("corpus", CORPORA, ids=[name for name, *_ in CORPORA])
def test_every_judged_id_names_an_item_of_the_project(corpus):
    name, path, queries, family = corpus
    assert family == quality.BLIND_FAMILY and name == f"{family}/{path.name}"
    read = read_project(load_project(path))
    items = {f"{d.kind}:{d.connection_id or ''}:{d.id}" for d in read.documents}
    assert_sound_judged_set(name, queries, items, answerable=9)


def test_blind_questions_are_not_among_the_judged_ones_the_ranking_is_tuned_on():
    tuned = {q.text for _name, _table, queries in quality.judged_corpora(quality.DEFAULT_CORPORA) for q in queries}
    blind = [q for _name, _path, queries, _family in CORPORA for q in queries]
    assert len(CORPORA) == 5 and blind and not {q.text for q in blind} & tuned
