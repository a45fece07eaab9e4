"""wiki_search: pages ranked by the same fused score, one result per key (USER shadows GLOBAL)."""

from __future__ import annotations

from ktx_index.analysis import query_terms
from ktx_index.search import scoring
from ktx_index.search.engine import POOL, Engine
from ktx_index.search.models import WikiLane, WikiResult, WikiSearchResult
from ktx_index.search.signals import answerable
from ktx_index.search.snippets import snippet

MAX_LIMIT = 50


def wiki_search(engine: Engine, query: str, limit: int = 10) -> WikiSearchResult:
    limit = max(1, min(int(limit), MAX_LIMIT))
    if not query.strip():
        return WikiSearchResult(results=[], totalFound=0)
    ranked = engine.rank(query, ["wiki"])
    if not answerable(engine.lexical, query, ranked, "wiki_search"):
        ranked = []
    ranked = [c for c in ranked if scoring.passes_floor(c.score)]
    docs = engine.store.get_many([c.uid for c in ranked[:limit]])
    terms = set(query_terms(query))
    status, reason = engine.semantic_status()
    lanes = [
        WikiLane(
            lane="lexical",
            status="available",
            requestedCandidatePoolLimit=POOL,
            effectiveCandidatePoolLimit=POOL,
            returnedCandidateCount=sum(1 for c in ranked if c.lexical > 0),
            weight=scoring.LEXICAL_WEIGHT,
        ),
        WikiLane(
            lane="semantic",
            status=status,  # type: ignore[arg-type]
            requestedCandidatePoolLimit=POOL,
            effectiveCandidatePoolLimit=POOL,
            returnedCandidateCount=sum(1 for c in ranked if (c.semantic or 0) > 0),
            weight=scoring.SEMANTIC_WEIGHT,
            reason=reason,
        ),
        WikiLane(
            lane="exact",
            status="available",
            requestedCandidatePoolLimit=POOL,
            effectiveCandidatePoolLimit=POOL,
            returnedCandidateCount=sum(1 for c in ranked if c.exact),
            weight=1.0,
        ),
    ]
    results = []
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
                lanes=lanes,
                snippet=snippet(doc, "body", terms),
            )
        )
    return WikiSearchResult(results=results, totalFound=len(ranked))
