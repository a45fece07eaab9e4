"""The abbreviated warehouses (tests/benchmarks/warehouse_corpora.py) judge discover_data on legacy names, so they
must be sound: each reads without a diagnostic, every judged id names a table or column of it, and each has
answerable and no-answer questions."""

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
    name, path, queries, _family = corpus
    read = read_project(load_project(path))
    assert read.diagnostics == [], f"{name}: {read.diagnostics}"
    ids = {f"{d.kind}:{d.connection_id or ''}:{d.id}" for d in read.documents if d.kind in ("table", "column")}
    assert sum(i.startswith("table:") for i in ids) >= 18
    assert_sound_judged_set(name, queries, ids, tool="discover_data")


def test_every_project_on_disk_is_in_the_family_and_has_questions():
    on_disk = {p.name for p in warehouse_corpora.PROJECTS.iterdir() if p.is_dir()}
    assert on_disk == {n for names in warehouse_corpora.WAREHOUSE_FAMILIES.values() for n in names}
    assert {p.stem for p in warehouse_corpora.QUESTIONS.glob("*.yaml")} == on_disk
