"""Naive baselines over ktx-index's own index, for the quality benchmark: plain BM25 and plain MiniLM cosine.

Same documents, same tokeniser, same vectors as ktx-index; only the ranking is naive (one BM25 OR-query
over every field; the best-chunk cosine alone), with no floor, so they show what the ranking adds.
"""

from __future__ import annotations

import numpy as np

from indexers.models import SEARCH_KINDS
from ktx_index.analysis import query_terms
from ktx_index.evaluation.judged import JudgedQuery
from ktx_index.evaluation.metrics import K, Returned, Runner
from ktx_index.service import KtxIndex


def judged_id(uid: str) -> str:
    """A document uid as the judged sets name it (wiki pages are ``wiki::<key>`` whatever their scope)."""
    return f"wiki::{uid.split(':', 2)[2]}" if uid.startswith("wiki:") else uid


def _kinds(q: JudgedQuery) -> list[str]:
    return ["wiki"] if q.tool == "wiki_search" else list(q.kinds or SEARCH_KINDS)


def bm25_runner(service: KtxIndex) -> Runner:
    engine = service.ensure_index()

    def run(q: JudgedQuery) -> Returned:
        if q.tool == "dictionary_search":
            return []
        return [[judged_id(hit.uid)] for hit in engine.lexical.search(query_terms(q.text), _kinds(q), q.connection, K)]

    return run


def cosine_runner(service: KtxIndex) -> Runner:
    engine = service.ensure_index()

    def run(q: JudgedQuery) -> Returned:
        snap = engine.snapshot
        vector = engine.query_vector(q.text)
        if q.tool == "dictionary_search" or vector is None or snap.matrix is None or not len(snap.matrix):
            return []
        per_chunk = (snap.matrix @ vector)[snap.chunk_rows]
        per_doc = np.maximum.reduceat(per_chunk, snap.chunk_starts)
        wanted = {SEARCH_KINDS.index(k) for k in _kinds(q)}
        order = np.argsort(-per_doc)
        out = []
        for group in order:
            idx = int(snap.chunk_docs[group])
            if int(snap.doc_kind[idx]) in wanted:
                out.append([judged_id(snap.doc_uids[idx])])
                if len(out) == K:
                    break
        return out

    return run
