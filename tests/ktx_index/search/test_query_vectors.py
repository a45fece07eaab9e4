"""A question's embedding (search/query_vectors.py): cached per engine and shared read-only between threads, a
model failure reported but never cached, started on the worker thread, and in line once closed;
``quick`` once the latest embedding that ran came back fast."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.query_vectors import QUICK_ENCODE_S, QueryVectors


class Flaky(HashEmbedder):
    """Fails while ``broken``; notes which thread embedded each text."""

    broken = False
    delay = 0.0  # seconds each call takes besides (the GIL released, as onnxruntime does)

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, str] = {}

    def encode(self, texts):
        if self.broken:
            raise RuntimeError("model gone")
        time.sleep(self.delay)
        self.threads.update((text, threading.current_thread().name) for text in texts)
        return super().encode(texts)


def test_vectors_are_cached_thread_safe_read_only_and_failures_retried():
    embedder = Flaky()
    vectors = QueryVectors(embedder)
    first = vectors.get("weekly churn")
    assert vectors.get("weekly churn") is first and embedder.calls == 1
    with pytest.raises(ValueError):
        first[0] = 1.0  # one array handed to every thread: read-only
    embedder.broken = True
    assert vectors.get("refunds") is None and "model gone" in vectors.error
    embedder.broken = False
    assert vectors.get("refunds") is not None and vectors.error is None  # the failure was not cached
    questions = [f"question {i}" for i in range(600)]  # more than the cache holds: evictions while threads read
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(vectors.get, questions * 2))
    assert all(v is not None and v.shape == (embedder.dim,) for v in got)
    assert (got[0] == embedder.encode(["question 0"])[0]).all()
    vectors.close()


def test_ahead_embeds_on_the_worker_and_in_line_once_closed():
    embedder = Flaky()
    vectors = QueryVectors(embedder)
    assert vectors.ahead("monthly refunds").result() is vectors.get("monthly refunds")
    assert embedder.threads["monthly refunds"].startswith("ktx-index-query-vector")
    vectors.close()
    assert vectors.ahead("after close").result() is not None  # no worker left: computed here
    assert embedder.threads["after close"] == threading.current_thread().name


def test_no_model_no_vectors():
    vectors = QueryVectors(None)
    assert vectors.get("x") is None and vectors.probes() is None and vectors.ahead("x").result() is None
    vectors.close()


class Slow(HashEmbedder):
    """Takes longer than a quick question's embedding while ``slow``."""

    slow = False

    def encode(self, texts):
        if self.slow:
            time.sleep(QUICK_ENCODE_S * 1.5)
        return super().encode(texts)


def test_quick_only_once_an_embedding_came_back_fast():
    embedder = Slow()
    vectors = QueryVectors(embedder)
    assert not vectors.quick  # nothing embedded yet: the model may still have to load
    vectors.get("weekly churn")
    assert vectors.quick
    embedder.slow = True
    vectors.get("monthly churn")
    assert not vectors.quick
    vectors.get("weekly churn")  # a cached answer says nothing about the model's speed
    assert not vectors.quick
    embedder.slow = False
    vectors.get("refund rate")
    assert vectors.quick
    vectors.close()
    broken = Flaky()
    failing = QueryVectors(broken)
    failing.get("fine")
    broken.broken = True
    failing.get("model gone now")
    assert not failing.quick
    failing.close()
    assert QueryVectors(None).quick  # no model: nothing to wait for


def test_many_texts_are_embedded_on_both_threads_cached_and_in_line_once_closed():
    embedder = Flaky()
    embedder.delay = 0.02  # the worker starts while this thread embeds its first text
    vectors = QueryVectors(embedder)
    texts = ("of each patient", "age of each", "age patient")
    many = vectors.get_many(texts)
    assert many.shape == (3, embedder.dim) and not many.flags.writeable
    threads = {embedder.threads[t] for t in texts}
    assert all((many[i] == embedder.encode([t])[0]).all() for i, t in enumerate(texts))  # rows in order
    assert threading.current_thread().name in threads and any(t.startswith("ktx-index-query-vector") for t in threads)
    calls = embedder.calls
    again = vectors.get_many(texts)
    assert (again == many).all() and embedder.calls == calls  # each text cached
    assert vectors.get_many(texts[1:]).shape == (2, embedder.dim) and embedder.calls == calls
    embedder.broken = True
    assert vectors.get_many(("refunds", "late refunds")) is None and "model gone" in vectors.error
    embedder.broken = False
    assert vectors.get_many(("refunds", "late refunds")) is not None and vectors.error is None  # not cached
    assert vectors.get_many(()) is None
    vectors.close()
    assert vectors.get_many(("after", "close")).shape == (2, embedder.dim)  # no worker left: all here
    assert embedder.threads["close"] == threading.current_thread().name


