"""Choose ranking constants by leave-one-group-out cross-validation, and report the held-out figures.

    python tests/benchmarks/tune_ranking.py [--grid 'join_share=0.6,0.8;max_per_container=3,5']
                                            [--only bird-dev,orbit] [--corpora DIR] [--json out.json]

Every corpus is indexed once (real model); each setting of the grid (fields of search/scoring.py's ``Params``)
becomes a ``Params`` handed to a service over the same index, and every judged discover_data / wiki_search
query is re-run through it, so what is scored is exactly what the product returns. Groups are the bird-dev
databases (family bird-dev, SQL-style questions) and the other judged projects (family judged, KTX-style). For
each held-out group the setting with the best nDCG@10 on the *other* groups, the two families weighed equally,
is chosen and scored on the held-out one: the table reports those held-out figures (and the in-sample best
beside them, to show how much tuning flatters). The held-out projects of tests/benchmarks/heldout.py are never
read here: they only report.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import shutil
import statistics
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from quality import DEFAULT_CORPORA, judged_corpora, parse_grid, project_path  # noqa: E402

from indexers.models import SEARCH_KINDS  # noqa: E402
from ktx_index.evaluation.judged import JudgedQuery  # noqa: E402
from ktx_index.evaluation.metrics import Runner, metrics, service_runner  # noqa: E402
from ktx_index.search.scoring import PARAMS, Params  # noqa: E402
from ktx_index.search.signals import concept_coverage, vocabulary  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402


def load(
    corpora: Path, work_root: Path, only: set[str], services: dict[str, KtxIndex]
) -> list[tuple[Runner, JudgedQuery, str]]:
    """(runner, question, group) for every judged discover_data / wiki_search question; a bird-dev question's
    group is its database (``bird/<db>``), any other question's its project. ``services`` gets each group's."""
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
                group = f"bird/{q.tags[0]}" if name == "bird-dev" and q.tags else name
                services[group] = service
                cases.append((run, q, group))
    return cases


def answer_features(cases: list[tuple[Runner, JudgedQuery, str]], services: dict[str, KtxIndex]) -> list[dict]:
    """Per question, what signals.assess's high/low rule looks at: the best score, whether it is exact, concept
    coverage."""
    rows = []
    for _run, q, group in cases:
        engine = services[group].ensure_index()
        kinds = ["wiki"] if q.tool == "wiki_search" else list(q.kinds or SEARCH_KINDS)
        ranked = engine.rank(q.text, kinds, q.connection)
        top = max(ranked, key=lambda c: c.score) if ranked else None
        rows.append(
            {
                "group": group,
                "tool": q.tool,
                "no_answer": not q.relevant,
                "top": top.score if top else 0.0,
                "exact": bool(top and top.exact),
                "coverage": concept_coverage(vocabulary(engine.lexical), engine.lexical.idf, q.text),
            }
        )
    return rows


def answers(row: dict, rule: tuple[float, float, float]) -> bool:
    floor, coverage, confident = rule
    return row["exact"] or (row["top"] >= floor and (row["top"] >= confident or row["coverage"] >= coverage))


def tune_answerability(rows: list[dict], target: float = 0.9) -> None:
    """Leave one group out: the rule that keeps the most answerable questions while answering at most
    1 - target of the no-answer ones on the other groups, scored on the held-out group."""
    grid = list(
        itertools.product(
            [x / 100 for x in range(20, 46, 2)], [x / 20 for x in range(0, 21)], [x / 100 for x in range(40, 81, 5)]
        )
    )
    for tool in ("discover_data", "wiki_search"):
        mine = [r for r in rows if r["tool"] == tool]
        kept_total = blocked_total = answerable = unanswerable = 0
        chosen_rules = []
        for group in sorted({r["group"] for r in mine}):
            train = [r for r in mine if r["group"] != group]
            test = [r for r in mine if r["group"] == group]

            def quality(rule: tuple[float, float, float], part: list[dict]) -> tuple[float, float]:
                na = [r for r in part if r["no_answer"]]
                ok = [r for r in part if not r["no_answer"]]
                blocked = sum(not answers(r, rule) for r in na) / len(na) if na else 1.0
                kept = sum(answers(r, rule) for r in ok) / len(ok) if ok else 1.0
                return blocked, kept

            feasible = [rule for rule in grid if quality(rule, train)[0] >= target] or grid
            rule = max(feasible, key=lambda r: (quality(r, train)[1], quality(r, train)[0]))
            chosen_rules.append(rule)
            na = [r for r in test if r["no_answer"]]
            ok = [r for r in test if not r["no_answer"]]
            blocked_total += sum(not answers(r, rule) for r in na)
            kept_total += sum(answers(r, rule) for r in ok)
            unanswerable += len(na)
            answerable += len(ok)
        print(
            f"answerability {tool:<14} held out: no-answer questions answered by nothing "
            f"{blocked_total}/{unanswerable}, answerable questions kept {kept_total}/{answerable}"
        )
        everything = max(
            (
                r
                for r in grid
                if sum(not answers(x, r) for x in mine if x["no_answer"]) >= target * sum(x["no_answer"] for x in mine)
            ),
            key=lambda r: sum(answers(x, r) for x in mine if not x["no_answer"]),
            default=None,
        )
        print(f"  per-fold rules {sorted(set(chosen_rules))}; on all groups: {everything}")


def runners(services: dict[str, KtxIndex], params: Params) -> dict[str, Runner]:
    """Per group, a runner over the group's index ranking with ``params`` (one reader per project)."""
    by_root: dict[Path, Runner] = {}
    out = {}
    for group, service in services.items():
        if service.root not in by_root:
            by_root[service.root] = service_runner(KtxIndex(service.root, params=params))
        out[group] = by_root[service.root]
    return out


