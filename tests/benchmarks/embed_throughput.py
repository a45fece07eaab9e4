"""Bulk embedding throughput (texts/s) of MiniLM on ONNX Runtime, by batching strategy, and whether the
vectors stay the same.

    python tests/benchmarks/embed_throughput.py --project /tmp/ktx-scale/10000 [--texts 3000] [--rounds 2]

Texts are an indexed project's own embedding texts (a seeded sample). Strategies, each run on the same
texts, rounds interleaved so background load hits them alike:

- ``before``: what the builder did until issue 13 (sorted by characters, batches of 16, one session
  call at a time on all cores);
- ``tokens``: tokenized once, sorted by token count, batches cut to a token budget (short texts in
  large batches, long ones in small), one session call at a time on all cores;
- ``tokens-2x1``: the same batches, two single-threaded session calls side by side (one per core):
  what MiniLMEmbedder.encode does now for bulk encodes (``now`` runs it through the embedder);
  ``2x1-b<N>``: the same with a budget of N padded tokens per batch instead of 1024;
- ``int8``: ``now`` with the model quantised to int8 (``index.precision: int8``, the default): not the
  same vectors (cosine ~0.99), a vector space of its own.

Prints texts/s per strategy and the largest difference to ``before`` (max |Δ| of a vector component
and min cosine; vectors are stored as float16, whose step near 0.1 is ~6e-5).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import numpy as np


def project_texts(project: Path, count: int, seed: int = 7) -> list[str]:
    from ktx_index.index.store import DocStore
    from ktx_index.index.texts import embedding_texts

    store = DocStore(project / ".ktx/index/store.sqlite", readonly=True)
    docs = list(store.docs.iter(["wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column"]))
    store.close()
    texts = sorted({t for doc in docs for t in embedding_texts(doc)})
    return random.Random(seed).sample(texts, min(count, len(texts)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--texts", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from ktx_index.embedding.embedder import MiniLMEmbedder
    from ktx_index.embedding.onnx_model import OnnxEncoder, cached_model_path

    texts = project_texts(args.project, args.texts)
    now = MiniLMEmbedder(precision="float32")
    now.encode(texts[:64])  # loads (and exports once) the model
    int8 = MiniLMEmbedder(precision="int8")
    int8.encode(texts[:64])  # quantises the export once
    model_dir = now.base_model_dir()
    path = cached_model_path(model_dir, variant=now.tuned or "")
    one_session = OnnxEncoder(path, model_dir, threads=0)
    single = OnnxEncoder(path, model_dir, threads=1)

    def before(ts: list[str]) -> np.ndarray:
        order = np.argsort([-len(t) for t in ts], kind="stable")
        out = np.empty((len(ts), now.dim), dtype=np.float32)
        out[order] = one_session.encode([ts[i] for i in order])
        return out

    strategies = {
        "before": before,
        "now": now.encode,
        "tokens": lambda ts: one_session.encode_bulk(ts, workers=1),
        "tokens-2x1": lambda ts: single.encode_bulk(ts, workers=2),
        "2x1-b512": lambda ts: single.encode_bulk(ts, workers=2, token_budget=512),
        "2x1-b2048": lambda ts: single.encode_bulk(ts, workers=2, token_budget=2048),
        "2x1-b4096": lambda ts: single.encode_bulk(ts, workers=2, token_budget=4096),
        "int8": int8.encode,
    }
    rates: dict[str, list[float]] = {name: [] for name in strategies}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, encode in strategies.items():
            started = time.perf_counter()
            vectors[name] = encode(texts)
            rates[name].append(len(texts) / (time.perf_counter() - started))
    tokens = [len(e.ids) for e in single.bulk_tokenizer.encode_batch(texts)]
    print(f"{len(texts)} texts from {args.project} (tokens p50 {statistics.median(tokens):.0f}, max {max(tokens)})")
    print(f"{'strategy':<12} {'texts/s (each round)':<28} {'max |Δ|':>9} {'min cosine':>11}")
    for name in strategies:
        diff = float(np.abs(vectors[name] - vectors["before"]).max())
        cos = float((vectors[name] * vectors["before"]).sum(axis=1).min())
        each = ", ".join(f"{r:.0f}" for r in rates[name])
        print(f"{name:<12} {each:<28} {diff:>9.2e} {cos:>11.7f}")


if __name__ == "__main__":
    main()
