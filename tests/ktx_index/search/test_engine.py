"""The ranking engine itself: query vectors cached per engine, shared read-only between threads, and a model
failure reported but never cached."""

from concurrent.futures import ThreadPoolExecutor

import pytest

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.engine import Engine


class Flaky(HashEmbedder):
    broken = False

    def encode(self, texts):
        if self.broken:
            raise RuntimeError("model gone")
        return super().encode(texts)


def test_query_vectors_are_cached_per_engine_thread_safe_and_failures_retried(demo_service):
    embedder = Flaky()
    engine = Engine(demo_service.layout, embedder)
    first = engine.query_vector("weekly churn")
    assert engine.query_vector("weekly churn") is first and embedder.calls == 1
    with pytest.raises(ValueError):
        first[0] = 1.0  # one array handed to every thread: read-only
    embedder.broken = True
    assert engine.query_vector("refunds") is None and "model gone" in engine.model_error
    embedder.broken = False
    assert engine.query_vector("refunds") is not None and engine.model_error is None  # the failure was not cached
    queries = [f"question {i}" for i in range(600)]  # more than the cache holds: evictions while threads read
    with ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(engine.query_vector, queries * 2))
    assert all(v is not None and v.shape == (embedder.dim,) for v in vectors)
    assert (vectors[0] == embedder.encode(["question 0"])[0]).all()
    engine.close()
