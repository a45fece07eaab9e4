"""A question's embedding for one engine: cached, started ahead on a worker thread, and the calibration probes.

Per engine, so a closed engine's model is not kept alive by a cache; shared by the threads that answer tools
(lru_cache guards its own bookkeeping; every thread gets the same read-only array). A model failure is
reported in ``error`` and never cached: the next question tries the model again. Texts are cached one by one,
so the texts a question will need can be started on the worker ahead (``prefetch``) and picked up later.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import numpy as np

from ktx_index.embedding import word_table
from ktx_index.embedding.embedder import Embedder
from ktx_index.embedding.word_table import WordTable
from ktx_index.search.calibration import PROBES

T = TypeVar("T")
R = TypeVar("R")
#: How often a missing word table is looked for again (serve builds it after its catch-up, while answering).
WORDS_RECHECK_S = 10.0
#: Questions whose embeddings are kept, and texts of ``get_many`` (the carried check's variants, search/carried.py).
CACHED_QUESTIONS = 512
CACHED_TEXTS = 1024
#: A question's embedding that took longer than this says the model is not answering at its usual speed (being
#: loaded, on PyTorch behind a bulk encode, a starved machine): ``quick`` is then False until one is fast again.
QUICK_ENCODE_S = 0.05


class QueryVectors:
    def __init__(self, embedder: Embedder | None) -> None:
        self.embedder = embedder
        #: Why the model gave no vector for the last question (None when it did).
        self.error: str | None = None
        self._cached = functools.lru_cache(maxsize=CACHED_QUESTIONS)(self._encode)
        #: ``get_many``'s texts, apart from the questions: their embeddings do not time the model (``quick``).
        self._texts = functools.lru_cache(maxsize=CACHED_TEXTS)(self._encode_text)
        self._busy = 0  # jobs on the worker not yet done (_submit)
        self._busy_lock = threading.Lock()  # guards _busy, _underway and _unclaimed
        #: Texts asked of get_many or prefetch and not yet embedded → their embedding, once one thread has made it.
        self._underway: dict[str, Future[np.ndarray]] = {}
        self._unclaimed: set[str] = set()  # those of them no thread has started
        self._prefetching = 0  # prefetch jobs on the worker not yet done (counted in _busy too)
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
        vector = self._encode_text(text)
        self._last_encode_s = time.perf_counter() - started
        return vector

    def _encode_text(self, text: str) -> np.ndarray:
        vector = self.embedder.encode([text])[0]  # type: ignore[union-attr]  # asked only with a model
        vector.flags.writeable = False
        return vector

    def _encode_many(self, texts: tuple[str, ...]) -> np.ndarray:
        """Each text's embedding (cached), the worker and this thread taking the missing ones from one list side
        by side, one from each end (onnxruntime releases the GIL): each short text costs about as much as a
        question, so two cores halve the wait. The worker joins only when it holds no other question's job
        (under load it would only queue them); this thread takes every text no thread has started, the ones
        ``prefetch`` gave the worker too. All of them here once closed."""
        distinct = list(dict.fromkeys(texts))
        results = dict(zip(distinct, self._request(distinct), strict=True))
        if len(distinct) > 1 and self._busy <= self._prefetching:  # the worker holds no other question's job
            with contextlib.suppress(RuntimeError):  # closed: all of them here
                self._submit(self._drain, distinct[::-1])  # from the end, while this thread goes from the start
                time.sleep(0)  # hand the GIL over, so the worker starts at once (as in ``ahead``)
        self._drain(distinct)
        vectors = np.vstack([results[text].result() for text in texts]).astype(np.float32, copy=False)  # or raises
        vectors.flags.writeable = False
        return vectors

    def _request(self, texts: Sequence[str]) -> list[Future[np.ndarray]]:
        """Each text's pending embedding: the one under way, or a new one no thread has started."""
        with self._busy_lock:
            out = []
            for text in texts:
                pending = self._underway.get(text)
                if pending is None:
                    pending = self._underway[text] = Future()
                    self._unclaimed.add(text)
                out.append(pending)
            return out

    def _drain(self, texts: Sequence[str]) -> None:
        """Embed the texts no thread has started yet, each claimed before it is embedded: the worker and the
        asking thread share a list without embedding a text twice (questions, ``get`` and ``ahead``, have a
        cache of their own)."""
        for text in texts:
            with self._busy_lock:
                if text not in self._unclaimed:
                    continue
                self._unclaimed.discard(text)
                pending = self._underway[text]
            try:
                vector = self._texts(text)
            except BaseException as exc:  # handed to whoever waits for it; the next ask tries the model again
                self._finish(text)
                pending.set_exception(exc)
                if not isinstance(exc, Exception):  # an interrupt: no waiter is left hanging, and it goes on
                    raise
            else:
                self._finish(text)
                pending.set_result(vector)

    def _finish(self, text: str) -> None:
        """No longer under way: a later ask finds it in the cache (or tries again after a failure)."""
        with self._busy_lock:
            del self._underway[text]

    def prefetch(self, texts: Sequence[str]) -> None:
        """Start embedding texts a question will need on the worker, behind what it holds already (the
        question's own vector, ``ahead``), so they are ready or under way when ``get_many`` asks. Skipped when
        the worker holds more than one job: another question's vector would wait behind these."""
        if self.embedder is None or not texts or self._busy > 1:
            return
        self._request(texts)
        try:
            job = self._submit(self._drain, list(texts))
        except RuntimeError:  # closed: get_many embeds them in line
            return
        with self._busy_lock:
            self._prefetching += 1
        job.add_done_callback(self._prefetched)  # at once when already done

    def _prefetched(self, _finished: Future[None]) -> None:
        with self._busy_lock:
            self._prefetching -= 1

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
        """Several texts' embeddings, one row each (each text cached); None when there is no model or it fails
        (said in ``error``, as for a question; never cached)."""
        if self.embedder is None or not texts:
            return None
        return self._reported(self._encode_many, texts)

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
