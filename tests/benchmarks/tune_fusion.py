"""Choose the fusion constants of ktx_index/search/scoring.py on the judged queries.

    python tests/benchmarks/tune_fusion.py [--corpora tests/benchmarks/corpora] [--work /tmp/ktx-index-quality]

Lane scores (lexical, semantic, exact) are computed once per query; each parameter set is
then scored offline (fusion, floor, de-duplication, top 10) and the grid is ranked by mean
nDCG@10 over discover_data and wiki_search queries. It also reports a split (tune on some
projects, test on the others) so a choice that only fits one corpus is visible.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import statistics
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from quality import DEFAULT_CORPORA, project_path  # noqa: E402

from indexers.models import SEARCH_KINDS  # noqa: E402
from ktx_index.evaluation import metrics  # noqa: E402
from ktx_index.search import scoring  # noqa: E402
from ktx_index.search.discover import TWINS, physical_key  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

GRID = {
    "COS_LOW": [0.15, 0.2, 0.25],
    "COS_HIGH": [0.55, 0.65, 0.75],
    "LEXICAL_WEIGHT": [0.4, 0.55, 0.7],
    "SEMANTIC_WEIGHT": [0.6, 0.75, 0.9],
    "RELEVANCE_FLOOR": [0.15, 0.2, 0.25, 0.3],
}


def collect(corpora: Path, work_root: Path) -> list[dict]:
    cases = []
    for path in sorted((HERE / "judged").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        source = project_path(spec["project"], corpora)
        if not source.is_dir():
            continue
        work = work_root / spec["project"]
        shutil.copytree(source, work, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".ktx"))
        service = KtxIndex(work)
        service.rebuild()
        engine = service.refreshed_engine()
        for q in spec["queries"]:
            if q["tool"] == "dictionary_search":
                continue
            kinds = ["wiki"] if q["tool"] == "wiki_search" else (q.get("kinds") or list(SEARCH_KINDS))
            ranked = engine.rank(q["query"], kinds, q.get("connection"), pool=200)
            docs = engine.store.get_many([c.uid for c in ranked[:300]])
            rows = []
            for cand in ranked[:300]:
                doc = docs.get(cand.uid)
                if doc is None:
                    continue
                ids = {f"{doc.kind}:{doc.connection_id or ''}:{doc.id}"}
                key = physical_key(doc)
                if key:
                    ids.add(
                        f"{'table' if key[0] == 'table' else 'column'}:{doc.connection_id}:{doc.table_ref.display}"
                        + (f".{doc.column_name}" if key[0] == "column" else "")
                    )
                rows.append((cand.lexical, cand.cosine, cand.exact, doc.kind, key, ids))
            dedupe = q["tool"] == "discover_data" and any(k in kinds and TWINS[k] in kinds for k in TWINS)
            relevant = {str(k): int(v) for k, v in (q.get("relevant") or {}).items()}
            cases.append(
                {
                    "project": spec["project"],
                    "tool": q["tool"],
                    "type": q["type"],
                    "rows": rows,
                    "dedupe": dedupe,
                    "relevant": relevant,
                }
            )
        service.close()
    return cases


def evaluate(cases: list[dict], params: dict[str, float]) -> dict[str, float]:
    for name, value in params.items():
        setattr(scoring, name, value)
    by_group: dict[str, list[float]] = {}
    for case in cases:
        scored = []
        for lexical, semantic, exact, kind, key, ids in case["rows"]:
            sem = None if semantic is None else scoring.semantic_score(semantic)
            score = scoring.fuse(lexical, sem, exact)
            if score >= params["RELEVANCE_FLOOR"]:
                scored.append((score, kind, key, ids))
        scored.sort(key=lambda r: -r[0])
        returned, seen = [], {}
        for _score, _kind, key, ids in scored:
            if case["dedupe"] and key is not None:
                if key in seen:
                    returned[seen[key]] |= ids
                    continue
                seen[key] = len(returned)
            returned.append(set(ids))
            if len(returned) >= 10 and not case["dedupe"]:
                break
        m = metrics(returned[:10], case["relevant"])
        for group in (case["tool"], f"{case['tool']}/{case['type']}", f"{case['project']}/{case['tool']}"):
            by_group.setdefault(group, []).append(m.ndcg)
    return {k: statistics.mean(v) for k, v in by_group.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", type=Path, default=DEFAULT_CORPORA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"))
    args = parser.parse_args()
    scoring.COS_LOW = 0.1  # collect generously; the grid raises it again
    cases = collect(args.corpora, args.work)
    print(f"{len(cases)} judged queries")
    results = []
    names = list(GRID)
    for values in itertools.product(*GRID.values()):
        params = dict(zip(names, values, strict=True))
        if params["COS_HIGH"] <= params["COS_LOW"]:
            continue
        result = evaluate(cases, params)
        objective = (result["discover_data"] + result["wiki_search"]) / 2
        results.append((objective, params, result))
    results.sort(key=lambda r: -r[0])
    for objective, params, result in results[:10]:
        print(
            f"{objective:.4f}  discover {result['discover_data']:.3f}  wiki {result['wiki_search']:.3f}  "
            f"para {result.get('discover_data/paraphrase', 0):.3f}  none {result.get('discover_data/no_answer', 0):.3f}  {params}"
        )


if __name__ == "__main__":
    main()
