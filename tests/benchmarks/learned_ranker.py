"""The learned order held out: the shipped recipe (ktx_index/search/learned.py) scored leave one project out.

    python tests/benchmarks/learned_ranker.py [--work /tmp/ktx-index-quality] [--seeds 7,11,23]
    python tests/benchmarks/learned_ranker.py --end-to-end [--work /tmp/ktx-index-quality]
    python tests/benchmarks/learned_ranker.py --end-to-end --question-folds 5
    python tests/benchmarks/learned_ranker.py --held-out [--seeds 7,11,23]
    python tests/benchmarks/learned_ranker.py --curated [--seeds 7,11,23]
    python tests/benchmarks/learned_ranker.py --end-to-end --ranker-weight 0.5   # any mode: another blend weight

Run quality.py first (with ``--only tuning-business,heldout-sql,heldout-business`` too): it builds the indexes
this reads. The shipped model is trained on the three tuning families (judged KTX-style projects, bird-dev
databases, tuning-business training databases, with train_ranker.py's EXTRA_BUSINESS questions, which train
every model here and are never scored), so quality.py's figures for those are in-sample. Here, per
project of theirs (a bird-dev database counts as one), the ranker is trained by tests/training/train_ranker.py's
own functions on every other project and scored on that one; the held-out families (tests/benchmarks/heldout.py)
are scored with a model trained on all of the tuning families. Each is compared with the pipeline's own order
of the same candidates, two ways: the shipped blend and the ranker alone. nDCG@10 is over candidates (twins not
merged), so it sits beside, not on, quality.py's figures.

``--end-to-end`` scores it as quality.py does instead (``discover_data`` through the service: twins merged, the
confidence rule, no-answer questions), every project in the order of the model under test (demo and orbit too,
which quality.py orders with the curated projects' model, ``--curated`` below): each tuning project with the pipeline's order alone (``Params.ranker``
"") and with a ranker trained without it (once per seed of ``--seeds``), per family. With ``--question-folds K`` the questions are
left out instead of the projects: each question with a ranker trained on the other folds' questions, its own
project's included. That is the case of a new question on a project the model was tuned on (the shipped model
and a user's question on orbit, say), between leave one project out and in-sample.

``--curated`` scores the model of curated projects (``Params.curated_ranker``, train_ranker.py ``--curated``) as
quality.py does: each project it trains on (demo, orbit, the helper-written KTX projects) with the curated recipe
and the shipped recipe both trained without it, and the families neither trains on (ktx-style-2, -4, -5 and -6),
against the pipeline's order alone.

``--held-out`` scores the families no ranker trains on (heldout-sql, heldout-business, validation-business) as
quality.py does, with a ranker trained on all the tuning families once per seed: one seed's figure moves by about
±0.003 per family (one no-answer question is 0.005 of heldout-business), as much as most changes measured, so a
change to the ranker or to what it reads is judged on every seed, each against the same seed before it.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import sys
import tempfile
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parents[1] / "tests" / "training"):
    sys.path.insert(0, str(extra))

from heldout import VALIDATION_FAMILY, heldout_corpora, training_corpora  # noqa: E402
from train_ranker import (  # noqa: E402
    TUNING,
    Case,
    curated_cases,
    curated_projects,
    feature_names,
    group_of,
    indexed_cases,
    trained_trees,
    tuning_cases,
    tuning_projects,
)
from warehouse_corpora import warehouse_corpora  # noqa: E402

from ktx_index.evaluation.judged import JudgedQuery  # noqa: E402
from ktx_index.evaluation.metrics import QueryResult, dcg, evaluate_index  # noqa: E402
from ktx_index.search import learned  # noqa: E402
from ktx_index.search.scoring import PARAMS  # noqa: E402
from ktx_index.search.trees import Trees  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402


def heldout_cases(work: Path, names: list[str]) -> list[Case]:
    projects = [
        (name, family, work / name, queries) for name, _path, queries, family in heldout_corpora(work / "heldout")
    ]
    return indexed_cases(projects, names)


def discover_results(
    index: Path, asked: list[JudgedQuery], ranker: str, weight: float = PARAMS.ranker_weight
) -> list[QueryResult]:
    """The questions scored as quality.py scores them, on the index at ``index``, in the order ``ranker`` gives
    (``Params.ranker``: a model file, or "" for the pipeline's order alone) blended with weight ``weight``, whether
    the project is curated or not (``Params.curated_ranker`` is not read)."""
    params = dataclasses.replace(PARAMS, ranker=ranker, curated_ranker="", ranker_weight=weight)
    service = KtxIndex(index, params=params)
    try:
        return evaluate_index(service, asked).queries
    finally:
        service.close()


def ndcg(grades: list[int], ideal: list[int]) -> float:
    best = dcg([2**g - 1 for g in sorted(ideal, reverse=True)])
    return dcg([2**g - 1 for g in grades]) / best if best else 0.0


def orders(c: Case, names: list[str], ranker: Trees, weight: float) -> dict[str, np.ndarray]:
    pipeline, scores = c.x[:, names.index("score")], np.asarray(ranker.predict(c.x))
    return {"pipeline": pipeline, "blend": learned.blend(pipeline, scores, weight), "ranker": scores}


def evaluate(
    tuning: list[Case], held: list[Case], names: list[str], seed: int, weight: float
) -> dict[str, dict[str, float]]:
    """family → way → mean nDCG@10, tuning families leave one project out (the scored ones: EXTRA_BUSINESS's
    questions train every model)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))

    def score(cases: list[Case], rest: list[Case]) -> None:
        ranker = trained_trees(rest, names, seed)
        for c in cases:
            for way, key in orders(c, names, ranker, weight).items():
                ranking = np.argsort(-key, kind="stable")
                out[c.family][way].append(ndcg([int(c.y[i]) for i in ranking], c.ideal))

    for group in sorted({c.group for c in tuning if c.scored}):
        score([c for c in tuning if c.group == group], [c for c in tuning if c.group != group])
    score(held, tuning)
    return {family: {way: statistics.mean(v) for way, v in ways.items()} for family, ways in out.items()}


