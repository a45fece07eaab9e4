"""Typo tolerance: the edit budget by word length, Damerau transpositions, ties by frequency, and the lookup in
a real tantivy index under the word's two-letter prefix."""

from __future__ import annotations

import pytest

from indexers.models import Document, make_uid
from ktx_index.analysis import analyze
from ktx_index.index.lexical import LexicalIndex
from ktx_index.search.spelling import indexed_term, nearest_term


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
