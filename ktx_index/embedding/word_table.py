"""Common English words embedded once per machine, so the bridge (search/bridge.py) looks a question's word up
instead of embedding it: ~1.4 ms a word on the 2-core machine, the main cost left in a question worded in a
business user's words rather than the schema's.

The words are the model's own: every whole, alphabetic entry of its WordPiece vocabulary (21,719 for MiniLM),
the words its pre-training saw often enough to keep whole; they hold 83 % of the judged questions' words that
no project field holds. The int8 model encodes one text per call, so a word of a bulk encode gets the vector it
gets alone, bit for bit: a looked-up word bridges exactly as an embedded one (the float32 model batches them, to
within float rounding). One table per model fingerprint, in the model cache beside the ONNX export
(``onnx_model.cache_dir``); built after the first build on a machine (~15 s on two cores), memory-mapped by every
reader after that.
"""

from __future__ import annotations

import hashlib
import io
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ktx_index.embedding.embedder import Embedder
from ktx_index.embedding.onnx_model import cache_dir
from ktx_index.logs import log_event, write_atomic

LOG = logging.getLogger("ktx_index.embedding.word_table")
#: Words encoded per call of a build, between which a requested stop is honoured.
BUILD_STEP = 1024


@dataclass(frozen=True)
class WordTable:
    rows: dict[str, int]  # word → its row of matrix
    matrix: np.ndarray  # one L2-normalised float32 row per word, read-only

    def get(self, word: str) -> np.ndarray | None:
        row = self.rows.get(word)
        return None if row is None else self.matrix[row]


def table_paths(fingerprint: str) -> tuple[Path, Path]:
    """(words file, vectors file) of a model's table; named by its fingerprint, so a new model or fine-tuned
    delta gets a table of its own."""
    stem = "words-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    base = cache_dir()
    return base / f"{stem}.txt", base / f"{stem}.npy"


def common_words(embedder: Embedder) -> list[str]:
    """The words a model's table holds: its ``common_words()`` (MiniLMEmbedder's vocabulary), none without."""
    source: Callable[[], list[str]] | None = getattr(embedder, "common_words", None)
    return list(source()) if source is not None else []


def load(fingerprint: str, dim: int | None = None) -> WordTable | None:
    """The model's table, or None when none is built on this machine yet, or its files are empty, damaged or do
    not match (rows of ``dim`` values, when given); a missing table is built again (``KtxIndex.ensure_word_table``)."""
    words_path, vectors_path = table_paths(fingerprint)
    if not vectors_path.exists():
        return None
    try:
        matrix = np.load(vectors_path, mmap_mode="r")
        words = words_path.read_text(encoding="utf-8").split("\n")
    except Exception:  # an empty file (EOFError), a bad header: a table is only ever a shortcut
        return None
    if matrix.ndim != 2 or matrix.shape[0] != len(words) or matrix.dtype != np.float32:
        return None
    if dim is not None and matrix.shape[1] != dim:
        return None
    return WordTable({w: i for i, w in enumerate(words)}, matrix)


def build(embedder: Embedder, should_stop: Callable[[], bool] = lambda: False) -> int:
    """Embed the model's common words and write its table (words first, vectors last, each whole, so a reader
    sees a complete table or none); the number of words embedded, 0 when there are none or a stop came first."""
    words = common_words(embedder)
    if not words:
        return 0
    parts = []
    for start in range(0, len(words), BUILD_STEP):
        if should_stop():
            return 0
        parts.append(np.asarray(embedder.encode(words[start : start + BUILD_STEP]), dtype=np.float32))
    matrix = np.concatenate(parts)
    words_path, vectors_path = table_paths(embedder.fingerprint)
    words_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(words_path, "\n".join(words))
    write_atomic(vectors_path, _npy(matrix), durable=True)  # a crash must not leave an empty file behind
    return len(words)


class OncePerProcess:
    """``build`` when the machine has no table, at most once per process however many threads ask (a try
    costs the whole build, ~15 s), and not again after a failure; tried again only when a stop cut it short."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._checked = False  # the table exists, or cannot be built by this process

    def ensure(self, embedder: Embedder, should_stop: Callable[[], bool]) -> int:
        """The words embedded; 0 when the table exists, was checked before, cannot be built or a stop came."""
        if self._checked:
            return 0
        with self._lock:
            if self._checked:
                return 0
            built = 0
            try:
                if load(embedder.fingerprint, embedder.dim) is None:
                    built = build(embedder, should_stop)
            except Exception as exc:  # a broken model or an unwritable cache: the bridge embeds words instead
                log_event(LOG, logging.WARNING, "word_table_failed", error=f"{type(exc).__name__}: {exc}")
                self._checked = True
                return 0
            self._checked = built > 0 or not should_stop()
            return built


def _npy(matrix: np.ndarray) -> bytes:
    """A matrix as the bytes of a .npy file (np.save writes to a file; write_atomic takes bytes)."""
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    return buffer.getvalue()
