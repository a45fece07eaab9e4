"""Search quality on judged queries: ktx-index against a KTX-style baseline, in the same run.

    python tests/benchmarks/quality.py [--corpora tests/benchmarks/corpora] [--only demo,bird-dev] [--json out.json]
                                      [--precision int8|float32] [--params 'second_chunk=0.3']
    python tests/benchmarks/quality.py --only heldout-sql,heldout-business   # the held-out projects (heldout.py)
    python tests/benchmarks/quality.py --only tuning-business   # business questions on training databases
    python tests/benchmarks/quality.py --only validation-business   # the same, tuned on by nothing
    python tests/benchmarks/quality.py --only wiki-tuning,wiki-heldout,wiki-more   # wiki-only projects (wiki_corpora.py)
    python tests/benchmarks/quality.py --only judged-blind   # KTX-style projects, questions nothing was tuned on
    python tests/benchmarks/quality.py --only abbreviated   # legacy warehouses' abbreviated names (warehouse_corpora.py)
    python tests/benchmarks/quality.py --only ktx-style   # whole KTX projects written for it (warehouse_corpora.py)
    python tests/benchmarks/quality.py --only ktx-style-2,ktx-style-3,ktx-style-4,ktx-style-5,ktx-style-6,ktx-style-train   # more

Judged queries: tests/benchmarks/judged/<corpus>.yaml, and the JSON-lines files a corpus
carries itself (bird-dev/judged-*.jsonl). Each project is copied to a work folder and
indexed with the real model (vectors are cached there between runs). Scoring is
ktx_index.evaluation.metrics, the scorer of `ktx-index eval`. Prints MRR@10, nDCG@10, Recall@10
(and Recall@10 of the judged tables alone) per tool and query type, per corpus, and per
tag (bird-dev: per database). Queries of type no_answer score 1 when nothing is returned, else 0.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from gains import Gain, family_mean, format_gains, gain  # noqa: E402
from heldout import FAMILIES, TRAINING_FAMILIES, heldout_corpora, training_corpora  # noqa: E402
from ktx_baseline import KtxBaseline  # noqa: E402
from naive import bm25_runner, cosine_runner  # noqa: E402
from warehouse_corpora import WAREHOUSE_FAMILIES, warehouse_corpora  # noqa: E402
from wiki_corpora import WIKI_FAMILIES, wiki_corpora  # noqa: E402

from indexers import load_project, read_project  # noqa: E402
from ktx_index.embedding.embedder import PRECISIONS, MiniLMEmbedder  # noqa: E402
from ktx_index.evaluation.judged import JudgedQuery, load_judged  # noqa: E402
from ktx_index.evaluation.metrics import (  # noqa: E402
    EvalReport,
    GroupScore,
    K,
    QueryResult,
    Returned,
    Runner,
    aggregate,
    evaluate,
    evaluate_index,
)
from ktx_index.search.scoring import PARAMS, Params  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

DEFAULT_CORPORA = HERE / "corpora"  # vendored; --corpora DIR reads another copy
JUDGED_TABLE = "judged"  # the yaml corpora, summed as one table (as recorded in docs/benchmarks.md)
BLIND_FAMILY = "judged-blind"


def parse_grid(text: str) -> dict[str, list[float]]:
    """``'join_share=0.6,0.8;max_per_container=3,5'`` → each ``Params`` field with the values to try."""
    known = [f.name for f in dataclasses.fields(Params)]
    grid = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, values = (side.strip() for side in part.split("=", 1))
        if name not in known:
            raise SystemExit(f"unknown ranking constant {name!r}; known: {', '.join(known)}")
        grid[name] = [float(v) if "." in v else int(v) for v in values.split(",")]
    return grid


def project_path(name: str, corpora: Path) -> Path:
    return REPO / "data" / "demo" if name == "demo" else corpora / name


def judged_corpora(corpora: Path) -> list[tuple[str, str, list[JudgedQuery]]]:
    """(corpus, table it is reported in, questions): the yaml corpora share one table, a jsonl corpus has its own."""
    out = []
    for path in sorted((HERE / "judged").glob("*.yaml")):
        judged = load_judged(path)
        out.append((judged.project or path.stem, JUDGED_TABLE, judged.queries))
    for folder in sorted(p for p in corpora.iterdir() if p.is_dir()) if corpora.is_dir() else []:
        files = sorted(folder.glob("judged-*.jsonl"))
        if files:
            out.append((folder.name, folder.name, [q for f in files for q in load_judged(f).queries]))
    return out


def blind_corpora(corpora: Path) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(``judged-blind/<project>``, its path, questions, family) for ``judged/blind/*.yaml``: questions over the
    KTX-style projects written from their files alone, measured once before any change and never tuned on (the
    judged family's own questions have been, project by project). Each gets its own copy of the project."""
    out = []
    for path in sorted((HERE / "judged" / "blind").glob("*.yaml")):
        judged = load_judged(path)
        name = judged.project or path.stem
        out.append((f"{BLIND_FAMILY}/{name}", project_path(name, corpora), judged.queries, BLIND_FAMILY))
    return out


