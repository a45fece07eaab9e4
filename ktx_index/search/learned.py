"""The learned order: a LambdaMART model re-weighs the pipeline's best candidates when a question reads like SQL.

Why: the declared pipeline (lanes, fusion, lifts) was built on KTX-style business questions. On text-to-SQL
questions ("List the names of ... whose ... is greater than 3") a model trained on what the stages said about
each candidate orders them better on databases it never saw (leave one database out on bird-dev, and on the 40
held-out text-to-SQL projects); on business questions it does not, and there the pipeline keeps its order.
So two models ship (``weights/``, trained by ``tests/training/train_ranker.py``, run by ``trees.py``):

* a *gate*: a small classifier on how the question is written (length, leading word, digits, capitals...),
  trained to tell bird-dev's questions from the judged KTX-style ones; its probability ``p`` says how SQL-like
  the question reads;
* a *ranker*: LambdaMART over each candidate's lanes, fused score, structural steps, kind and rank.

The order is a blend of the two scores, each standardised over the candidates: ``(1 - w)·z(pipeline) +
w·z(ranker)`` with ``w = BLEND·p``. A business question (``p`` near 0) keeps the pipeline's order. Scores keep
the pipeline's scale: the blended order hands out the same scores, best to the first (``steps["learned"]``
says by how much each moved), so confidence, the answer's cut and every caller read them as before.
docs/ranking.md and docs/benchmarks.md give the figures.
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import numpy as np

from ktx_index.analysis import STOPWORDS
from ktx_index.search.candidate import Candidate
from ktx_index.search.lifts import STAGES
from ktx_index.search.query import Query
from ktx_index.search.trees import Trees

WEIGHTS = Path(__file__).resolve().parent / "weights"
RANKER_FILE, GATE_FILE = WEIGHTS / "ranker.json", WEIGHTS / "gate.json"
#: How many of the pipeline's best candidates the ranker re-weighs (what it was trained on).
TOP = 60
#: The ranker's weight at a gate probability of 1 (chosen leave one project out on the tuning families).
BLEND = 0.5
KINDS = ("wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column")
#: Words a text-to-SQL question tends to open with.
LEADS = frozenset(
    "list find give show what which how among calculate count name provide state tell return identify please who "
    "when where is are do does in".split()
)
_WORD = re.compile(r"[A-Za-z']+")


def style_features(query: Query) -> dict[str, float]:
    """How the question is written, for the gate: nothing about the project."""
    words = _WORD.findall(query.text)
    return {
        "q_caps": float(sum(w[0].isupper() for w in words[1:])),
        "q_digits": float(any(ch.isdigit() for ch in query.text)),
        "q_lead": float(bool(words) and words[0].lower() in LEADS),
        "q_mark": float("?" in query.text),
        "q_stop": sum(w.lower() in STOPWORDS for w in words) / max(1, len(words)),
        "q_values": float(len(query.values)),
        "q_words": float(len(words)),
    }


def candidate_features(query: Query, ranked: list[Candidate]) -> list[dict[str, float]]:
    """What the pipeline knows of each candidate (best first), for the ranker: its lanes, fused score, each
    structural step, its kind, its rank and its gaps to the best."""
    if not ranked:
        return []
    best, best_cos = ranked[0].score, max(c.cosine or 0.0 for c in ranked)
    best_lex = max(c.lexical for c in ranked)
    rows = []
    for rank, c in enumerate(ranked):
        kind = c.uid.split(":", 1)[0]
        rows.append(
            {
                "score": c.score,
                "rel_score": c.score / best if best else 0.0,
                "rank": float(rank),
                "lexical": c.lexical,
                "cosine": c.cosine or 0.0,
                "cos_gap": (c.cosine or 0.0) - best_cos,
                "lex_gap": c.lexical - best_lex,
                "exact": float(c.exact),
                "fused": c.fused,
                "terms": float(len(query.terms)),
                "matched": float(len(c.terms)),
                **{f"kind_{k}": float(kind == k) for k in KINDS},
                **{f"step_{s}": c.steps.get(s, 0.0) for s in STAGES},
            }
        )
    return rows


def matrix(rows: list[dict[str, float]], names: list[str]) -> np.ndarray:
    return np.array([[row[n] for n in names] for row in rows], dtype=np.float64)


def standardised(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


def blend(pipeline: np.ndarray, learned: np.ndarray, gate: float) -> np.ndarray:
    """The order's key: the two scores standardised, the ranker weighed ``BLEND·gate`` (pure, for tests)."""
    weight = min(1.0, BLEND * gate)
    return (1.0 - weight) * standardised(pipeline) + weight * standardised(learned)


@functools.cache
def models() -> tuple[Trees, Trees] | None:
    """The shipped gate and ranker (search/trees.py), loaded once per process; None when the files are absent
    (a source tree before train_ranker.py ran), and then the pipeline's order stands."""
    if not (RANKER_FILE.is_file() and GATE_FILE.is_file()):
        return None
    return Trees.load(GATE_FILE), Trees.load(RANKER_FILE)


@functools.cache
def fingerprint() -> str | None:
    """Which learned order this process runs: the sha256 of the two shipped model files (first 12 hex digits),
    shown by ``status`` so a retrained ranker is visible; None when the files are absent. The models change
    only the order of what the index returns, never the index, so a new one needs no rebuild."""
    if models() is None:
        return None
    digest = hashlib.sha256(GATE_FILE.read_bytes() + b"\0" + RANKER_FILE.read_bytes())
    return f"learned-order@{digest.hexdigest()[:12]}"


def sql_likeness(gate: Trees, query: Query) -> float:
    """The gate's probability that ``query`` is written like a text-to-SQL question."""
    style = style_features(query)
    return float(gate.predict(np.array([[style[n] for n in gate.features]]))[0])


def learned_order(query: Query, ranked: list[Candidate]) -> list[Candidate]:
    """``ranked`` with its best ``TOP`` re-ordered by the blend, handed the same scores best first; the rest
    unchanged."""
    loaded = models()
    head = ranked[:TOP]
    if loaded is None or len(head) < 2:
        return ranked
    gate, ranker = loaded
    p = sql_likeness(gate, query)
    if BLEND * p < 0.01:
        return ranked
    rows = matrix(candidate_features(query, head), ranker.features)
    pipeline = np.array([c.score for c in head])
    key = blend(pipeline, np.asarray(ranker.predict(rows)), p)
    out = [head[i] for i in sorted(range(len(head)), key=lambda i: (-key[i], i))]
    for cand, score in zip(out, sorted(pipeline.tolist(), reverse=True), strict=True):
        if score != cand.score:
            cand.steps["learned"] = score - cand.score
            cand.score = score
    return out + ranked[len(head) :]
