"""Choose ranking constants by leave-one-group-out cross-validation, and report the held-out figures.

    python tests/benchmarks/tune_ranking.py [--grid 'scoring.JOIN_SHARE=0.6,0.8;discover.MAX_PER_CONTAINER=3,5']
                                            [--only bird-dev,orbit] [--corpora DIR] [--json out.json]

Every corpus is indexed once (real model); each setting of the grid is then applied to the
live modules and every judged discover_data / wiki_search query re-run through the service,
so what is scored is exactly what the product returns. Groups are the bird-dev databases and
the other judged projects. For each held-out group the setting with the best mean nDCG@10 on
all the *other* groups is chosen and scored on the held-out one: the table reports those
held-out figures (and the in-sample best beside them, to show how much tuning flatters).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import shutil
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from quality import DEFAULT_CORPORA, judged_corpora, project_path  # noqa: E402

from ktx_index.evaluation import Runner, metrics, service_runner  # noqa: E402
from ktx_index.judged import JudgedQuery  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

MODULES = {"scoring": "ktx_index.search.scoring", "discover": "ktx_index.search.discover"}


def load(corpora: Path, work_root: Path, only: set[str]) -> list[tuple[Runner, JudgedQuery, str]]:
    """(runner, question, group) for every judged discover_data / wiki_search question; a bird-dev question's
    group is its database, any other question's its project."""
    cases = []
    for name, _table, queries in judged_corpora(corpora):
        source = project_path(name, corpora)
        if (only and name not in only) or not source.is_dir():
            continue
        work = work_root / name
        shutil.copytree(source, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ktx"))
        service = KtxIndex(work)
        service.rebuild()
        run = service_runner(service)
        for q in queries:
            if q.tool != "dictionary_search":
                cases.append((run, q, f"bird/{q.tags[0]}" if name == "bird-dev" and q.tags else name))
    return cases


def parse_grid(text: str) -> dict[str, list[float]]:
    grid = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, values = part.split("=", 1)
        grid[name.strip()] = [float(v) if "." in v else int(v) for v in values.split(",")]
    return grid


def apply(setting: dict[str, float]) -> None:
    for name, value in setting.items():
        module, attr = name.split(".", 1)
        setattr(importlib.import_module(MODULES[module]), attr, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-tune"))
    parser.add_argument("--grid", default="")
    parser.add_argument("--only", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cases = load(args.corpora, args.work, {s for s in args.only.split(",") if s})
    grid = parse_grid(args.grid)
    settings = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())] or [{}]
    # per setting, per group: the metric values of its queries (discover and wiki kept apart)
    results: list[dict[tuple[str, str], list[dict[str, float]]]] = []
    for setting in settings:
        apply(setting)
        by_group: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
        for run, q, group in cases:
            by_group[(group, q.tool)].append(metrics(run(q), q.relevant).model_dump())
        results.append(by_group)
        ndcg = statistics.mean(m["ndcg"] for ms in by_group.values() for m in ms)
        print(f"{setting}  mean nDCG@10 {ndcg:.4f}", file=sys.stderr)
    groups = sorted({g for r in results for g in r})

    def mean(i: int, keys: list[tuple[str, str]], metric: str = "ndcg") -> float:
        values = [m[metric] for k in keys for m in results[i][k]]
        return statistics.mean(values) if values else 0.0

    report = {}
    print(f"{'held-out group':<32} {'n':>4}  {'nDCG cv':>8} {'R@10 cv':>8}  {'nDCG best':>9}  chosen")
    for group in groups:
        others = [g for g in groups if g != group and g[1] == group[1]]
        chosen = max(range(len(settings)), key=lambda i: (mean(i, others), -i))
        best = max(range(len(settings)), key=lambda i: mean(i, [group]))
        n = len(results[chosen][group])
        report[f"{group[0]}/{group[1]}"] = {
            "n": n,
            "ndcg": mean(chosen, [group]),
            "recall": mean(chosen, [group], "recall"),
            "mrr": mean(chosen, [group], "mrr"),
            "in_sample_ndcg": mean(best, [group]),
            "chosen": settings[chosen],
        }
        row = report[f"{group[0]}/{group[1]}"]
        print(
            f"{group[0] + ' ' + group[1][:4]:<32} {n:>4}  {row['ndcg']:>8.3f} {row['recall']:>8.3f}  "
            f"{row['in_sample_ndcg']:>9.3f}  {settings[chosen]}"
        )
    for tool in sorted({g[1] for g in groups}):
        for label, is_bird in (("bird-dev", True), ("judged", False)):
            keys = [f"{g}/{t}" for g, t in groups if t == tool and g.startswith("bird/") == is_bird]
            n = sum(report[k]["n"] for k in keys)
            if n:
                ndcg = sum(report[k]["ndcg"] * report[k]["n"] for k in keys) / n
                recall = sum(report[k]["recall"] * report[k]["n"] for k in keys) / n
                print(f"cross-validated {tool:<14} {label:<9} n={n:>4}  nDCG@10 {ndcg:.3f}  Recall@10 {recall:.3f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
