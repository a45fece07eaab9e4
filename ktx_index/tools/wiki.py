"""wiki_search: pages ranked by the same fused score, one result per key (USER shadows GLOBAL).

``totalFound`` is the number of pages that scored at all (matched the question's words, or its meaning above
``cos_low``), however many, counted exactly (search/pages.py): no floor trims the answer, and unlike discover's
(signals.answer_order) it does not go on with pages that scored nothing.

The lane breakdown is the same for every result of a query, so only the first result carries it
(KTX repeats it on each: 40 % of a ten-page answer, and ~2 ms of an MCP client's schema validation).

With a ``connection_id``, KTX's rule applies (search/pages.py): pages whose frontmatter lists no ``connections``
plus pages that list this one.
"""

from __future__ import annotations

from ktx_index.search.engine import Engine
from ktx_index.search.pages import matching_pages
from ktx_index.search.query import Query
from ktx_index.search.snippets import snippet
from ktx_index.tools.results import MAX_RESULTS, LaneScores, WikiLane, WikiResult, WikiSearchResult


def wiki_search(
    engine: Engine, query: str, limit: int = 10, connection_id: str | None = None, explain: bool = False
) -> WikiSearchResult:
    """``explain`` adds each page's lane scores and the confidence verdict's reason (never over MCP)."""
    limit = max(1, min(int(limit), MAX_RESULTS))
    q = Query.parse(query)
    ranked, verdict, pool = matching_pages(engine, q, connection_id)
    docs = engine.documents([c.uid for c in ranked[:limit]])
    terms = set(q.terms)
    status, reason = engine.semantic_status()
    p = engine.params
    lanes = [
        WikiLane(
            lane=lane, status=lane_status, requestedCandidatePoolLimit=p.pool, effectiveCandidatePoolLimit=pool,
            returnedCandidateCount=count, weight=weight, reason=why,
        )
        for lane, lane_status, why, count, weight in (
            ("lexical", "available", None, sum(1 for c in ranked if c.lexical > 0), p.lexical_weight),
            ("semantic", status, reason, sum(1 for c in ranked if (c.semantic or 0) > 0), p.semantic_weight),
            ("exact", "available", None, sum(1 for c in ranked if c.exact), 1.0),
        )
    ]  # fmt: skip
    stale = engine.stale()
    results: list[WikiResult] = []
    for cand in ranked[:limit]:
        doc = docs.get(cand.uid)
        if doc is None:
            continue
        reasons = [
            lane
            for lane, hit in (
                ("exact", cand.exact),
                ("lexical", cand.lexical > 0),
                ("semantic", (cand.semantic or 0) > 0),
            )
            if hit
        ]
        results.append(
            WikiResult(
                key=doc.id,
                path=doc.path,
                scope=doc.attrs.get("scope", "GLOBAL"),
                summary=doc.summary or "",
                score=round(cand.score, 4),
                matchReasons=reasons,
                lanes=None if results else lanes,
                snippet=snippet(doc, "body", terms),
                stale=stale.get(doc.uid),
                laneScores=LaneScores.of(cand) if explain else None,
            )
        )
    return WikiSearchResult(
        results=results,
        totalFound=len(ranked),
        confidence="low" if verdict.level == "low" and results else None,  # nothing found needs no doubt
        confidenceReason=verdict.reason if explain else None,
    )
