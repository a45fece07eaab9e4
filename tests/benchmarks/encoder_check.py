"""Plain cosine over wiki pages with another sentence-transformers model: is the encoder the limit?

    python tests/benchmarks/encoder_check.py [--model /path/to/all-mpnet-base-v2]

Ranks each wiki page by its best chunk's cosine to the question (quality.py's plain-cosine baseline, over the
same ``texts.wiki_chunks`` texts), for the answerable ``wiki_search`` questions of demo, orbit and the wiki
families (wiki_corpora.py), and prints answerable nDCG@10 per family: with the shipped model, and with
``--model`` when given (a folder sentence-transformers loads, e.g. all-mpnet-base-v2 reassembled from its PyPI
parts; not a dependency of ktx-index). A check, never run by the product.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from quality import DEFAULT_CORPORA, judged_corpora, project_path  # noqa: E402
from wiki_corpora import WIKI_FAMILIES, wiki_corpora  # noqa: E402

from indexers import load_project, read_project  # noqa: E402
from ktx_index.embedding.embedder import MiniLMEmbedder  # noqa: E402
from ktx_index.evaluation.judged import JudgedQuery  # noqa: E402
from ktx_index.evaluation.metrics import metrics  # noqa: E402
from ktx_index.index.texts import wiki_chunks  # noqa: E402

Encode = Callable[[list[str]], np.ndarray]


def wiki_sets() -> list[tuple[str, Path, list[JudgedQuery]]]:
    """(family, project, answerable wiki_search questions): the judged corpora that ask any (demo and orbit) as
    "judged", then the wiki families."""
    out = [(table, project_path(name, DEFAULT_CORPORA), qs) for name, table, qs in judged_corpora(DEFAULT_CORPORA)]
    out += [(family, path, queries) for family in WIKI_FAMILIES for _, path, queries, _ in wiki_corpora(family)]
    asked = [(family, path, [q for q in qs if q.tool == "wiki_search" and q.relevant]) for family, path, qs in out]
    return [(family, path, questions) for family, path, questions in asked if questions]


def plain_cosine(encode: Encode, project: Path, questions: list[JudgedQuery]) -> float:
    """Mean nDCG@10 of the pages ranked by their best chunk's cosine to each question."""
    pages = [d for d in read_project(load_project(project)).documents if d.kind == "wiki"]
    texts, owners = [], []
    for page in pages:
        for chunk in wiki_chunks(page):
            texts.append(chunk)
            owners.append(page.id)
    sims = encode([q.text for q in questions]) @ encode(texts).T
    scores = []
    for question, row in zip(questions, sims, strict=True):
        best: dict[str, float] = {}
        for owner, sim in zip(owners, row.tolist(), strict=True):
            best[owner] = max(best.get(owner, -1.0), sim)
        ranked = sorted(best, key=lambda key: -best[key])[:10]
        scores.append(metrics([[f"wiki::{key}"] for key in ranked], question.relevant).ndcg)
    return statistics.mean(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, help="a sentence-transformers model folder to compare")
    args = parser.parse_args()
    encoders: dict[str, Encode] = {"shipped": MiniLMEmbedder().encode}
    if args.model:
        from sentence_transformers import SentenceTransformer

        other = SentenceTransformer(str(args.model), device="cpu")
        encoders[args.model.name] = lambda texts: other.encode(texts, normalize_embeddings=True, batch_size=16)
    by_family: dict[tuple[str, str], list[float]] = {}
    for family, project, questions in wiki_sets():
        for label, encode in encoders.items():
            by_family.setdefault((label, family), []).append(plain_cosine(encode, project, questions))
    print("plain cosine over wiki pages, answerable wiki_search questions, nDCG@10 (mean over projects)")
    for (label, family), values in by_family.items():
        print(f"  {label:<24} {family:<14} {statistics.mean(values):.3f}")


if __name__ == "__main__":
    main()
