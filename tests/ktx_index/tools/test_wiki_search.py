"""wiki_search: USER pages shadow GLOBAL ones, the lane breakdown, true counts beyond the candidate pool, and
KTX's connection scoping of pages."""

from __future__ import annotations

import pytest

from ktx_index.analysis import RAW_TOKEN
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import NotFound
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex


def _page(i: int, word: str, connections: str = "") -> str:
    front = f"summary: Page {i} about a topic numbered {i}\n" + (f"connections: {connections}\n" if connections else "")
    return f"---\n{front}---\nSection {i} on {word} and the plain topic {i}.\n"


def test_total_found_counts_every_match_beyond_the_pool(make_project):
    """A lane that could fill its pool is ranked again over every page, and the lanes say so (the effective pool was
    reported as the requested one)."""
    files = {f"wiki/global/page-{i:03d}.md": _page(i, "glimmerquartz") for i in range(200)}
    files.update({f"wiki/global/other-{i:03d}.md": _page(i, "basalt") for i in range(30)})
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    result = service.wiki_search("glimmerquartz", limit=5)
    assert PARAMS.pool < 200 and result.totalFound == 200
    assert len(result.results) == 5 and all(r.key.startswith("page-") for r in result.results)
    lanes = result.results[0].lanes or []
    assert {(lane.requestedCandidatePoolLimit, lane.effectiveCandidatePoolLimit) for lane in lanes} == {
        (PARAMS.pool, 230)
    }
    basalt = service.wiki_search("basalt")
    assert basalt.totalFound == 30  # under the pool: the first ranking is complete
    assert {lane.effectiveCandidatePoolLimit for lane in basalt.results[0].lanes or []} == {PARAMS.pool}
    service.close()


def test_explain_gives_every_page_its_lane_scores_and_the_verdict_its_reason(make_project):
    files = {f"wiki/global/page-{i:03d}.md": _page(i, "glimmerquartz") for i in range(3)}
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    explained = service.wiki_search("glimmerquartz", explain=True)
    assert all(r.laneScores is not None and r.laneScores.lexical > 0 for r in explained.results)
    assert explained.confidenceReason and "best score" in explained.confidenceReason
    plain = service.wiki_search("glimmerquartz").model_dump()
    assert "confidenceReason" not in plain and all("laneScores" not in r for r in plain["results"])
    service.close()


def test_total_found_is_true_on_a_lexical_only_index(make_project):
    files = {f"wiki/global/page-{i:03d}.md": _page(i, "glimmerquartz") for i in range(150)}
    service = KtxIndex(make_project(files), embedder=None)
    service.rebuild()
    assert service.wiki_search("glimmerquartz").totalFound == 150
    assert service.wiki_search("glimmerquarz").totalFound == 150  # a typo is corrected, then counted the same
    service.close()


def test_connection_id_keeps_unscoped_pages_and_pages_tagged_with_it(make_project):
    files = {
        "wiki/global/unscoped.md": _page(1, "refund"),
        "wiki/global/tagged-warehouse.md": _page(2, "refund", "warehouse"),
        "wiki/global/tagged-both.md": _page(3, "refund", "[warehouse, crm]"),
        "wiki/global/tagged-crm.md": _page(4, "refund", "crm"),
    }
    config = "connections:\n  warehouse:\n    driver: postgres\n  crm:\n    driver: postgres\n"
    service = KtxIndex(make_project(files, config), embedder=HashEmbedder())
    service.rebuild()
    keys = lambda conn: sorted(r.key for r in service.wiki_search("refund", connection_id=conn).results)  # noqa: E731
    assert keys(None) == ["tagged-both", "tagged-crm", "tagged-warehouse", "unscoped"]
    assert keys("warehouse") == ["tagged-both", "tagged-warehouse", "unscoped"]
    assert keys("crm") == ["tagged-both", "tagged-crm", "unscoped"]
    assert service.wiki_search("refund", connection_id="warehouse").totalFound == 3
    try:
        service.wiki_search("refund", connection_id="nope")
    except NotFound as exc:
        assert "warehouse" in str(exc)
    else:
        raise AssertionError("an unknown connection id is an error naming the known ones")
    service.close()


