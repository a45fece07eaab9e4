"""A question's embedding for one engine: cached, started ahead on a worker thread, and the calibration probes.

Per engine, so a closed engine's model is not kept alive by a cache; shared by the threads that answer tools
(lru_cache guards its own bookkeeping; every thread gets the same read-only array). A model failure is
reported in ``error`` and never cached: the next question tries the model again.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from ktx_index.embedding import word_table
from ktx_index.embedding.embedder import SINGLE_THREAD_BATCH, Embedder
from ktx_index.embedding.word_table import WordTable
from ktx_index.search.calibration import PROBES

T = TypeVar("T")
R = TypeVar("R")
#: How often a missing word table is looked for again (serve builds it after its catch-up, while answering).
WORDS_RECHECK_S = 10.0
#: A question's embedding that took longer than this says the model is not answering at its usual speed (being
#: loaded, on PyTorch behind a bulk encode, a starved machine): ``quick`` is then False until one is fast again.
QUICK_ENCODE_S = 0.05


class QueryVectors:
    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        #: Why the model gave no vector for the last question (None when it did).
        self.error: str | None = None
        self._cached = functools.lru_cache(maxsize=512)(self._encode)
        self._cached_many = functools.lru_cache(maxsize=128)(self._encode_many)
        self._busy = 0  # jobs on the worker not yet done (_submit)
        self._busy_lock = threading.Lock()
        self._last_encode_s: float | None = None  # how long the latest embedding that ran took (None: none yet)
        #: Embeds a question on the other core while its lexical lane runs (``ahead``); its thread starts
        #: with the first question.
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="ktx-index-query-vector")
        self._probes: np.ndarray | None = None
        self._words: WordTable | None = None
        self._words_looked = -WORDS_RECHECK_S  # when the table was last looked for (monotonic seconds)

    @property
    def quick(self) -> bool:
        """Whether the next question's embedding should take milliseconds: there is no model, or the latest one
        that ran came back within QUICK_ENCODE_S and did not fail. The MCP server answers a search on its event
        loop only then (service.answers_at_once)."""
        if self.embedder is None:
            return True
        return self.error is None and self._last_encode_s is not None and self._last_encode_s <= QUICK_ENCODE_S

    def _encode(self, text: str) -> np.ndarray:
        started = time.perf_counter()
        self._last_encode_s = None  # a failure below leaves it unknown, so not quick
        vector = self.embedder.encode([text])[0]  # type: ignore[union-attr]  # get() asks only with a model
        vector.flags.writeable = False
        self._last_encode_s = time.perf_counter() - started
        return vector

    def _encode_many(self, texts: tuple[str, ...]) -> np.ndarray:
        """Half the texts on the worker, half on this thread, side by side (onnxruntime releases the GIL): each
        short text costs about as much as a question, so two cores halve the wait. All of them here when the
        worker is busy with other questions (under load it would only queue them) or closed. Each call embeds at
        most SINGLE_THREAD_BATCH texts, so it runs on the query session, never loads the bulk one."""
        encode = self.embedder.encode  # type: ignore[union-attr]  # get_many asks only with a model
        half = (len(texts) + 1) // 2
        rest: Future[np.ndarray] | None = None
        if len(texts) > 1 and not self._busy:
            with contextlib.suppress(RuntimeError):  # closed: all of them here
                rest = self._submit(encode, list(texts[half:]))
        mine = texts[:half] if rest is not None else texts
        parts = [encode(list(mine[i : i + SINGLE_THREAD_BATCH])) for i in range(0, len(mine), SINGLE_THREAD_BATCH)]
        if rest is not None:
            parts.append(rest.result())
        vectors = np.asarray(np.vstack(parts), dtype=np.float32)
        vectors.flags.writeable = False
        return vectors

    def _submit(self, job: Callable[[T], R], arg: T) -> Future[R]:
        """``job(arg)`` on the worker, counted in ``_busy`` until done (RuntimeError once closed)."""
        with self._busy_lock:
            started = self._worker.submit(job, arg)
            self._busy += 1
        started.add_done_callback(self._done)
        return started

    def _done(self, _finished: Future[Any]) -> None:
        with self._busy_lock:
            self._busy -= 1

    def word(self, word: str) -> np.ndarray | None:
        """A word's embedding for the bridge: from the model's word table when this machine has built it
        (embedding/word_table.py; the same vector, without the ~1.4 ms encode), else embedded like a question."""
        if self.embedder is not None:
            if self._words is None and time.monotonic() - self._words_looked >= WORDS_RECHECK_S:
                self._words_looked = time.monotonic()  # looked for again until it exists: serve builds it late
                self._words = word_table.load(self.embedder.fingerprint, self.embedder.dim)
            found = self._words.get(word) if self._words is not None else None
            if found is not None:
                return found
        return self.get(word)

    def get(self, text: str) -> np.ndarray | None:
        """The text's embedding (cached), or None when there is no model or it fails (lexical-only then)."""
        if self.embedder is None:
            return None
        return self._reported(self._cached, text)

    def get_many(self, texts: tuple[str, ...]) -> np.ndarray | None:
        """Several texts' embeddings, one row each (cached by the texts); None when there is no model or it
        fails (said in ``error``, as for a question; never cached)."""
        if self.embedder is None or not texts:
            return None
        return self._reported(self._cached_many, texts)

    def _reported(self, cached: Callable[[T], np.ndarray], arg: T) -> np.ndarray | None:
        """``cached(arg)``, a failure said in ``error`` and returned as None (not cached: the next question
        tries the model again)."""
        try:
            vectors = cached(arg)
        except Exception as exc:
            self.error = f"embedding model unavailable ({type(exc).__name__}: {exc}); searching lexically"
            return None
        self.error = None
        return vectors

    def ahead(self, text: str) -> Future[np.ndarray | None]:
        """The text's embedding, started on the worker thread so the asking thread goes on meanwhile
        (onnxruntime releases the GIL; docs/benchmarks.md, thirteenth session); once closed (a question racing
        a close), computed here and handed back done."""
        with contextlib.suppress(RuntimeError):
            started = self._submit(self.get, text)
            # Hand the GIL over now, so the worker starts the embedding at once instead of at the next
            # forced switch (up to 5 ms later): p50 4.3 -> 4.1 ms, p95 6.3 -> 5.3 ms on orbit's questions.
            time.sleep(0)
            return started
        done: Future[np.ndarray | None] = Future()
        done.set_result(self.get(text))
        return done

    def probes(self) -> np.ndarray | None:
        """The off-topic probe questions embedded (search/calibration.py), or None without a model."""
        if self._probes is None and self.embedder is not None:
            try:
                self._probes = np.asarray(self.embedder.encode(list(PROBES)), dtype=np.float32)
            except Exception:  # the question's vector reports a broken model; the noise level is then unknown
                return None
        return self._probes

    def close(self) -> None:
        self._worker.shutdown(wait=True)
