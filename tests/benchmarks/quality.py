"""Search quality on judged queries: ktx-index against a KTX-style baseline, in the same run.

    python tests/benchmarks/quality.py [--corpora ../shared/corpora] [--only demo,orbit] [--json out.json]

Each project is copied to a work folder and indexed with the real model (vectors are
cached there between runs). Prints MRR@10, nDCG@10 and Recall@10 per tool and query type.
Queries of type no_answer score 1 when nothing is returned, else 0.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from ktx_baseline import KtxBaseline  # noqa: E402

from indexers import load_project, read_project  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

K = 10


def project_path(name: str, corpora: Path) -> Path:
    return REPO / "data" / "demo" if name == "demo" else corpora / name


def dcg(gains: list[float]) -> float:
    return sum(gain / math.log2(i + 2) for i, gain in enumerate(gains[:K]))


def metrics(returned: list[set[str]], relevant: dict[str, int]) -> dict[str, float]:
    """returned: per result, the ids it stands for (a ref and the twin merged into it).

    A merged ref (a semantic-layer source carrying its scanned table) earns the gain of every
    relevant id it stands for, since de-duplication is asked for; nDCG is capped at 1."""
    if not relevant:
        score = 1.0 if not returned else 0.0
        return {"ndcg": score, "mrr": score, "recall": score}
    seen: set[str] = set()
    gains = []
    for ids in returned[:K]:
        hit = [i for i in ids if i in relevant and i not in seen]
        seen.update(hit)
        gains.append(float(sum(2 ** relevant[i] - 1 for i in hit)))
    ideal = dcg([2.0**g - 1 for g in sorted(relevant.values(), reverse=True)])
    first = next((rank for rank, g in enumerate(gains, 1) if g > 0), None)
    return {
        "ndcg": min(1.0, dcg(gains) / ideal) if ideal else 0.0,
        "mrr": 1.0 / first if first else 0.0,
        "recall": len(seen) / len(relevant),
    }


def ref_ids(ref: dict[str, Any]) -> set[str]:
    ids = {f"{ref['kind']}:{ref.get('connectionId') or ''}:{ref['id']}"}
    table = ref.get("tableRef")
    if table:
        display = ".".join(p for p in (table.get("catalog"), table.get("db"), table["name"]) if p)
        conn = ref.get("connectionId") or ""
        if ref["kind"] in ("sl_source", "table"):
            ids.add(f"table:{conn}:{display}")
        if ref.get("columnName"):
            ids.add(f"column:{conn}:{display}.{ref['columnName']}")
    return ids


def run_ktx(service: KtxIndex, q: dict[str, Any]) -> tuple[list[set[str]], float]:
    started = time.perf_counter()
    if q["tool"] == "discover_data":
        refs = service.discover_data(q["query"], q.get("connection"), q.get("kinds"), K).model_dump(mode="json")["refs"]
        returned = [ref_ids(r) for r in refs]
    elif q["tool"] == "wiki_search":
        results = service.wiki_search(q["query"], K).results
        returned = [{f"wiki::{r.key}"} for r in results]
    else:
        result = service.dictionary_search(q["values"], q.get("connection"))
        returned = []
        for value in result.results:
            for m in value.matches:
                t = m.tableRef
                display = ".".join(p for p in (t.catalog, t.db, t.name) if p) if t else m.sourceName
                returned.append({f"{m.connectionId}:{display}.{m.columnName}"})
    return returned, (time.perf_counter() - started) * 1000


def run_baseline(baseline: KtxBaseline, q: dict[str, Any]) -> list[set[str]]:
    if q["tool"] == "discover_data":
        return [
            {f"{r.kind}:{r.connection_id or ''}:{r.id}"}
            for r in baseline.discover(q["query"], q.get("connection"), q.get("kinds"), K)
        ]
    if q["tool"] == "wiki_search":
        return [{f"wiki::{d.id}"} for d in baseline.wiki_search(q["query"], K)]
    out = []
    for value in q["values"]:
        out.extend({f"{d.connection_id}:{d.display}"} for d in baseline.dictionary(value, q.get("connection")))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", type=Path, default=REPO.parent / "shared" / "corpora")
    parser.add_argument("--only", default="")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--show-misses", action="store_true")
    args = parser.parse_args()
    only = {s for s in args.only.split(",") if s}
    rows: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies: dict[str, list[float]] = defaultdict(list)
    for path in sorted((HERE / "judged").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        name = spec["project"]
        if only and name not in only:
            continue
        source = project_path(name, args.corpora)
        if not source.is_dir():
            print(f"skip {name}: {source} not found", file=sys.stderr)
            continue
        work = args.work / name
        if work.exists():
            shutil.rmtree(work / "wiki", ignore_errors=True)
        shutil.copytree(source, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ktx"))
        service = KtxIndex(work)
        service.rebuild()
        baseline = KtxBaseline(read_project(load_project(work)).documents)
        for q in spec["queries"]:
            relevant = {str(k): int(v) for k, v in (q.get("relevant") or {}).items()}
            returned, ms = run_ktx(service, q)
            latencies[q["tool"]].append(ms)
            ours = metrics(returned, relevant)
            theirs = metrics(run_baseline(baseline, q), relevant)
            for key in ((q["tool"], q["type"]), (q["tool"], "all"), (q["tool"], f"@{name}")):
                for metric, value in ours.items():
                    rows[key][f"ktx_{metric}"].append(value)
                for metric, value in theirs.items():
                    rows[key][f"base_{metric}"].append(value)
            if args.show_misses and ours["ndcg"] < 0.75:
                print(f"  [{name}] {q['id']} {q['type']} {q.get('query') or q.get('values')}: ndcg {ours['ndcg']:.2f}")
                print(f"      got {[sorted(r)[0] for r in returned[:5]]}")
                print(f"      want {relevant}")
        service.close()
    header = f"{'tool':<18} {'type':<11} {'n':>3}  {'nDCG@10':>15}  {'MRR@10':>15}  {'Recall@10':>15}"
    print(header + "\n" + " " * 34 + "  ".join(["ktx-index  base"] * 3))
    summary = {}
    for (tool, qtype), values in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1] != "all", kv[0][1])):
        n = len(values["ktx_ndcg"])
        cells = [
            f"{statistics.mean(values[f'ktx_{m}']):>9.3f} {statistics.mean(values[f'base_{m}']):>5.3f}"
            for m in ("ndcg", "mrr", "recall")
        ]
        print(f"{tool:<18} {qtype:<11} {n:>3}  " + "  ".join(cells))
        summary[f"{tool}/{qtype}"] = {k: round(statistics.mean(v), 4) for k, v in values.items()} | {"n": n}
    for tool, values in sorted(latencies.items()):
        print(
            f"latency {tool:<18} p50 {statistics.median(values):6.1f} ms   max {max(values):6.1f} ms   (in-process, warm)"
        )
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