def test_many_texts_are_embedded_here_alone_while_the_worker_is_busy():
    embedder = Flaky()
    vectors = QueryVectors(embedder)
    release = threading.Event()
    vectors._submit(lambda _: release.wait(5), None)  # another question's embedding holds the worker
    texts = ("of each patient", "age of each", "age patient", "patient", "age", "each")
    many = vectors.get_many(texts)
    release.set()
    assert many.shape == (6, embedder.dim) and {embedder.threads[t] for t in texts} == {threading.current_thread().name}
    vectors.close()


def test_prefetched_texts_are_shared_between_the_worker_and_the_asking_thread():
    embedder = Flaky()
    vectors = QueryVectors(embedder)
    release = threading.Event()
    vectors._submit(lambda _: release.wait(5), None)  # the question's own vector, still on the worker
    vectors.prefetch(["age of each", "of each patient"])  # queued behind it
    assert vectors._busy == 2
    texts = ("of each patient", "age patient", "age of each")
    many = vectors.get_many(texts)  # the worker is held: this thread takes the prefetched ones too
    release.set()
    assert all((many[i] == embedder.encode([t])[0]).all() for i, t in enumerate(texts))
    assert {embedder.threads[t] for t in texts} == {threading.current_thread().name}
    calls = embedder.calls
    vectors.prefetch(["age of each"])  # done already: cached, never embedded again
    assert vectors.get_many(("age of each",)) is not None and embedder.calls == calls
    vectors.close()


class Gated(Flaky):
    """Holds the embedding of a text with 'gated' in it until ``release``."""

    def __init__(self) -> None:
        super().__init__()
        self.started, self.release = threading.Event(), threading.Event()

    def encode(self, texts):
        if "gated" in texts[0]:
            self.started.set()
            self.release.wait(5)
        return super().encode(texts)


def test_a_prefetched_text_is_embedded_on_the_worker_and_waited_for():
    embedder = Gated()
    vectors = QueryVectors(embedder)
    vectors.prefetch(["gated age of each patient"])
    assert embedder.started.wait(5)  # the worker is embedding it
    threading.Timer(0.05, embedder.release.set).start()
    many = vectors.get_many(("gated age of each patient",))  # waits for the worker's, does not embed it again
    assert embedder.threads["gated age of each patient"].startswith("ktx-index-query-vector")
    assert many.shape == (1, embedder.dim) and embedder.calls == 1 and not vectors._underway
    vectors._worker.submit(lambda: None).result()  # the prefetch job's bookkeeping is done
    assert not vectors._prefetching and not vectors._busy
    embedder.broken = True
    vectors.prefetch(["ward"])  # fails on the worker: the failure reaches whoever asks, and is not kept
    assert vectors.get_many(("ward",)) is None and "model gone" in vectors.error
    embedder.broken = False
    assert vectors.get_many(("ward",)) is not None
    release = threading.Event()
    vectors._submit(lambda _: release.wait(5), None)
    vectors._submit(lambda _: release.wait(5), None)  # two questions' vectors on the worker: no prefetch
    vectors.prefetch(["ward of each"])
    release.set()
    assert not vectors._underway
    vectors.close()
    vectors.prefetch(["after close"])  # no worker: nothing started, get_many embeds it here
    assert vectors.get_many(("after close",)) is not None
    assert embedder.threads["after close"] == threading.current_thread().name


class InterruptedOnce(Flaky):
    """Its first embedding is interrupted (a BaseException, as KeyboardInterrupt is)."""

    interrupted = False

    def encode(self, texts):
        if not self.interrupted:
            self.interrupted = True
            raise KeyboardInterrupt
        return super().encode(texts)


def test_an_interrupted_embedding_leaves_no_one_waiting_for_it():
    vectors = QueryVectors(InterruptedOnce())
    vectors.prefetch(["age of each"])  # interrupted on the worker
    vectors._worker.submit(lambda: None).result()
    assert not vectors._underway  # not left under way: the next ask embeds it again instead of waiting forever
    assert vectors.get_many(("age of each",)).shape == (1, vectors.embedder.dim)
    vectors.close()
