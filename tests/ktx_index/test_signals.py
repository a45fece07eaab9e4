"""Pure ranking signals: values a question names, concept coverage, connection coherence, answerability."""

import numpy as np

from ktx_index.search import scoring
from ktx_index.search.candidate import Candidate
from ktx_index.search.signals import coherence, concept_coverage, value_like, value_phrases
from ktx_index.search.snapshot import Snapshot
from ktx_index.search.uids import UidIndex


def test_value_phrases_are_folded_ngrams_without_filler_or_short_numbers():
    phrases = value_phrases("Which customers pay in EUR, in São Paulo or 12?")
    assert "eur" in phrases and "sao paulo" in phrases and "customers pay" in phrases
    assert "in" not in phrases and "12" not in phrases and "which" not in phrases


def test_data_words_are_not_concepts():
    assert value_like("When did Angela Sanders pay her dues in 2019?") == {"angela", "sander", "2019"}
    assert value_like('cards of the "duel deck" type') == {"duel", "deck"}
    assert value_like("When did members pay their dues") == set()


def test_concept_coverage_weighs_known_terms_by_idf_and_ignores_data():
    known = {"member": 3, "pay": 5, "due": 2}
    df = lambda t: known.get(t, 0) > 0  # noqa: E731
    idf = lambda t: 1.0  # noqa: E731
    assert concept_coverage(df, idf, "when did members pay their dues") == 1.0
    # a name is data: its absence from the vocabulary does not make the question unanswerable
    assert concept_coverage(df, idf, "when did Angela Sanders pay their dues") == 1.0
    assert concept_coverage(df, idf, "payroll and overtime of members") == 1 / 3
    assert concept_coverage(df, idf, '"Angela Sanders" 2019') == 1.0  # data alone: nothing to judge by


def test_coherence_lowers_other_connections_in_proportion():
    snap = Snapshot(
        doc_uids=["a", "b", "c", "w"],
        doc_kind=np.array([4, 4, 4, 0], dtype=np.int8),  # three tables and a wiki page
        doc_conn=np.array([0, 0, 1, 2], dtype=np.int32),
    )
    snap.uid_index = UidIndex(snap.doc_uids)
    ranked = [
        Candidate("a", score=0.8),
        Candidate("b", score=0.6),
        Candidate("c", score=0.7),
        Candidate("w", score=0.5),
    ]
    coherence(snap, ranked)
    scores = {c.uid: c.score for c in ranked}
    assert scores["a"] == 0.8 and scores["b"] == 0.6 and scores["w"] == 0.5
    assert scores["c"] == 0.7 * (1 - scoring.COHERENCE * (1 - 0.7 / 1.4))
