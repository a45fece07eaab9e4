"""The wiki pages that answer a question, and how sure that is: wiki_search's ranking (tools/wiki.py shapes it).

Ranking looks at the best ``pool`` candidates per lane (search/scoring.py); when a lane could hold more matching
pages than that (counted cheaply: tantivy posting lists for the lexical lane, each page's best chunk cosine for the
dense one, which is at least the blend of its two best chunks the lane ranks by, so the count errs towards ranking
again), the pages are ranked again with a pool as large as the matches, so ``totalFound`` is exact. That second
pass costs only on queries that match more than ``pool`` pages.

With a ``connection_id``, KTX's rule applies: pages whose frontmatter lists no ``connections`` plus pages that list
this one.
"""

from __future__ import annotations

import numpy as np

from indexers.models import SEARCH_KINDS
from ktx_index.search.candidate import Candidate
from ktx_index.search.engine import Engine
from ktx_index.search.lexical_lane import bridges, searched_term
from ktx_index.search.query import Query
from ktx_index.search.signals import Verdict, assess
from ktx_index.snapshot.snapshot import Snapshot, group_rows

WIKI = SEARCH_KINDS.index("wiki")


def matching_pages(
    engine: Engine, query: Query, connection_id: str | None = None
) -> tuple[list[Candidate], Verdict, int]:
    """Every page that scored (applicable to the connection when one is given), best first, how sure the ranking is
    that the wiki answers the question (signals.assess over those pages alone, calibrated on the wiki's vectors:
    ``none`` when no page matches, or when every page that does is tagged with other connections), and the
    candidate pool each lane was given (``Params.pool``, or every page when a lane could have filled it)."""
    snap = engine.snapshot
    pages = int(np.count_nonzero(snap.doc_kind == WIKI))
    ranked = engine.rank(query, ["wiki"])
    seen = _visible(snap, ranked, connection_id)
    if any(c.score > 0 for c in ranked) and not any(c.score > 0 for c in seen):
        verdict = Verdict("none", f"every page that matches is tagged with connections other than '{connection_id}'")
        return [], verdict, engine.params.pool
    verdict = assess(
        engine.lexical, query, seen, "wiki_search", lambda: wiki_noise(engine, snap, query), engine.params,
        bridging=bridges(["wiki"]),
    )  # fmt: skip
    pool = engine.params.pool
    if verdict.level == "none":
        return [], verdict, pool
    if pages > pool and _pool_may_be_full(engine, snap, query):
        pool = pages
        seen = _visible(snap, engine.rank(query, ["wiki"], pool=pool), connection_id)
    return [c for c in seen if c.score > 0], verdict, pool


def wiki_noise(engine: Engine, snap: Snapshot, query: Query) -> float | None:
    """The question's noise level over the wiki's own vectors (search/calibration.py): pages alone, not the whole
    project."""
    return engine.noise(snap, query, _wiki_vectors(snap)[0], "noise_wiki")


def _visible(snap: Snapshot, ranked: list[Candidate], connection_id: str | None) -> list[Candidate]:
    """The pages a connection sees (KTX's rule): all of them without one, else those its frontmatter leaves
    untagged or tags with it."""
    if connection_id is None:
        return ranked
    return [c for c in ranked if not (tagged := snap.wiki_connections.get(c.uid)) or connection_id in tagged]


def _pool_may_be_full(engine: Engine, snap: Snapshot, query: Query) -> bool:
    """Could a lane have matched more than ``pool`` pages (so ranking saw only part of them)?"""
    lexical, p = engine.lexical, engine.params
    for term in query.terms:
        term = searched_term(lexical, query, term, bridges(["wiki"]))  # as the lane reads it: no bridge
        if term and lexical.count([term], ["wiki"]) >= p.pool:
            return True
    vector = engine.query_vector(query.text) if snap.matrix is not None and len(snap.matrix) else None
    if vector is None:
        return False
    matrix, starts = _wiki_vectors(snap)
    if not len(starts):
        return False
    best = np.maximum.reduceat(matrix @ vector, starts)
    return int(np.count_nonzero(best > p.cos_low)) >= p.pool


def _wiki_vectors(snap: Snapshot) -> tuple[np.ndarray, np.ndarray]:
    """The wiki pages' chunk vectors (one matrix, pages' chunks contiguous) and each page's first row;
    gathered once per snapshot, so counting dense matches costs one small product per query."""
    cached = snap.derived.get("wiki_vectors")
    if cached is None:
        groups = np.flatnonzero(snap.doc_kind[snap.chunk_docs] == WIKI) if snap.chunk_docs is not None else []
        rows, starts = [], []
        for g in groups:
            starts.append(len(rows))
            rows.extend(group_rows(snap, int(g)))
        matrix = snap.matrix[np.array(rows, dtype=np.int64)] if rows else np.zeros((0, 1), dtype=np.float32)
        cached = snap.derived["wiki_vectors"] = (matrix, np.array(starts, dtype=np.int64))
    return cached  # type: ignore[return-value]
