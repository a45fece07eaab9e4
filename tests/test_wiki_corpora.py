"""The wiki-only projects (tests/benchmarks/wiki_corpora.py) judge wiki_search, so they must be sound: each reads
without a diagnostic, every judged id names one of its pages, and no two families share a project."""

import sys

import pytest
from projects import REPO, assert_sound_judged_set

sys.path.insert(0, str(REPO / "tests" / "benchmarks"))

import wiki_corpora

from indexers import load_project, read_project

CORPORA = [corpus for family in wiki_corpora.WIKI_FAMILIES for corpus in wiki_corpora.wiki_corpora(family)]


@pytest.mark.parametrize("corpus", CORPORA, ids=[name for name, *_ in CORPORA])
def test_every_project_reads_clean_and_every_judged_id_is_a_page(corpus):
    name, path, queries, _family = corpus
    read = read_project(load_project(path))
    assert read.diagnostics == [], f"{name}: {read.diagnostics}"
    pages = {f"{d.kind}:{d.connection_id or ''}:{d.id}" for d in read.documents}
    assert len(pages) >= 12 and all(page.startswith("wiki::") for page in pages)
    assert_sound_judged_set(name, queries, pages, tool="wiki_search")


def test_families_share_no_project_and_every_project_has_questions():
    families = [set(names) for names in wiki_corpora.WIKI_FAMILIES.values()]
    assert sum(len(names) for names in families) == len(set().union(*families))
    on_disk = {p.name for p in wiki_corpora.PROJECTS.iterdir() if p.is_dir()}
    assert on_disk == set(wiki_corpora.WIKI_FAMILIES["wiki-tuning"]) | set(wiki_corpora.WIKI_FAMILIES["wiki-heldout"])
    assert {p.stem for p in wiki_corpora.QUESTIONS.glob("*.yaml")} == on_disk


def test_wiki_more_is_not_what_the_model_trains_on():
    """wiki-more is held out only while the default training recipe leaves its wikis out (tests/training/more)."""
    trained = {p.name for p in (REPO / "tests" / "training" / "wikis").iterdir() if p.is_dir()}
    more = set(wiki_corpora.WIKI_FAMILIES["wiki-more"])
    assert more == {p.name for p in wiki_corpora.MORE.iterdir() if p.is_dir()} and not trained & more
