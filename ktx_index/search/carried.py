"""Whether the best answers carry every concept of a question: the per-concept evidence of signals.confidence.

A question the project cannot answer often names its entity in the project's own words and asks for an
attribute the project does not hold (*age of each patient* over a ``patient`` table without an age or birth
date). Its best score is an answer's, and no question-level figure tells it from an answerable one
(docs/benchmarks.md, twenty-fourth session). What does: leave the attribute out and the best answers match the
question *better*, since nothing among them was carrying it. So the question is embedded once more per content
word that no best answer matches by its terms, each time without that word, and a word is carried by the
answer whose cosine drops most without it. The weakest word's drop says how well the answers cover the whole
question. Each variant costs about one question's embedding, spread over both cores (QueryVectors.get_many):
+1.7 ms p50 on orbit's questions (docs/benchmarks.md, twenty-seventh session).

Not for wiki_search: one word barely moves a page's cosine, and there the drop ranks answerable questions
*below* no-answer ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ktx_index.analysis import RAW_TOKEN, STOPWORDS, question_terms
from ktx_index.search.candidate import Candidate
from ktx_index.search.query import Query
from ktx_index.search.signals import answer_order

if TYPE_CHECKING:
    from ktx_index.search.engine import Engine
    from ktx_index.snapshot.snapshot import Snapshot

#: What a word some best answer matches by its terms counts as: carried, whatever its cosine.
CARRIED = 1.0
#: At most this many words of a question are left out one by one (each costs about one question's embedding).
MOST_WORDS = 8


def left_out(text: str, carried: Callable[[str], bool] = lambda word: False, most: int = MOST_WORDS) -> list[str]:
    """The question once per content word (a word with a letter, not filler) not known to be ``carried``,
    without that word; its first ``most`` content words only."""
    out = []
    for match in RAW_TOKEN.finditer(text):
        word = match.group(0)
        if word.casefold() in STOPWORDS or not any(ch.isalpha() for ch in word) or carried(word):
            continue
        out.append(" ".join(f"{text[: match.start()]} {text[match.end() :]}".split()))
        if len(out) == most:
            break
    return out


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
    ends = np.r_[snap.chunk_starts[1:], len(snap.chunk_rows)]
    for doc in docs:
        group = int(snap.doc_group[doc])
        if group < 0:
            continue
        chunk_rows = snap.chunk_rows[snap.chunk_starts[group] : ends[group]]
        rows.append(chunk_rows)
        owners.append(np.full(len(chunk_rows), doc))
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    return np.concatenate(rows), np.concatenate(owners)


def weakest(engine: Engine, snap: Snapshot, q: Query, ranked: list[Candidate]) -> float | None:
    """``weakest_carried`` over the best answers (``Params.carried_top`` of them, in answer order). A word one
    of them matches by its terms is carried, and not embedded again: only the others are left out."""
    vector = engine.query_vector(q.text)
    top = answer_order(ranked)[: engine.params.carried_top]
    if vector is None or snap.matrix is None or not top:
        return None
    matched = {term for c in top for term, share in c.terms.items() if share > 0}
    variants = left_out(q.text, lambda word: any(t in matched for t in question_terms(word).terms))
    if not variants:
        return CARRIED
    rows, owners = answer_rows(snap, [c.idx for c in top if c.idx >= 0])
    embedded = engine.vectors.get_many(tuple(variants))
    if embedded is None or not len(rows):
        return None
    return weakest_carried(snap.matrix[rows] @ np.vstack([vector, embedded]).T, owners)