def baseline_runner(baseline: KtxBaseline) -> Runner:
    def run(q: JudgedQuery) -> Returned:
        if q.tool == "discover_data":
            return [
                [f"{r.kind}:{r.connection_id or ''}:{r.id}"]
                for r in baseline.discover(q.text, q.connection, q.kinds, K)
            ]
        if q.tool == "wiki_search":
            return [[f"wiki::{d.id}"] for d in baseline.wiki_search(q.text, K)]
        return [
            [f"{d.connection_id}:{d.display}"] for v in q.values or [] for d in baseline.dictionary(v, q.connection)
        ]

    return run


def run_corpus(
    name: str,
    source: Path,
    queries: list[JudgedQuery],
    work_root: Path,
    precision: str | None = None,
    params: Params = PARAMS,
) -> tuple[EvalReport, EvalReport, dict[str, EvalReport]]:
    """ktx-index, the KTX-style baseline, and the naive baselines (plain BM25, plain cosine) on one corpus."""
    work = work_root / name
    if work.exists():
        shutil.rmtree(work / "wiki", ignore_errors=True)
    shutil.copytree(source, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ktx"))
    embedder = {"embedder": MiniLMEmbedder(precision=precision)} if precision else {}
    service = KtxIndex(work, params=params, **embedder)
    try:
        service.rebuild()
        ours = evaluate_index(service, queries)
        naive = {
            "bm25": evaluate(queries, bm25_runner(service)),
            "cosine": evaluate(queries, cosine_runner(service)),
        }
    finally:
        service.close()
    theirs = evaluate(queries, baseline_runner(KtxBaseline(read_project(load_project(work)).documents)))
    for report in (ours, theirs, *naive.values()):
        for result in report.queries:
            result.tags = [f"@{name}", *result.tags]
    return ours, theirs, naive


def fmt(value: float | None) -> str:
    return "    -" if value is None else f"{value:5.3f}"


def print_table(title: str, ours: list[GroupScore], theirs: list[GroupScore]) -> None:
    base = {(g.tool, g.by, g.name): g for g in theirs}
    print(f"\n{title}")
    print(f"{'tool':<18} {'group':<24} {'n':>3}  {'nDCG@10':>12}  {'MRR@10':>12}  {'Recall@10':>12}  {'tblR@10':>12}")
    print(" " * 48 + "  ".join(["ktx   base"] * 4))
    for g in ours:
        b = base[(g.tool, g.by, g.name)]
        cells = [f"{fmt(getattr(g, m))} {fmt(getattr(b, m))}" for m in ("ndcg", "mrr", "recall", "table_recall")]
        print(f"{g.tool:<18} {g.name:<24} {g.n:>3}  " + "  ".join(cells))
    for g in ours:
        if g.by == "all":
            print(f"latency {g.tool:<18} p50 {g.p50_ms:6.1f} ms   (in-process, warm)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA, help="folder holding the corpora")
    parser.add_argument(
        "--only", default="", help="comma-separated corpus names (demo,orbit,bird-dev,heldout-sql/store_1,...)"
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="kept between runs")
    parser.add_argument("--json", type=Path, help="write per-corpus, per-tool, per-type and per-tag figures here")
    parser.add_argument("--precision", choices=PRECISIONS, help="the model's precision (default: the project's)")
    parser.add_argument("--show-misses", action="store_true", help="print questions below nDCG 0.75")
    parser.add_argument(
        "--params", default="", help="ranking constants to replace, e.g. 'second_chunk=0.3;lexical_weight=0.5'"
    )
    args = parser.parse_args()
    replaced = {name: values[0] for name, values in parse_grid(args.params).items()}
    params = dataclasses.replace(PARAMS, **replaced)
    only = {s for s in args.only.split(",") if s}
    tables: dict[str, tuple[list[QueryResult], list[QueryResult]]] = {}
    naive_tables: dict[tuple[str, str], list[QueryResult]] = {}
    payload: dict[str, Any] = {"k": K, "corpora": {}, "tables": {}}
    gains: dict[str, dict[str, list[Gain]]] = {}  # tool → family → per-corpus gains over plain cosine
    corpora = [
        (name, table, queries, project_path(name, args.corpora))
        for name, table, queries in judged_corpora(args.corpora)
    ]
    families = {name.split("/", 1)[0] for name in only}  # a family, or one project of it ("tuning-business/hr_1")
    if families & set(FAMILIES):  # held-out projects (heldout.py), one table per family, only when asked for
        corpora += [
            (name, family, queries, path) for name, path, queries, family in heldout_corpora(args.work / "heldout")
        ]
    for asked in (family for family in TRAINING_FAMILIES if family in families):  # over training databases
        corpora += [
            (name, family, queries, path)
            for name, path, queries, family in training_corpora(args.work / "tuning", asked)
        ]
    if BLIND_FAMILY in families:
        corpora += [(name, family, queries, path) for name, path, queries, family in blind_corpora(args.corpora)]
    for asked in (family for family in WIKI_FAMILIES if family in families):  # wiki-only projects (wiki_corpora.py)
        corpora += [(name, family, queries, path) for name, path, queries, family in wiki_corpora(asked)]
    for asked in (family for family in WAREHOUSE_FAMILIES if family in families):  # warehouse_corpora.py
        corpora += [(name, family, queries, path) for name, path, queries, family in warehouse_corpora(asked)]
    for name, table, queries, source in corpora:
        if only and name not in only and table not in only:
            continue
        if not (source / "ktx.yaml").is_file():
            print(f"skip {name}: no project at {source}", file=sys.stderr)
            continue
        ours, theirs, naive = run_corpus(name, source, queries, args.work, args.precision, params)
        for qid, ids in ours.unknown_ids.items():
            print(f"warning [{name}] {qid}: judged ids not in the index: {ids}", file=sys.stderr)
        if args.show_misses:
            for r in ours.queries:
                if r.ndcg < 0.75:
                    print(f"  [{name}] {r.id} {r.type} {r.text[:90]!r}: ndcg {r.ndcg:.2f}")
                    print(f"      got  {r.returned[:5]}\n      want {r.relevant}")
        mine, base = tables.setdefault(table, ([], []))
        mine.extend(ours.queries)
        base.extend(theirs.queries)
        for label, report in naive.items():
            naive_tables.setdefault((table, label), []).extend(report.queries)
        payload["corpora"][name] = {
            "ktx": [g.model_dump() for g in ours.groups],
            "base": [g.model_dump() for g in theirs.groups],
        }
        for tool in ("discover_data", "wiki_search"):
            row = gain(name, ours.queries, naive["cosine"].queries, tool)
            if row.n:
                gains.setdefault(tool, {}).setdefault(table, []).append(row)
                payload["corpora"][name].setdefault("gain", {})[tool] = row.__dict__
    for table, (mine, base) in tables.items():
        ours_groups, base_groups = aggregate(mine), aggregate(base)
        print_table(
            "judged corpora (yaml)" if table == JUDGED_TABLE else f"{table} (per tag: database)",
            ours_groups,
            base_groups,
        )
        payload["tables"][table] = {
            "ktx": [g.model_dump() for g in ours_groups],
            "base": [g.model_dump() for g in base_groups],
        }
        print(f"naive baselines on the same index ({table}), nDCG@10 / Recall@10 per tool:")
        for label in ("bm25", "cosine"):
            groups = [g for g in aggregate(naive_tables.get((table, label), [])) if g.by == "all"]
            cells = "  ".join(
                f"{g.tool} {g.ndcg:.3f} / {g.recall:.3f}" for g in groups if g.tool != "dictionary_search"
            )
            print(f"  plain {label:<7} {cells}")
            payload["tables"][table][label] = [g.model_dump() for g in groups]
    for tool, families in gains.items():
        rows = [r for family in families.values() for r in family]
        means = [family_mean(f"family {family}", family_rows) for family, family_rows in families.items()]
        rows += [*means, family_mean("families, equally weighted", means)]
        print("\n" + format_gains(f"{tool}: ktx-index against plain cosine (same model, same texts)", rows))
    if args.json:
        args.json.write_text(json.dumps(payload, indent=2))


if __name__ == "__main__":
    main()
