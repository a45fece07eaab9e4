"""Would a learned ranker beat the declared pipeline? LambdaMART over the stages' features, judged held out.

    python tests/benchmarks/learned_ranker.py [--work /tmp/ktx-index-quality] [--top 60] [--seed 7]

Run quality.py first (with ``--only heldout-sql,heldout-business`` too): it builds the indexes this reads. Per
judged answerable discover_data question, the pipeline's best ``--top`` candidates become rows of features
(their lanes, the fused score, what each structural step added, their kind, their rank and gaps to the best);
their grades are the labels. A LightGBM LambdaMART model (fixed seed) is trained on the two tuning families —
the judged KTX-style projects and the bird-dev databases, each family weighed equally — and scored two ways:
leave one project out within them, and trained on all of them then scored on the held-out families of
tests/benchmarks/heldout.py (projects no model or constant has seen). Both are compared with the pipeline's own
order of the same candidates. The product ships a learned ranker only if it wins on every family held out.
nDCG@10 here is over candidates (twins not merged), so it sits beside, not on, quality.py's figures.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import lightgbm
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from heldout import heldout_corpora  # noqa: E402
from quality import DEFAULT_CORPORA, JUDGED_TABLE, judged_corpora  # noqa: E402

from indexers.models import SEARCH_KINDS  # noqa: E402
from ktx_index.search.lifts import STAGES  # noqa: E402
from ktx_index.search.query import Query  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

TUNING = ("judged", "bird-dev")
KINDS = ("wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column")


def judged_id(uid: str) -> str:
    return f"wiki::{uid.split(':', 2)[2]}" if uid.startswith("wiki:") else uid


def questions(work: Path) -> list[tuple[str, str, str, object]]:
    """(family, group, project, question) for every answerable judged discover_data question with an index."""
    out = []
    for name, table, queries in judged_corpora(DEFAULT_CORPORA):
        family = "judged" if table == JUDGED_TABLE else table
        for q in queries:
            if q.tool == "discover_data" and q.relevant and (work / name / ".ktx").is_dir():
                out.append((family, f"bird/{q.tags[0]}" if name == "bird-dev" else name, name, q))
    for name, _path, queries, family in heldout_corpora(work / "heldout"):
        for q in queries:
            if q.tool == "discover_data" and q.relevant and (work / name / ".ktx").is_dir():
                out.append((family, name, name, q))
    return out


def features(service: KtxIndex, q, top: int) -> tuple[list[dict[str, float]], list[int]]:
    engine = service.ensure_index()
    query = Query.parse(q.text)
    ranked = engine.rank(query, list(q.kinds or SEARCH_KINDS), q.connection)[:top]
    if not ranked:
        return [], []
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
                "fused": c.score - sum(c.steps.values()),
                "terms": float(len(query.terms)),
                "matched": float(len(c.terms)),
                **{f"kind_{k}": float(kind == k) for k in KINDS},
                **{f"step_{s}": c.steps.get(s, 0.0) for s in STAGES},
            }
        )
    return rows, [q.relevant.get(judged_id(c.uid), 0) for c in ranked]


def ndcg(grades: list[int], ideal: list[int], k: int = 10) -> float:
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(grades[:k]))
    best = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(sorted(ideal, reverse=True)[:k]))
    return dcg / best if best else 0.0


def train(cases: list[dict], names: list[str], seed: int) -> lightgbm.Booster:
    per_family: dict[str, int] = defaultdict(int)
    for case in cases:
        per_family[case["family"]] += 1
    x = np.vstack([case["x"] for case in cases])
    y = np.concatenate([case["y"] for case in cases])
    weight = np.concatenate([np.full(len(case["y"]), 1.0 / per_family[case["family"]]) for case in cases])
    data = lightgbm.Dataset(x, label=y, group=[len(case["y"]) for case in cases], weight=weight, feature_name=names)
    params = {
        "objective": "lambdarank",
        "learning_rate": 0.05,
        "num_leaves": 15,
        "min_data_in_leaf": 50,
        "feature_fraction": 0.8,
        "bagging_fraction": 0.8,
        "bagging_freq": 1,
        "lambdarank_truncation_level": 20,
        "seed": seed,
        "deterministic": True,
        "num_threads": 1,
        "verbose": -1,
    }
    return lightgbm.train(params, data, num_boost_round=200)


def scores(cases: list[dict], order) -> dict[str, float]:
    out: dict[str, list[float]] = defaultdict(list)
    for case in cases:
        ranking = np.argsort(-np.asarray(order(case)), kind="stable")
        out[case["family"]].append(ndcg([int(case["y"][i]) for i in ranking], case["ideal"]))
    return {family: statistics.mean(values) for family, values in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="quality.py's work folder")
    parser.add_argument("--top", type=int, default=60, help="candidates per question the ranker reorders")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    services: dict[str, KtxIndex] = {}
    cases = []
    names: list[str] = []
    for family, group, project, q in questions(args.work):
        service = services.get(project) or services.setdefault(project, KtxIndex(args.work / project))
        rows, grades = features(service, q, args.top)
        if rows:
            names = names or sorted(rows[0])
            x = np.array([[row[n] for n in names] for row in rows], dtype=np.float32)
            cases.append(
                {"family": family, "group": group, "x": x, "y": np.array(grades), "ideal": list(q.relevant.values())}
            )
    for service in services.values():
        service.close()
    tuning = [c for c in cases if c["family"] in TUNING]
    held = [c for c in cases if c["family"] not in TUNING]
    pipeline = scores(cases, lambda c: c["x"][:, names.index("score")])
    cross: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for group in sorted({c["group"] for c in tuning}):
        model = train([c for c in tuning if c["group"] != group], names, args.seed)
        test = [c for c in tuning if c["group"] == group]
        for family, value in scores(test, lambda c, m=model: m.predict(c["x"])).items():
            cross[family].append((value, len(test)))
    learned = {f: sum(v * n for v, n in rows) / sum(n for _, n in rows) for f, rows in cross.items()}
    final = train(tuning, names, args.seed)
    learned |= scores(held, lambda c: final.predict(c["x"]))
    print(f"{'family':<20} {'questions':>9}  {'pipeline':>8}  {'learned':>8}  {'gain':>7}  how held out")
    for family in sorted(pipeline):
        n = sum(c["family"] == family for c in cases)
        how = "leave one project out" if family in TUNING else "trained on the tuning families"
        gain = learned[family] - pipeline[family]
        print(f"{family:<20} {n:>9}  {pipeline[family]:8.3f}  {learned[family]:8.3f}  {gain:+7.3f}  {how}")


if __name__ == "__main__":
    main()
