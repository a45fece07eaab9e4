"""Whether the best answers carry every concept of a question: the per-concept evidence of signals.assess.

A question the project cannot answer often names its entity in the project's own words and asks for an
attribute the project does not hold (*age of each patient* over a ``patient`` table without an age or birth
date). Its best score is an answer's, and no question-level figure tells it from an answerable one
(docs/benchmarks.md, twenty-fourth session). What does: leave the attribute out and the best answers match the
question *better*, since nothing among them was carrying it. So the question is embedded once more per content
word the index lacks a term of (``absent``: a word no answer can match by every term, a misspelt or bridged one
among them), each time without that word, and a word is carried by the answer whose cosine drops most without
it. The weakest word's drop says how well the answers cover the whole question. When the best answers match
every word by its terms, the question is carried (``CARRIED``) with nothing embedded.

Each variant costs about one question's embedding, spread over both cores (QueryVectors.get_many). The words are
known before ranking: ``foreseen`` names the first variants, and discover_data starts them on the worker behind
the question's own vector, while ranking runs. Words the index holds that the best answers do not match were
embedded too until the thirty-fourth session: 1 % of the words left out on scan-only projects but a third on
KTX-style ones, where they flagged as many answerable questions low as they declined no-answer ones, for 1.5 ms
of an orbit question's ~7 via MCP. Not for wiki_search: one word barely moves a page's cosine.
docs/benchmarks.md (twenty-seventh, thirty-third and thirty-fourth sessions) has the figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ktx_index.analysis import RAW_TOKEN
from ktx_index.search.candidate import Candidate
from ktx_index.search.query import ContentWord, Query
from ktx_index.search.signals import CARRIED, answer_order
from ktx_index.snapshot.snapshot import group_rows

if TYPE_CHECKING:
    from ktx_index.index.lexical import LexicalIndex
    from ktx_index.search.engine import Engine
    from ktx_index.snapshot.snapshot import Snapshot

#: At most this many words of a question are left out one by one (each costs about one question's embedding): 4 is
#: the fewest that moves no verdict of any family from 8 (3 moves a tuning family's), and a long question in new
#: words then embeds at most five texts (docs/benchmarks.md, thirty-fourth session).
MOST_WORDS = 4
#: At most this many of them are started before ranking (``foreseen``): more would hold another question's vector
#: behind them on the worker, and a question of many unknown words is often answered with nothing, unchecked.
FORESEEN = 3


def left_out(text: str, words: list[ContentWord]) -> list[str]:
    """The question once per word of ``words``, without every occurrence of any of its spellings (in any case)."""
    tokens = [(m.group(0).casefold(), m.start(), m.end()) for m in RAW_TOKEN.finditer(text)]
    out = []
    for word in words:
        spellings = {s.casefold() for s in word.spellings}
        kept, at = [], 0
        for token, start, end in tokens:
            if token in spellings:
                kept.append(text[at:start])
                at = end
        out.append(" ".join(" ".join([*kept, text[at:]]).split()))
    return out


def absent(lexical: LexicalIndex, q: Query) -> list[ContentWord]:
    """The question's content words of which the index lacks a term (a misspelt or bridged one among them): words
    no answer can match by every term, so only the meaning can carry them. The first MOST_WORDS of them; none for a
    question of one word (without it nothing is left to compare, and every answer would seem to carry it)."""
    if len(q.words) < 2:
        return []
    return [w for w in q.words if any(lexical.doc_freq(term) == 0 for term in w.terms)][:MOST_WORDS]


def foreseen(lexical: LexicalIndex, q: Query) -> list[str]:
    """The first FORESEEN of the variants ``weakest`` will embed, known before ranking: the question without
    each ``absent`` word, in the question's order."""
    return variants(q, absent(lexical, q)[:FORESEEN])


def variants(q: Query, words: list[ContentWord]) -> list[str]:
    """The text the model embeds for the question (``Query.dense_text``) once per word, without it and the
    project's abbreviation of it."""
    shorts = dict(q.abbreviations)
    spelled = [
        w._replace(spellings=(*w.spellings, *(shorts[s.lower()] for s in w.spellings if s.lower() in shorts)))
        for w in words
    ]
    return left_out(q.dense_text, spelled)


def weakest_carried(cosines: np.ndarray, owners: np.ndarray) -> float | None:
    """The drop of the least-carried word: per word, how far the best answers' cosine falls when the question
    loses it, at the answer that carries it most; the smallest of those (negative: without the word, every
    answer matches better). None without words or answers.

    ``cosines`` holds one row per chunk of the best answers and one column for the whole question, then one per
    ``left_out`` variant; ``owners`` says which answer each row belongs to (an answer's cosine is its best
    chunk's)."""
    if cosines.ndim != 2 or cosines.shape[1] < 2 or not len(cosines):
        return None
    per_answer = np.stack([cosines[owners == owner].max(axis=0) for owner in np.unique(owners)])
    drops = per_answer[:, :1] - per_answer[:, 1:]  # answers x words
    return float(drops.max(axis=0).min())


def answer_rows(snap: Snapshot, docs: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """The matrix rows of the given documents' chunks, and which document each row belongs to (documents
    without a vector have none)."""
    rows, owners = [], []
    for doc in docs:
        group = int(snap.doc_group[doc])
        if group >= 0:
            chunk_rows = group_rows(snap, group)
            rows.append(chunk_rows)
            owners.append(np.full(len(chunk_rows), doc))
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(owners)


def weakest(engine: Engine, snap: Snapshot, q: Query, ranked: list[Candidate]) -> float | None:
    """``weakest_carried`` over the best answers (``Params.carried_top`` of them, in the fused order the
    confidence rule reads) for the ``absent`` words; CARRIED when the answers match every content word by its
    terms; None when there is nothing to measure (no vectors, no content word, no answer with a vector, or only
    words the index holds that the answers do not match: those are not embedded, and the level stands)."""
    if snap.matrix is None or not len(snap.matrix) or snap.doc_group is None:
        return None
    top = answer_order(ranked)[: engine.params.carried_top]
    docs = [i for c in top if (i := snap.uid_index.get(c.uid, -1)) >= 0]  # ``snap``'s positions: a commit may race
    rows, owners = answer_rows(snap, docs)
    if not len(rows) or not q.words:
        return None
    matched = {term for c in top for term, share in c.terms.items() if share > 0}
    if all(set(w.terms) <= matched for w in q.words):
        return CARRIED
    words = absent(engine.lexical, q)
    if not words:
        return None
    vector = engine.query_vector(q.dense_text)
    without = engine.query_vectors.get_many(tuple(variants(q, words))) if vector is not None else None
    if without is None:
        return None
    return weakest_carried(snap.matrix[rows] @ np.vstack([vector, without]).T, owners)
