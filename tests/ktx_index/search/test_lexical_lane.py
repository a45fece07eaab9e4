"""The lexical lane (search/lexical_lane.py) over a real lexical index: shares per term, a typo corrected at a
discount, a term no field holds bridged through the callable handed in, and no bridge for a wiki-only search."""

from __future__ import annotations

import pytest
from projects import column, scan_files

from ktx_index.analysis import stem
from ktx_index.search.candidate import Candidate
from ktx_index.search.lexical_lane import bridges, lexical_lane
from ktx_index.search.query import Query
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex

FILMS = {"catalog": None, "db": "main", "name": "films", "columns": [column("film_id", "int"), column("rating")]}


@pytest.fixture
def lexical(make_project):
    files = scan_files("warehouse", "2026-01-01-000000-aaaa", [FILMS]) | {
        "wiki/global/ratings.md": "How ratings work.\n"
    }
    service = KtxIndex(make_project(files), embedder=None)
    service.rebuild()
    yield service.refreshed_engine().lexical
    service.close()


def run(lexical, question: str, kinds: list[str], bridged=lambda words, terms: {}) -> dict[str, Candidate]:
    out: dict[str, Candidate] = {}
    lexical_lane(lexical, Query.parse(question), kinds, None, 50, out, p=PARAMS, bridged=bridged)
    return out


def test_each_document_gets_its_share_of_the_terms_it_matches(lexical):
    found = run(lexical, "film rating", ["table", "column"])
    rating = found["column:warehouse:main.films.rating"]
    assert set(rating.terms) == {stem("film"), stem("rating")} and rating.lexical == pytest.approx(
        sum(rating.terms.values())
    )
    assert 0 < found["column:warehouse:main.films.film_id"].lexical < rating.lexical  # matches the film only
    typo = run(lexical, "fiml rating", ["table", "column"])["column:warehouse:main.films.rating"]
    assert 0 < typo.terms[stem("film")] < rating.terms[stem("film")]  # corrected, at a discount


def test_a_term_no_field_holds_is_bridged_except_for_a_wiki_only_search(lexical):
    asked: list[list[str]] = []

    def bridged(words: dict[str, str], terms: list[str]) -> dict[str, tuple[str, float]]:
        asked.append(terms)
        return {stem("movie"): (stem("film"), 0.9)}

    found = run(lexical, "movie", ["table", "column"], bridged)
    assert asked == [[stem("movie")]] and stem("film") in found["table:warehouse:main.films"].terms
    assert run(lexical, "movie", ["table", "column"]) == {}  # nothing bridged: the term matches nothing
    assert run(lexical, "movie", ["wiki"], bridged) == {} and len(asked) == 1  # a wiki-only search never bridges


def test_only_a_wiki_only_search_goes_without_the_bridge():
    assert not bridges(["wiki"]) and bridges(["wiki", "table"]) and bridges(["column"])


def test_a_wiki_only_search_does_not_correct_an_english_word(lexical):
    """Without a bridge to fall back on, a real word one edit from an indexed one (*word* → work) is another
    word: a wiki-only search leaves it unknown, where a search that bridges still corrects it."""
    assert "wiki:global:ratings" in run(lexical, "word", ["wiki", "table"])
    assert run(lexical, "word", ["wiki"]) == {}
    assert "wiki:global:ratings" in run(lexical, "wokr", ["wiki"])  # a typo is still corrected
    assert "column:warehouse:main.films.rating" in run(lexical, "film ratings", ["column"])


def test_a_wiki_only_search_reads_the_other_regional_spelling_as_the_same_word(make_project):
    files = {"wiki/global/desk.md": "The service center opens at nine.\n"}
    service = KtxIndex(make_project(files), embedder=None)
    service.rebuild()
    lexical = service.refreshed_engine().lexical
    assert "wiki:global:desk" in run(lexical, "service centre", ["wiki"])
    service.close()
