"""search/pages.py alone: the pages that answer a question, the connection rule, and the exact count past the pool."""

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.pages import matching_pages
from ktx_index.search.query import Query
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex

CONFIG = "connections:\n  warehouse:\n    driver: postgres\n  crm:\n    driver: postgres\n"


def page(summary: str, body: str, connections: str = "") -> str:
    tagged = f"connections: [{connections}]\n" if connections else ""
    return f"---\nsummary: {summary}\n{tagged}---\n{body}\n"


def test_a_connection_sees_untagged_pages_and_its_own_and_nothing_when_only_others_match(make_project):
    files = {
        "wiki/global/churn.md": page("Churn", "Churn counts cancelled accounts.", "crm"),
        "wiki/global/refunds.md": page("Refunds", "Refunds are issued within 30 days.", "warehouse"),
        "wiki/global/glossary.md": page("Glossary", "Refunds and churn, defined."),
    }
    service = KtxIndex(make_project(files, config=CONFIG), embedder=HashEmbedder())
    service.rebuild()
    engine = service.refreshed_engine()
    pages, verdict, pool = matching_pages(engine, Query.parse("refunds"), "warehouse")
    assert {c.uid.rsplit(":", 1)[-1] for c in pages} <= {"refunds", "glossary"} and pages and pool == PARAMS.pool
    only_others, verdict, _ = matching_pages(engine, Query.parse("cancelled accounts"), "warehouse")
    assert only_others == [] and verdict.level == "none" and "tagged with connections other than" in verdict.reason
    service.close()


def test_a_lane_that_could_fill_its_pool_ranks_every_page_again(make_project):
    files = {f"wiki/global/p{i:03d}.md": page(f"Page {i}", f"About glimmerquartz, part {i}.") for i in range(120)}
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    pages, _verdict, pool = matching_pages(service.refreshed_engine(), Query.parse("glimmerquartz"))
    assert PARAMS.pool < 120 and pool == 120 and len(pages) == 120
    service.close()