def family(group: str) -> str:
    return "bird-dev" if group.startswith("bird/") else "judged"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-tune"))
    parser.add_argument("--grid", default="")
    parser.add_argument("--only", default="")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--answerability", action="store_true", help="tune signals.assess's high/low rule instead")
    args = parser.parse_args()
    services: dict[str, KtxIndex] = {}
    cases = load(args.corpora, args.work, {s for s in args.only.split(",") if s}, services)
    if args.answerability:
        tune_answerability(answer_features(cases, services))
        return
    grid = parse_grid(args.grid)
    settings = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())] or [{}]
    # per setting, per group: the metric values of its queries (discover and wiki kept apart)
    results: list[dict[tuple[str, str], list[dict[str, float]]]] = []
    for setting in settings:
        run_of = runners(services, dataclasses.replace(PARAMS, **setting))
        by_group: dict[tuple[str, str], list[dict[str, float]]] = defaultdict(list)
        for _run, q, group in cases:
            found = run_of[group](q)
            returned, low = found if isinstance(found, tuple) else (found, False)
            by_group[(group, q.tool)].append(metrics(returned, q.relevant, low=low).model_dump())
        results.append(by_group)
        ndcg = statistics.mean(m["ndcg"] for ms in by_group.values() for m in ms)
        print(f"{setting}  mean nDCG@10 {ndcg:.4f}", file=sys.stderr)
    groups = sorted({g for r in results for g in r})

    def mean(i: int, keys: list[tuple[str, str]], metric: str = "ndcg") -> float:
        values = [m[metric] for k in keys for m in results[i][k]]
        return statistics.mean(values) if values else 0.0

    def by_family(i: int, keys: list[tuple[str, str]]) -> float:
        """The families' means, weighed equally (bird-dev's 253 questions would otherwise decide alone)."""
        families = {family(g) for g, _tool in keys}
        return statistics.mean(mean(i, [k for k in keys if family(k[0]) == f]) for f in families) if families else 0.0

    report = {}
    print(f"{'held-out group':<32} {'n':>4}  {'nDCG cv':>8} {'R@10 cv':>8}  {'nDCG best':>9}  chosen")
    for group in groups:
        others = [g for g in groups if g != group and g[1] == group[1]]
        chosen = max(range(len(settings)), key=lambda i: (by_family(i, others), -i))
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
