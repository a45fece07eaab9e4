"""The three searches over the demo project (real stores, fake embedder)."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import InvalidInput, NotFound
from ktx_index.search.engine import Engine


def ids(result):
    return [(r.kind, r.id) for r in result.refs]


def test_exact_identifier_ranks_first_with_top_tier_score(demo_service):
    for query, expected in [
        ("courier_weekly_scorecard", ("sl_source", "courier_weekly_scorecard")),
        ("Courier Weekly Scorecard", ("sl_source", "courier_weekly_scorecard")),
        ("raw.depots", ("sl_source", "depots")),
        ("fiscal-calendar", ("wiki", "fiscal-calendar")),
    ]:
        refs = demo_service.discover_data(query).refs
        assert (refs[0].kind, refs[0].id) == expected, query
        assert refs[0].score >= 0.9


def test_scores_are_bounded_sorted_and_snippets_short(demo_service):
    refs = demo_service.discover_data("refund reasons for damaged boxes", limit=50).refs
    assert refs
    scores = [r.score for r in refs]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert all(r.snippet is None or len(r.snippet.replace("<mark>", "").replace("</mark>", "")) <= 200 for r in refs)
    assert any("<mark>" in (r.snippet or "") for r in refs)


def test_nonsense_query_returns_nothing_or_says_it_is_unsure(demo_service):
    # the fake embedder's cosines are hash collisions, so the noise calibration cannot tell nonsense from a
    # weak match here; with the real model it returns nothing (test_quality_floor.py)
    found = demo_service.discover_data("zxqv blorp frobnicate")
    assert found.refs == [] or found.confidence == "low"
    pages = demo_service.wiki_search("zxqv blorp frobnicate")
    assert pages.results == [] or pages.confidence == "low"
    assert demo_service.discover_data("   ").refs == []


def test_a_confident_answer_carries_no_confidence_field(demo_service):
    found = demo_service.discover_data("delivery status")
    assert found.refs and found.confidence is None
    assert "confidence" not in found.model_dump(exclude_none=False)


def test_sl_source_and_scanned_table_are_one_ref_carrying_the_table_ref(demo_service):
    refs = demo_service.discover_data("depots", connection_id="warehouse", limit=20).refs
    physical = [r for r in refs if r.kind in ("sl_source", "table") and r.id in ("depots", "raw.depots")]
    assert len(physical) == 1
    assert physical[0].kind == "sl_source" and physical[0].tableRef is not None
    assert physical[0].tableRef.db == "raw" and physical[0].tableRef.name == "depots"
    only_tables = demo_service.discover_data("depots", connection_id="warehouse", kinds=["table"]).refs
    assert only_tables[0].kind == "table" and only_tables[0].id == "raw.depots"


def test_kinds_and_connection_filters(demo_service):
    refs = demo_service.discover_data("delivery status", kinds="column".split(), connection_id="warehouse").refs
    assert refs and all(r.kind == "column" and r.connectionId == "warehouse" for r in refs)
    refs = demo_service.discover_data("delivery status", connection_id="dbt", limit=30).refs
    assert all(r.connectionId in (None, "dbt") for r in refs)
    with pytest.raises(NotFound, match="Configured connections: dbt, warehouse"):
        demo_service.discover_data("x", connection_id="nope")
    with pytest.raises(InvalidInput, match="use any of"):
        demo_service.discover_data("x", kinds=["tables"])
    assert len(demo_service.discover_data("orders", limit=500).refs) <= 50


def test_typo_in_identifier_still_finds_it(demo_service):
    refs = demo_service.discover_data("weekly_box_capacty").refs
    assert any(r.id.endswith("weekly_box_capacity") for r in refs[:3])


def test_wiki_search_user_page_shadows_global_and_total_found(demo_service):
    result = demo_service.wiki_search("active subscriber definition", limit=1)
    assert result.results[0].key == "active-subscriber-definition"
    assert result.results[0].scope == "USER"
    assert result.totalFound >= len(result.results)
    keys = [r.key for r in demo_service.wiki_search("active subscriber definition", limit=50).results]
    assert keys.count("active-subscriber-definition") == 1
    lanes = {lane.lane: lane for lane in result.results[0].lanes}
    assert lanes["lexical"].status == "available" and lanes["semantic"].status == "available"


def test_wiki_lane_breakdown_rides_on_the_first_result_only(demo_service):
    results = demo_service.wiki_search("refund policy", limit=5).results
    assert len(results) > 1 and results[0].lanes
    assert all(r.lanes is None and "lanes" not in r.model_dump() for r in results[1:])


def test_dictionary_tiers_and_tolerance(demo_service):
    result = demo_service.dictionary_search(
        ["family_4", "FAMILY_4", "family 4", "famly_4", "Montreal", "nothing-like-it"]
    )
    by_value = {r.value: r for r in result.results}
    exact = [
        ((m.tableRef.db, m.tableRef.name), m.columnName) for m in by_value["family_4"].matches if m.matchType == "exact"
    ]
    assert (("raw", "subscriptions"), "plan_tier") in exact
    assert all(m.matchType == "exact" for m in by_value["family_4"].matches[: len(exact)])
    assert by_value["FAMILY_4"].matches[0].matchType == "folded"
    assert by_value["family 4"].matches[0].matchType == "token"
    assert by_value["famly_4"].matches[0].matchType == "fuzzy"
    montreal = by_value["Montreal"].matches[0]
    assert montreal.matchedValue == "Montréal" and montreal.matchType == "folded"
    assert by_value["nothing-like-it"].matches == []
    assert {m.reason for m in by_value["nothing-like-it"].misses} <= {"value_not_in_sample", "no_profile_artifact"}
    searched = {s.connectionId: s for s in result.searched}
    assert searched["warehouse"].status == "ready" and searched["warehouse"].coverage.profiledColumns > 0


def test_dictionary_search_validates_inputs(demo_service):
    with pytest.raises(InvalidInput):
        demo_service.dictionary_search([])
    with pytest.raises(InvalidInput, match="at most 20"):
        demo_service.dictionary_search(["a"] * 21)
    with pytest.raises(NotFound, match="Configured connections: dbt, warehouse"):
        demo_service.dictionary_search(["a"], "nope")


def test_reads_hydrate_refs(demo_service):
    page = demo_service.wiki_read("global/fiscal-calendar")
    assert page.scope == "GLOBAL" and page.content
    assert demo_service.wiki_read("active-subscriber-definition").scope == "USER"
    source = demo_service.sl_read_source("warehouse", "courier_weekly_scorecard")
    assert "sql:" in source.yaml
    details = demo_service.entity_details("warehouse", [{"table": "raw.depots", "columns": ["city"]}]).results[0]
    assert details.ok and details.columns[0].sampleValues and details.columns[0].distinctCount is not None


class Flaky(HashEmbedder):
    broken = False

    def encode(self, texts):
        if self.broken:
            raise RuntimeError("model gone")
        return super().encode(texts)


def test_query_vectors_are_cached_per_engine_thread_safe_and_failures_retried(demo_service):
    embedder = Flaky()
    engine = Engine(demo_service.layout, embedder)
    first = engine.query_vector("weekly churn")
    assert engine.query_vector("weekly churn") is first and embedder.calls == 1
    with pytest.raises(ValueError):
        first[0] = 1.0  # one array handed to every thread: read-only
    embedder.broken = True
    assert engine.query_vector("refunds") is None and "model gone" in engine.model_error
    embedder.broken = False
    assert engine.query_vector("refunds") is not None and engine.model_error is None  # the failure was not cached
    queries = [f"question {i}" for i in range(600)]  # more than the cache holds: evictions while threads read
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(engine.query_vector, queries * 2))
    assert all(v is not None and v.shape == (embedder.dim,) for v in vectors)
    assert (vectors[0] == embedder.encode(["question 0"])[0]).all()
    engine.close()


def test_abbreviations_reach_stored_codes():
    from ktx_index.tools.dictionary import abbreviates

    assert abbreviates("APAC", ["asia", "pacific"]) and abbreviates("EMEA", ["europe", "middle", "east", "africa"])
    assert abbreviates("CAD", ["canadian", "dollars"]) and abbreviates("VT", ["vermont"])
    assert abbreviates("apac", ["asia", "pacific"]) and not abbreviates("vet", ["vermont"])
    assert not abbreviates("ON", ["quebec"]) and not abbreviates("CA", ["new", "hampshire"])


def test_dictionary_finds_a_code_from_the_name_a_person_writes(demo_service):
    result = demo_service.dictionary_search(["Vermont", "Canadian dollars"])
    vermont, dollars = result.results
    assert {(m.columnName, m.matchedValue, m.matchType) for m in vermont.matches} >= {
        ("province_state", "VT", "abbreviation")
    }
    assert any(m.columnName == "currency" and m.matchedValue == "CAD" for m in dollars.matches)
