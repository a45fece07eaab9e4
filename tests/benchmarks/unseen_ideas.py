"""Three ideas for projects nobody tuned for, measured on quality.py's copies (none shipped; docs/benchmarks.md).

    python tests/benchmarks/quality.py --only demo,orbit,wiki-tuning,wiki-heldout   # builds the copies
    python tests/benchmarks/unseen_ideas.py --only demo,orbit,wiki-tuning,wiki-heldout

* ``centred``: the cosine after removing the project's mean vector (of the kinds asked for), at half and full
  weight: the pages of one company's wiki share a direction that brings its glossary near every question.
* ``hub``: each document's best-chunk cosine minus β × its mean cosine to its ten nearest documents (CSLS's
  correction for hubness), β = 0.25 and 0.5.
  Both are dense-only rankings, compared with plain cosine on the answerable questions (nDCG@10).
* ``concepts``: how many no-answer questions ``confidence`` would decline, and how many answerable ones it
  would flag low, if it also flagged low a question whose concept terms (idf-weighted) are found in the text of
  its top three answers below a share t.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from naive import _kinds, judged_id  # noqa: E402
from quality import DEFAULT_CORPORA, judged_corpora  # noqa: E402
from wiki_corpora import WIKI_FAMILIES, wiki_corpora  # noqa: E402

from indexers.models import SEARCH_KINDS  # noqa: E402
from ktx_index.analysis import term_set  # noqa: E402
from ktx_index.evaluation.judged import JudgedQuery  # noqa: E402
from ktx_index.evaluation.metrics import K, Returned, evaluate  # noqa: E402
from ktx_index.search.pages import matching_pages  # noqa: E402
from ktx_index.search.query import Query  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

Scorer = Callable[[np.ndarray, set[int]], np.ndarray]  # query vector, kinds → one score per chunk group
VARIANTS = {"plain": 0.0, "centred 0.5": 0.5, "centred 1": 1.0, "hub 0.25": 0.25, "hub 0.5": 0.5}
THRESHOLDS = (0.3, 0.4, 0.5)


class Dense:
    """The snapshot's vectors, one document per chunk group (its best chunk), as naive.cosine_runner reads them."""

    def __init__(self, service: KtxIndex) -> None:
        self.engine = service.ensure_index()
        snap = self.engine.snapshot
        self.snap, self.matrix = snap, snap.matrix.astype(np.float32)
        self.ends = np.append(snap.chunk_starts[1:], len(snap.chunk_rows))
        self.group_kind = snap.doc_kind[snap.chunk_docs]

    def groups(self, kinds: set[int]) -> np.ndarray:
        return np.flatnonzero(np.isin(self.group_kind, list(kinds)))

    def best(self, sims: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(sims[self.snap.chunk_rows], self.snap.chunk_starts)

    def centred(self, weight: float) -> Scorer:
        def score(vector: np.ndarray, kinds: set[int]) -> np.ndarray:
            rows = np.concatenate(
                [self.snap.chunk_rows[self.snap.chunk_starts[g] : self.ends[g]] for g in self.groups(kinds)]
            )
            mean = self.matrix[rows].mean(0) * weight
            moved = self.matrix - mean
            moved /= np.linalg.norm(moved, axis=1, keepdims=True) + 1e-9
            query = (vector - mean) / (np.linalg.norm(vector - mean) + 1e-9)
            return self.best(moved @ query)

        return score

    def hub(self, beta: float, neighbours: int = 10) -> Scorer:
        def score(vector: np.ndarray, kinds: set[int]) -> np.ndarray:
            groups = self.groups(kinds)
            docs = np.stack(
                [self.matrix[self.snap.chunk_rows[self.snap.chunk_starts[g] : self.ends[g]]].mean(0) for g in groups]
            )
            docs /= np.linalg.norm(docs, axis=1, keepdims=True) + 1e-9
            near = docs @ docs.T
            np.fill_diagonal(near, -1.0)
            k = min(neighbours, max(1, len(groups) - 1))
            penalty = np.zeros(len(self.snap.chunk_starts), dtype=np.float32)
            penalty[groups] = np.sort(near, axis=1)[:, -k:].mean(1)
            return self.best(self.matrix @ vector) - beta * penalty

        return score

    def runner(self, score: Scorer) -> Callable[[JudgedQuery], Returned]:
        def run(q: JudgedQuery) -> Returned:
            kinds = {SEARCH_KINDS.index(k) for k in _kinds(q)}
            per_group = score(self.engine.query_vector(q.text), kinds)
            order = [g for g in np.argsort(-per_group) if int(self.group_kind[g]) in kinds][:K]
            return [[judged_id(self.snap.doc_uids[int(self.snap.chunk_docs[g])])] for g in order]

        return run


def scorer(dense: Dense, variant: str) -> Scorer:
    weight = VARIANTS[variant]
    if variant.startswith("centred"):
        return dense.centred(weight)
    if variant.startswith("hub"):
        return dense.hub(weight)
    return lambda vector, _kinds: dense.best(dense.matrix @ vector)


def top_coverage(service: KtxIndex, q: JudgedQuery) -> tuple[str, float]:
    """The shipped confidence, and the idf-weighted share of the question's concept terms its top three hold."""
    engine, query = service.ensure_index(), Query.parse(q.text)
    if q.tool == "wiki_search":
        ranked, verdict, _pool = matching_pages(engine, query)
        level = verdict.level
        uids = [c.uid for c in ranked[:3]]
    else:
        result = service.discover_data(q.text, q.connection, q.kinds, K)
        level = "none" if not result.refs else (result.confidence or "high")
        uids = [
            f"wiki:global:{r.id}" if r.kind == "wiki" else f"{r.kind}:{r.connectionId or ''}:{r.id}"
            for r in result.refs[:3]
        ]
    docs = engine.documents(uids).values()
    held = term_set(
        " ".join(" ".join(filter(None, (d.name, d.display, d.summary, d.description, d.body, d.comment))) for d in docs)
    )
    weights = [(engine.lexical.idf(t), t in held) for t in query.terms if t not in query.data_words]
    total = sum(w for w, _ in weights)
    return level, (sum(w for w, h in weights if h) / total if total else 1.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="demo,orbit,wiki-tuning,wiki-heldout", help="corpora or families")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ktx-index-quality"), help="quality.py's copies")
    args = parser.parse_args()
    only = set(args.only.split(","))
    corpora = [(name, table, queries) for name, table, queries in judged_corpora(DEFAULT_CORPORA)]
    corpora += [(n, f, qs) for family in WIKI_FAMILIES if family in only for n, _p, qs, f in wiki_corpora(family)]
    ndcg: dict[tuple[str, str, str], list[float]] = defaultdict(list)  # (family, tool, variant) → per corpus
    flags: dict[str, list[tuple[bool, str, float]]] = defaultdict(list)  # family → (answerable, level, coverage)
    for name, family, queries in corpora:
        if name not in only and family not in only:
            continue
        if not (args.work / name / ".ktx").is_dir():
            sys.exit(f"no copy of {name} under {args.work}: run quality.py --only {name} first")
        service = KtxIndex(args.work / name)  # quality.py built it; nothing is written here
        dense = Dense(service)
        for tool in ("discover_data", "wiki_search"):
            answerable = [q for q in queries if q.tool == tool and q.relevant]
            for variant in VARIANTS if answerable else ():
                report = evaluate(answerable, dense.runner(scorer(dense, variant)))
                ndcg[(family, tool, variant)].append(float(np.mean([r.ndcg for r in report.queries])))
        for q in queries:
            if q.tool != "dictionary_search":
                flags[family].append((bool(q.relevant), *top_coverage(service, q)))
        service.close()
    print("dense only, answerable nDCG@10 (mean over corpora)")
    print(f"{'family':22s} {'tool':14s} " + " ".join(f"{v:>11s}" for v in VARIANTS))
    for family, tool in dict.fromkeys((f, t) for f, t, _ in ndcg):
        print(f"{family:22s} {tool:14s} " + " ".join(f"{np.mean(ndcg[(family, tool, v)]):11.3f}" for v in VARIANTS))
    print("\nconcept coverage of the top three: no-answer declined / answerable flagged low, shipped → with the rule")
    for family, rows in flags.items():
        no_answer = [r for r in rows if not r[0]]
        answerable = [r for r in rows if r[0]]
        cells = []
        for t in THRESHOLDS:
            declined = sum(1 for _, level, cov in no_answer if level != "high" or cov < t)
            low = sum(1 for _, level, cov in answerable if level != "high" or cov < t)
            cells.append(f"t={t}: {declined}/{len(no_answer)}, {low}/{len(answerable)}")
        shipped_declined = sum(1 for _, level, _ in no_answer if level != "high")
        shipped_low = sum(1 for _, level, _ in answerable if level != "high")
        print(
            f"{family:22s} shipped {shipped_declined}/{len(no_answer)}, {shipped_low}/{len(answerable)};  "
            + ";  ".join(cells)
        )


if __name__ == "__main__":
    main()
