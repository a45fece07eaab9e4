"""The judged-question scorer: pure metrics, the ids a result stands for, and aggregation."""

import math

import pytest

from ktx_index.evaluation.judged import JudgedQuery
from ktx_index.evaluation.metrics import aggregate, evaluate, match_id, metrics, ref_ids, score
from ktx_index.tools.results import DictionaryMatch, DiscoverRef, TableRefOut

T = "table:wh:main.orders"
C = "column:wh:main.orders.status"


def test_perfect_ranking_scores_one():
    got = metrics([[T], [C]], {T: 2, C: 1})
    assert (got.mrr, got.ndcg, got.recall, got.table_recall) == (1.0, 1.0, 1.0, 1.0)


def test_rank_of_first_hit_and_graded_gain():
    got = metrics([["x"], ["y"], [C], [T]], {T: 2, C: 1})
    assert got.mrr == pytest.approx(1 / 3)
    ideal = 3 / math.log2(2) + 1 / math.log2(3)
    assert got.ndcg == pytest.approx((1 / math.log2(4) + 3 / math.log2(5)) / ideal)
    assert got.recall == 1.0 and got.table_recall == 1.0


def test_only_the_top_k_count():
    returned = [[f"other{i}"] for i in range(10)] + [[T]]
    got = metrics(returned, {T: 2})
    assert (got.mrr, got.ndcg, got.recall, got.table_recall) == (0.0, 0.0, 0.0, 0.0)
    assert metrics(returned, {T: 2}, k=11).recall == 1.0


def test_a_merged_ref_earns_each_id_once_and_ndcg_is_capped():
    source = ["sl_source:wh:orders", T]
    got = metrics([source, [T]], {"sl_source:wh:orders": 2, T: 2})
    assert got.recall == 1.0 and got.ndcg == 1.0 and got.table_recall == 1.0
    # the same id returned twice is credited once
    assert metrics([[C], [C]], {C: 1, T: 2}).recall == 0.5


def test_no_answer_questions_want_nothing_back():
    assert metrics([], {}).model_dump() == {"mrr": 1.0, "ndcg": 1.0, "recall": 1.0, "table_recall": None}
    assert metrics([["anything"]], {}).ndcg == 0.0


def test_table_recall_ignores_columns():
    got = metrics([[C]], {T: 2, C: 1, "table:wh:main.items": 2})
    assert got.recall == pytest.approx(1 / 3) and got.table_recall == 0.0
    assert metrics([[C]], {C: 1}).table_recall is None


def test_ref_ids_name_the_scanned_twin():
    table = TableRefOut(catalog=None, db="main", name="orders")
    common = {"score": 0.9, "summary": None, "snippet": None, "matchedOn": "name"}
    source = DiscoverRef(kind="sl_source", id="orders", connectionId="wh", tableRef=table, **common)
    assert ref_ids(source) == ["sl_source:wh:orders", T]
    dim = DiscoverRef(
        kind="sl_dimension", id="orders.status", connectionId="wh", tableRef=table, columnName="status", **common
    )
    assert ref_ids(dim) == ["sl_dimension:wh:orders.status", C]
    page = DiscoverRef(kind="wiki", id="revenue", **common)
    assert ref_ids(page) == ["wiki::revenue"]


def test_match_id_prefers_the_qualified_table():
    common = {"connectionId": "wh", "columnName": "status", "matchedValue": "paid", "cardinality": 3}
    qualified = DictionaryMatch(
        sourceName="orders", tableRef=TableRefOut(catalog=None, db="main", name="orders"), **common
    )
    assert match_id(qualified) == "wh:main.orders.status"
    assert match_id(DictionaryMatch(sourceName="orders", **common)) == "wh:orders.status"


def test_score_lists_misses_best_grade_first_and_what_came():
    q = JudgedQuery(id="q", query="orders", relevant={C: 1, T: 2, "table:wh:main.items": 2})
    result = score(q, [["x", "y"], [C]], ms=1.5)
    assert result.missed == ["table:wh:main.items", T]
    assert result.returned == ["x", C] and result.is_miss
    assert not score(JudgedQuery(id="n", query="weather", relevant={}), [], 0.0).is_miss
    assert score(JudgedQuery(id="n", query="weather", relevant={}), [["x"]], 0.0).is_miss


def test_evaluate_groups_per_tool_type_and_tag():
    queries = [
        JudgedQuery(id="a", query="orders", type="exact", tags=["sales"], relevant={T: 2}),
        JudgedQuery(id="b", query="status", type="paraphrase", tags=["sales", "ops"], relevant={C: 1}),
        JudgedQuery(id="c", tool="wiki_search", query="revenue", relevant=["wiki::revenue"]),
    ]
    answers = {"a": [[T]], "b": [["x"], [C]], "c": [["wiki::other"]]}
    ticks = iter(range(100))
    report = evaluate(queries, lambda q: answers[q.id], clock=lambda: next(ticks) / 1000)
    assert [q.ms for q in report.queries] == [1.0, 1.0, 1.0]
    keys = [(g.tool, g.by, g.name, g.n) for g in report.groups]
    assert keys == [
        ("discover_data", "all", "all", 2),
        ("discover_data", "type", "exact", 1),
        ("discover_data", "type", "paraphrase", 1),
        ("discover_data", "tag", "ops", 1),
        ("discover_data", "tag", "sales", 2),
        ("wiki_search", "all", "all", 1),
    ]
    overall = report.group("discover_data")
    assert overall.mrr == 0.75 and overall.recall == 1.0 and overall.table_recall == 1.0
    assert report.group("discover_data", "tag", "ops").table_recall is None
    assert report.group("wiki_search").mrr == 0.0
    assert [q.id for q in report.misses] == ["c"]
    assert aggregate([]) == []
