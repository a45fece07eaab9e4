"""The helper-written projects (tests/benchmarks/warehouse_corpora.py: abbreviated warehouses, whole KTX projects)
judge discover_data (and, on the KTX projects, wiki_search), so they must be sound: each reads without a
diagnostic, every judged id names something of it, and each tool has answerable and no-answer questions."""

import sys

import pytest
from projects import REPO, assert_sound_judged_set

sys.path.insert(0, str(REPO / "tests" / "benchmarks"))

import warehouse_corpora

from indexers import load_project, read_project

CORPORA = [
    corpus for family in warehouse_corpora.WAREHOUSE_FAMILIES for corpus in warehouse_corpora.warehouse_corpora(family)
]


@pytest.mark.parametrize("corpus", CORPORA, ids=[name for name, *_ in CORPORA])
def test_every_warehouse_reads_clean_and_every_judged_id_is_in_it(corpus):
    name, path, queries, family = corpus
    read = read_project(load_project(path))
    assert read.diagnostics == [], f"{name}: {read.diagnostics}"
    ids = {f"{d.kind}:{d.connection_id or ''}:{d.id}" for d in read.documents if d.kind != "dictionary_value"}
    assert sum(i.startswith("table:") for i in ids) >= 18
    assert {q.tool for q in queries} == (
        {"discover_data", "wiki_search"} if family.startswith("ktx-style") else {"discover_data"}
    )
    discover = [q for q in queries if q.tool == "discover_data"]
    assert_sound_judged_set(name, discover, ids, tool="discover_data")
    if wiki := [q for q in queries if q.tool == "wiki_search"]:
        assert sum(i.startswith("wiki::") for i in ids) >= 10
        assert_sound_judged_set(name, wiki, ids, tool="wiki_search", answerable=5, no_answer=2)


def test_every_project_on_disk_is_in_the_family_and_has_questions():
    on_disk = {p.name for p in warehouse_corpora.PROJECTS.iterdir() if p.is_dir()}
    assert on_disk == {n for names in warehouse_corpora.WAREHOUSE_FAMILIES.values() for n in names}
    assert {p.stem for p in warehouse_corpora.QUESTIONS.glob("*.yaml")} == on_disk
