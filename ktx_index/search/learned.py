"""The learned order: a LambdaMART model re-weighs the pipeline's best candidates.

Why: the declared pipeline (lanes, fusion, lifts) was built by hand on a few KTX-style projects. A model trained on
what the stages said about each candidate, over three tuning families — the judged KTX-style projects, the bird-dev
databases (text-to-SQL questions) and training databases asked in business language (24 judged ones, and 21 more
whose questions only train it) — orders them better on projects it never saw: leave one project out on each family,
and on the held-out projects of both question styles (docs/benchmarks.md). It ships as ``weights/ranker.json``,
trained by ``tests/training/train_ranker.py`` and run by ``trees.py``.

The order is a blend of the two scores, each standardised over the candidates: ``(1 - w)·z(pipeline) +
w·z(ranker)``, ``w`` being ``Params.ranker_weight``: the model re-weighs, the pipeline still has its say. How the
question is written is among the ranker's features (``style_features``): until the business family was there to
train on, a separate gate on those features kept business questions in the pipeline's order; trained on them, the
ranker helps those too and reads the style itself. Scores keep the pipeline's scale: the blended order hands out
the same scores, best to the first (``steps["learned"]`` says by how much each moved), so confidence, the answer's
cut and every caller read them as before. ``Params.ranker`` names the model file ("" for none).

A project with a hand-written semantic layer (``snapshot.curated``: a measure is defined) is ordered by a second model,
``Params.curated_ranker`` (``weights/ranker-curated.json``): on such projects the answers are curated sources,
measures and dimensions beside their scanned copies, and a model trained mostly on scan-only databases helped
them little (on one family of new KTX projects it lost to the pipeline's order). It trains on the same bird-dev
and business questions plus two families of curated projects, four families weighed equally
(``train_ranker.py --curated``); scan-only projects keep ``ranker`` and every figure of theirs. Held out, curated
projects gain 0.02 to 0.03 nDCG@10 and none loses (docs/benchmarks.md, forty-first session).
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from ktx_index.analysis import STOPWORDS
from ktx_index.search.candidate import Candidate
from ktx_index.search.lifts import STAGES
from ktx_index.search.query import Query
from ktx_index.search.scoring import PARAMS, Params
from ktx_index.search.trees import Trees
from ktx_index.snapshot.snapshot import Snapshot, curated

WEIGHTS = Path(__file__).resolve().parent / "weights"
RANKER_FILE = WEIGHTS / PARAMS.ranker  # the shipped model, which train_ranker.py writes
#: How many of the pipeline's best candidates the ranker re-weighs (what it was trained on).
TOP = 60
KINDS = ("wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column")
#: The steps whose contributions the models are trained on (tests/training/train_ranker.py) and read: lifts.STAGES
#: but ``measure_inputs`` (forty-fourth session), which reaches them through the scores. The curated model trained
#: with it as a feature of its own gained on the held-out families and lost on two it trains on, each left out
#: (docs/benchmarks.md, forty-sixth session).
LEARNED_STEPS = tuple(stage for stage in STAGES if stage != "measure_inputs")
#: Words a text-to-SQL question tends to open with.
LEADS = frozenset(
    "list find give show what which how among calculate count name provide state tell return identify please who "
    "when where is are do does in".split()
)
_WORD = re.compile(r"[A-Za-z']+")


def style_features(query: Query) -> dict[str, float]:
    """How the question is written, nothing about the project: the grades differ by style (a text-to-SQL
    question wants the tables its SQL joins, a business one the column that carries its concept), and these
    let the ranker tell the two apart."""
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


def candidate_features(query: Query, ranked: list[Candidate]) -> dict[str, np.ndarray]:
    """What the pipeline knows of each candidate (best first), for the ranker, one column per feature: its
    lanes, fused score, each structural step, its kind, its rank and its gaps to the best; and how the question
    is written (the same for every candidate). Columns, not rows: this runs on every discover_data call."""
    n = len(ranked)
    score = np.array([c.score for c in ranked])
    lexical = np.array([c.lexical for c in ranked])
    cosine = np.array([c.cosine or 0.0 for c in ranked])
    kinds = [c.uid.split(":", 1)[0] for c in ranked]
    best = score[0] if n else 0.0
    columns = {
        "score": score,
        "rel_score": score / best if best else np.zeros(n),
        "rank": np.arange(n, dtype=np.float64),
        "lexical": lexical,
        "cosine": cosine,
        "cos_gap": cosine - (cosine.max() if n else 0.0),
        "lex_gap": lexical - (lexical.max() if n else 0.0),
        "exact": np.array([float(c.exact) for c in ranked]),
        "fused": np.array([c.fused for c in ranked]),
        "terms": np.full(n, float(len(query.terms))),
        "matched": np.array([float(len(c.terms)) for c in ranked]),
    }
    columns |= {f"kind_{k}": np.array([float(kind == k) for kind in kinds]) for k in KINDS}
    columns |= {f"step_{s}": np.array([c.steps.get(s, 0.0) for c in ranked]) for s in LEARNED_STEPS}
    columns |= {name: np.full(n, value) for name, value in style_features(query).items()}
    return columns


def matrix(columns: dict[str, np.ndarray], names: list[str]) -> np.ndarray:
    """The features as the model reads them: one row per candidate, columns in ``names`` order."""
    return np.column_stack([columns[name] for name in names]).astype(np.float64, copy=False)


def standardised(values: np.ndarray) -> np.ndarray:
    spread = values.std()
    return (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)


def blend(pipeline: np.ndarray, learned: np.ndarray, weight: float = PARAMS.ranker_weight) -> np.ndarray:
    """The order's key: the two scores standardised, the ranker weighed ``weight`` (pure, for tests)."""
    return (1.0 - weight) * standardised(pipeline) + weight * standardised(learned)


