"""Typo tolerance (search/spelling.py): the one edit budget every fuzzy match asks, by word length, and the
typo correction built on it: Damerau transpositions, ties by frequency, and the lookup in a real tantivy index
under the word's two-letter prefix."""

from __future__ import annotations

import pytest

from indexers.models import Document, make_uid
from ktx_index.analysis import analyze
from ktx_index.index.lexical import LexicalIndex
from ktx_index.search.engine import IDENTIFIER_EDITS
from ktx_index.search.spelling import TERM_EDITS, edit_budget, indexed_term, nearest_term
from ktx_index.tools.dictionary import VALUE_EDITS


def test_a_budget_is_one_edit_per_step_reached():
    assert [edit_budget(n, (4, 8)) for n in (0, 3, 4, 7, 8, 20)] == [0, 0, 1, 1, 2, 2]
    assert edit_budget(5, ()) == 0


def test_each_callers_steps_keep_the_budget_it_had():
    # the budgets as each caller wrote them before they shared edit_budget
    term = {n: 0 if n < 4 else 1 if n < 8 else 2 for n in range(40)}
    identifier = {n: 0 if n < 8 else 1 if n < 12 else 2 for n in range(40)}
    value = {n: 0 if n < 4 else 1 if n <= 5 else 2 if n <= 12 else 3 for n in range(40)}
    assert {n: edit_budget(n, TERM_EDITS) for n in range(40)} == term
    assert {n: edit_budget(n, IDENTIFIER_EDITS) for n in range(40)} == identifier
    assert {n: edit_budget(n, VALUE_EDITS) for n in range(40)} == value


def test_a_typo_is_corrected_within_its_budget_only():
    vocabulary = {"customer": 5, "custumer": 1, "order": 3}
    assert nearest_term("cusotmer", vocabulary) == "customer"  # one transposition
    assert nearest_term("custamer", vocabulary) == "customer"  # one edit from both: the more frequent
    assert nearest_term("ordr", vocabulary) == "order"
    assert nearest_term("odr", vocabulary) is None  # three letters: no edits allowed
    assert nearest_term("1234", {"1235": 1}) is None  # numbers are never corrected


@pytest.mark.parametrize(
    ("term", "vocabulary", "expected"),
    [
        ("ord", {"ore": 5}, None),  # under 4 characters: never corrected
        ("2024", {"2025": 3}, None),  # numbers are values, not typos
        ("refnd", {"refund": 2}, "refund"),  # 4-7 characters: one edit
        ("rfnd", {"refund": 2}, None),  # two edits is too many for a short word
        ("cuorier", {"courier": 1}, "courier"),  # a transposition is one edit (Damerau), not two
        ("dilivaries", {"deliveries": 1}, "deliveries"),  # 8 characters and more: two edits
        ("dilivarees", {"deliveries": 1}, None),  # three is too many
        ("shippimg", {"shipping": 1, "shopping": 50}, "shipping"),  # the nearer term wins over the commoner
        ("cart", {"card": 1, "carp": 9}, "carp"),  # equally near: the more frequent term
        ("cart", {"card": 3, "carp": 3}, "card"),  # and then alphabetical, so the answer is stable
        ("refnd", {}, None),
    ],
)
def test_nearest_term(term, vocabulary, expected):
    assert nearest_term(term, vocabulary) == expected


@pytest.fixture(scope="module")
def lexical(tmp_path_factory):
    index = LexicalIndex(tmp_path_factory.mktemp("lexical"))
    writer = index.writer()
    for name, description in [
        ("courier_weekly_scorecard", "Deliveries per courier and week"),
        ("depots", "Warehouses the boxes leave from"),
    ]:
        doc = Document(
            uid=make_uid("table", "w", name), kind="table", id=name, name=name, connection_id="w", path="x.json",
            description=description,
        )  # fmt: skip
        index.add(writer, doc)
    index.set_generation(writer, 1)
    writer.commit()
    index.reload()
    return index


def test_an_indexed_term_is_kept_and_a_typo_becomes_the_indexed_term(lexical):
    (scorecard,) = analyze("scorecard")
    assert indexed_term(lexical, scorecard) == scorecard
    (typo,) = analyze("scorecrad")
    assert typo != scorecard and indexed_term(lexical, typo) == scorecard


def test_a_typo_in_the_first_two_letters_or_far_from_everything_is_not_corrected(lexical):
    (swapped,) = analyze("csorecard")  # the vocabulary is read under the term's two-letter prefix
    assert indexed_term(lexical, swapped) is None
    (unrelated,) = analyze("zeppelin")
    assert indexed_term(lexical, unrelated) is None


def test_an_english_word_is_not_taken_for_a_misspelling_when_its_word_is_given(lexical):
    (week,) = analyze("week")
    (weak,) = analyze("weak")  # an English word one edit from an indexed one: another word, not a typo
    assert indexed_term(lexical, weak) == week  # the stemmed term alone cannot tell
    assert indexed_term(lexical, weak, "weak") is None
    (typo,) = analyze("scorecrad")
    assert indexed_term(lexical, typo, "scorecrad") is not None  # no English word: still corrected