def test_a_connection_only_pages_name_is_accepted(make_project):
    files = {"wiki/global/legacy.md": _page(1, "refund", "legacy-dw"), "wiki/global/plain.md": _page(2, "refund")}
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    assert sorted(r.key for r in service.wiki_search("refund", connection_id="legacy-dw").results) == [
        "legacy",
        "plain",
    ]
    assert [r.key for r in service.wiki_search("refund", connection_id="warehouse").results] == ["plain"]
    with pytest.raises(NotFound, match=r"Configured connections: warehouse\. Wiki pages also name: legacy-dw\."):
        service.wiki_search("refund", connection_id="nope")
    service.close()


def test_the_verdict_reads_only_the_pages_the_connection_sees(make_project):
    files = {
        "wiki/global/legacy.md": _page(1, "refund escalation matrix", "legacy-dw"),
        "wiki/global/plain.md": _page(2, "shipping matrix"),
        "wiki/global/other.md": _page(3, "basalt"),
    }
    config = "connections:\n  warehouse:\n    driver: postgres\n  crm:\n    driver: postgres\n"
    service = KtxIndex(make_project(files, config), embedder=None)
    service.rebuild()
    question = "refund escalation matrix"
    seen = service.wiki_search(question, connection_id="legacy-dw", explain=True)
    assert [r.key for r in seen.results][:1] == ["legacy"] and "confident alone" in (seen.confidenceReason or "")
    # the one page that answers is another connection's: the shipping page alone is no answer
    hidden = service.wiki_search(question, connection_id="warehouse", explain=True)
    assert hidden.results == [] and hidden.totalFound == 0 and hidden.confidence is None
    assert "beyond chance" in (hidden.confidenceReason or "")
    only = service.wiki_search("refund escalation", connection_id="crm", explain=True)
    assert only.results == [] and "tagged with connections other than 'crm'" in (only.confidenceReason or "")
    service.close()


def test_warming_the_reader_analyses_every_section_once(demo_service):
    from ktx_index.analysis import term_set

    term_set.cache_clear()
    demo_service.warm_reader()
    sections = [s.text for d in demo_service.refreshed_engine().store.docs.iter(kinds=["wiki"]) for s in d.sections]
    assert sections
    misses = term_set.cache_info().misses
    for text in sections:
        term_set(text)
    assert term_set.cache_info().misses == misses  # all already analysed: snippets start warm
    for word in RAW_TOKEN.findall(sections[0]):
        term_set(word)
    assert term_set.cache_info().misses == misses  # and their words, which snippets cut and highlight one by one


def test_pages_are_read_once_per_snapshot_and_again_after_a_commit(make_project):
    root = make_project({"wiki/global/refunds.md": _page(1, "refund"), "wiki/global/other.md": _page(2, "refund")})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    store, read = service.ensure_index().store, []
    get_many = store.docs.get_many
    store.docs.get_many = lambda uids: read.extend(uids) or get_many(uids)  # type: ignore[method-assign]
    first = service.wiki_search("refund")
    assert service.wiki_search("refund topic") and len(read) == len(first.results)  # the second search read nothing
    (root / "wiki/global/refunds.md").write_text(_page(1, "refund").replace("Page 1 about", "Rewritten page about"))
    service.rebuild()
    summaries = [r.summary for r in service.wiki_search("refund").results]
    assert any(s.startswith("Rewritten page about") for s in summaries)  # a commit's pages are read anew
    service.close()


def test_the_first_result_says_how_each_lane_ran(make_project):
    files = {f"wiki/global/page-{i:03d}.md": _page(i, "glimmerquartz") for i in range(3)}
    service = KtxIndex(make_project(files), embedder=None)
    service.rebuild()
    first, *rest = service.wiki_search("glimmerquartz").results
    lanes = {lane.lane: lane for lane in first.lanes or []}
    assert list(lanes) == ["lexical", "semantic", "exact"] and all(r.lanes is None for r in rest)
    assert lanes["lexical"].returnedCandidateCount == 3 and lanes["exact"].returnedCandidateCount == 0
    assert lanes["lexical"].status == "available" and lanes["semantic"].status != "available"
    assert lanes["semantic"].reason and lanes["lexical"].reason is None  # only a lane that did not run says why
    assert {lane.requestedCandidatePoolLimit for lane in lanes.values()} == {PARAMS.pool}
    service.close()


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


@pytest.mark.model
def test_an_answer_with_no_page_carries_no_confidence(real_demo_service):
    """Nothing found is its own verdict: `confidence: "low"` rides on pages found, and came with none ("the
    weather" over the demo's wiki, the real model)."""
    result = real_demo_service.wiki_search("the weather")
    assert result.results == [] and result.confidence is None