def fold_of(group: str, text: str, folds: int) -> int:
    """A question's fold (``--question-folds``): fixed by its project and text, the same on every run."""
    return zlib.crc32(f"{group}\0{text}".encode()) % folds


def end_to_end(
    work: Path,
    names: list[str],
    cases: list[Case],
    seed: int = 7,
    folds: int = 0,
    weight: float = PARAMS.ranker_weight,
) -> dict[str, dict[str, list[float]]]:
    """family → order → per-question nDCG@10 of discover_data as quality.py scores it, each tuning project
    (a bird-dev database) with the pipeline's order alone and with a ranker trained on every other project's
    ``cases`` (tuning_cases), or with ``folds``, each question with a ranker trained on the other folds'."""
    if folds:
        left_out: list[Callable[[str, str], bool]] = [
            lambda group, text, k=k: fold_of(group, text, folds) == k for k in range(folds)
        ]
    else:  # the projects scored here (not EXTRA_BUSINESS's, which train every fold and are never scored)
        groups = sorted({c.group for c in cases if c.scored})
        left_out = [lambda group, _text, g=g: group == g for g in groups]
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as tmp:
        for k, leaves_out in enumerate(left_out):
            model = Path(tmp) / f"{k}.json"
            rest = [c for c in cases if not c.scored or not leaves_out(c.group, c.text)]
            trained_trees(rest, names, seed).save(model)
            for name, family, path, queries in tuning_projects(work):
                asked = [q for q in queries if q.tool == "discover_data" and leaves_out(group_of(name, q), q.text)]
                if not asked or not (path / ".ktx").is_dir():
                    continue
                for order, ranker in (("pipeline", ""), ("learned", str(model))):
                    out[family][order] += [r.ndcg for r in discover_results(path, asked, ranker, weight)]
    return out


def held_out(
    work: Path, names: list[str], seeds: list[int], weight: float = PARAMS.ranker_weight
) -> dict[str, dict[int, tuple[float, float]]]:
    """family → seed → (per-project mean nDCG@10 of discover_data over all its questions, pooled nDCG@10 of its
    answerable ones), as quality.py scores them, with a ranker trained on every tuning family with that seed."""
    projects = heldout_corpora(work / "heldout") + training_corpora(work / "tuning", VALIDATION_FAMILY)
    cases = tuning_cases(work, names)
    out: dict[str, dict[int, tuple[float, float]]] = defaultdict(dict)
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            model = Path(tmp) / f"{seed}.json"
            trained_trees(cases, names, seed).save(model)
            per_project: dict[str, list[float]] = defaultdict(list)
            answerable: dict[str, list[float]] = defaultdict(list)
            for name, _path, queries, family in projects:
                asked = [q for q in queries if q.tool == "discover_data"]
                if not asked or not (work / name / ".ktx").is_dir():
                    continue
                results = discover_results(work / name, asked, str(model), weight)
                per_project[family].append(statistics.mean(r.ndcg for r in results))
                answerable[family] += [r.ndcg for r, q in zip(results, asked, strict=True) if q.relevant]
            for family, means in per_project.items():
                out[family][seed] = (statistics.mean(means), statistics.mean(answerable[family]))
    return out


#: The families of curated projects no model trains on: the curated model's held-out check.
CURATED_HELD_OUT = ("ktx-style-2", "ktx-style-4", "ktx-style-5", "ktx-style-6")