def ranker_name(snap: Snapshot, p: Params = PARAMS) -> str:
    """Which model orders answers on this project: ``Params.curated_ranker`` for one with a hand-written semantic
    layer (``curated``) when that model is there, else ``Params.ranker``."""
    if p.curated_ranker and curated(snap) and model(p.curated_ranker) is not None:
        return p.curated_ranker
    return p.ranker


@functools.cache
def model(name: str = PARAMS.ranker) -> Trees | None:
    """The model ``Params.ranker`` names (search/trees.py), loaded once per process; None for "" or when the file
    is absent (a source tree before train_ranker.py ran), and then the pipeline's order stands."""
    path = WEIGHTS / name
    return Trees.load(path) if name and path.is_file() else None


@functools.cache
def fingerprint(name: str = PARAMS.ranker) -> str | None:
    """Which learned order a process runs: the sha256 of its model file (first 12 hex digits), shown by ``status``
    so a retrained ranker is visible; None without one. The model changes only the order of what the index
    returns, never the index, so a new one needs no rebuild."""
    if model(name) is None:
        return None
    return f"learned-order@{hashlib.sha256((WEIGHTS / name).read_bytes()).hexdigest()[:12]}"


def learned_order(
    query: Query, ranked: list[Candidate], ranker: Trees | None, weight: float = PARAMS.ranker_weight
) -> list[Candidate]:
    """``ranked`` with its best ``TOP`` re-ordered by the blend with ``ranker``'s scores (weighed ``weight``),
    handed the same scores best first; the rest unchanged (all of it without a model). A candidate whose score
    moves comes back as a copy: ``ranked`` itself is left as the pipeline scored it, so the confidence rule can
    read it after the answer is ordered (discover_data orders it while the carried check's embeddings run)."""
    head = ranked[:TOP]
    if ranker is None or len(head) < 2:
        return ranked
    rows = matrix(candidate_features(query, head), ranker.features)
    pipeline = np.array([c.score for c in head])
    key = blend(pipeline, np.asarray(ranker.predict(rows)), weight)
    out = [head[i] for i in sorted(range(len(head)), key=lambda i: (-key[i], i))]
    for at, (cand, score) in enumerate(zip(out, sorted(pipeline.tolist(), reverse=True), strict=True)):
        if score != cand.score:
            out[at] = replace(cand, score=score, steps={**cand.steps, "learned": score - cand.score})
    return out + ranked[len(head) :]