def curated(work: Path, names: list[str], seeds: list[int]) -> dict[str, dict[str, list[float]]]:
    """family → order → per-question nDCG@10 of discover_data on the curated projects, as quality.py scores them:
    each of ``curated_projects`` with the curated recipe trained without it, against the shipped recipe's model
    (``ranker``) trained without it too and the pipeline's order alone; the ``CURATED_HELD_OUT`` families with both
    recipes trained on everything. Once per seed, the lists holding every seed's questions."""
    recipes = {"shipped recipe": tuning_cases(work, names), "curated": curated_cases(work, names)}
    projects = [
        (name, "judged" if family == "curated-judged" else name.split("/")[0], path, queries)
        for name, family, path, queries in curated_projects(work)
    ]
    for family in CURATED_HELD_OUT:
        projects += [(name, family, work / name, queries) for name, _path, queries, _f in warehouse_corpora(family)]
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, family, path, queries) in enumerate(projects):
            asked = [q for q in queries if q.tool == "discover_data"]
            out[family]["pipeline"] += [r.ndcg for r in discover_results(path, asked, "")] * len(seeds)
            held = family in CURATED_HELD_OUT  # trained on everything: one model per seed and recipe serves them all
            for seed, (order, cases) in itertools.product(seeds, recipes.items()):
                model = Path(tmp) / f"{'all' if held else k}-{seed}-{order}.json"
                if not model.exists():
                    trained_trees([c for c in cases if c.group != name], names, seed).save(model)
                out[family][order] += [r.ndcg for r in discover_results(path, asked, str(model))]
    return out


def print_curated(work: Path, names: list[str], seeds: list[int]) -> None:
    results = curated(work, names, seeds)
    orders = ("pipeline", "shipped recipe", "curated")
    print(f"{'family':<18} {'n':>4}  " + "  ".join(f"{o:>14}" for o in orders) + f"   (seeds {seeds})")
    for family, by_order in results.items():
        n = len(by_order["curated"]) // len(seeds)
        how = "  (held out)" if family in CURATED_HELD_OUT else "  (each project left out)"
        cells = "  ".join(f"{statistics.mean(by_order[o]):14.4f}" for o in orders)
        print(f"{family:<18} {n:>4}  {cells}{how}")


def print_held_out(work: Path, names: list[str], seeds: list[int], weight: float) -> None:
    results = held_out(work, names, seeds, weight)
    print(f"{'family':<20} {'seed':>5}  {'all (per project)':>17}  {'answerable':>10}")
    for family, by_seed in sorted(results.items()):
        for seed, (everything, answered) in sorted(by_seed.items()):
            print(f"{family:<20} {seed:>5}  {everything:17.4f}  {answered:10.4f}")
        print(
            f"{family:<20} {'mean':>5}  {statistics.mean(v[0] for v in by_seed.values()):17.4f}  "
            f"{statistics.mean(v[1] for v in by_seed.values()):10.4f}"
        )


def print_end_to_end(work: Path, names: list[str], folds: int, seeds: list[int], weight: float) -> None:
    how = f"each of {folds} question folds left out" if folds else "each project left out"
    cases = tuning_cases(work, names)
    for seed in seeds:
        results = end_to_end(work, names, cases, seed=seed, folds=folds, weight=weight)
        print(f"{'family':<18} {'n':>4}  {'pipeline':>8}  {'learned':>8}  {'gain':>7}   ({how}, seed {seed})")
        for family, orders in sorted(results.items()):
            base, mine = statistics.mean(orders["pipeline"]), statistics.mean(orders["learned"])
            print(f"{family:<18} {len(orders['learned']):>4}  {base:8.4f}  {mine:8.4f}  {mine - base:+7.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="quality.py's work folder")
    parser.add_argument("--seeds", default="7,11,23", help="training seeds, comma-separated (7 ships)")
    parser.add_argument("--end-to-end", action="store_true", help="score as quality.py does (each seed)")
    parser.add_argument("--question-folds", type=int, default=0, help="with --end-to-end: leave questions out")
    parser.add_argument("--held-out", action="store_true", help="the families no ranker trains on, per seed")
    parser.add_argument("--curated", action="store_true", help="the curated projects' model against the shipped one")
    parser.add_argument(
        "--ranker-weight", type=float, default=PARAMS.ranker_weight, help="the blend's weight (Params.ranker_weight)"
    )
    args = parser.parse_args()
    names, seeds = feature_names(), [int(s) for s in args.seeds.split(",")]
    if args.held_out:
        print_held_out(args.work, names, seeds, args.ranker_weight)
        return
    if args.curated:
        print_curated(args.work, names, seeds)
        return
    if args.end_to_end:
        print_end_to_end(args.work, names, args.question_folds, seeds, args.ranker_weight)
        return
    tuning, held = tuning_cases(args.work, names), heldout_cases(args.work, names)
    runs = [evaluate(tuning, held, names, seed, args.ranker_weight) for seed in seeds]
    print(f"{'family':<18} {'n':>4}  {'pipeline':>8}  {'blend (ships)':>15}  {'ranker alone':>14}")
    for family in sorted(runs[0]):
        n = sum(c.family == family and c.scored for c in tuning + held)
        base = runs[0][family]["pipeline"]
        cells = []
        for way in ("blend", "ranker"):
            gains = [run[family][way] - base for run in runs]
            cells.append(f"{min(gains):+.3f}…{max(gains):+.3f}" if len(gains) > 1 else f"{gains[0]:+.3f}")
        how = "" if family in TUNING else "  (held out)"
        print(f"{family:<18} {n:>4}  {base:8.3f}  {cells[0]:>15}  {cells[1]:>14}{how}")
    print(f"gains are the range over seeds {args.seeds}; tuning families leave one project out")


if __name__ == "__main__":
    main()
