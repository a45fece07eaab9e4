"""The embedding backlog (index/backlog.py): texts without a vector are embedded after the commit that made
them, all at once or in slices, and only the changed documents are checked once every text had one. Through
the service, against real stores and the fake embedder."""

import time

import pytest
from projects import PAGE, service_for

from ktx_index.embedding.embedder import HashEmbedder


def test_lexical_first_then_embeddings_catch_up(project):
    """A large first build is searchable lexically at once; the semantic lane says it is catching up."""
    service = service_for(project)
    report = service.rebuild(embed=False)
    assert report.embedding_status == "pending" and report.embedded == 0
    status = service.status()
    assert status.chunks > 0 and status.chunks_embedded == 0 and status.semantic == "skipped"
    assert service.wiki_search("refunds").results[0].key == "revenue"
    done, state = service.embed_pending()
    assert done > 0 and state == "ready"
    status = service.status()
    assert status.chunks_embedded == status.chunks and status.semantic == "available"
    service.close()


def test_searches_stay_consistent_while_embeddings_catch_up(project):
    """Per-snapshot caches (which embedded documents a search may return) follow each slice of new vectors."""
    service = service_for(project)
    service.rebuild(embed=False)
    service.embed_pending(limit=3)
    partial = service.refreshed_engine().snapshot.embedded_docs
    assert 1 < partial < len(service.refreshed_engine().snapshot.doc_uids)
    assert service.discover_data("churn cancellations").refs
    service.embed_pending()
    assert service.refreshed_engine().snapshot.embedded_docs > partial
    refs = service.discover_data("churn cancellations").refs
    assert refs and refs[0].id == "churn"
    service.close()


def test_embedding_under_a_time_budget_stops_after_a_small_batch(project):
    """The watcher embeds a backlog in slices bounded by time, so a file event waits one small batch at most."""
    from ktx_index.index.backlog import BUDGETED_BATCH

    for i in range(BUDGETED_BATCH):
        (project / f"wiki/global/extra-{i}.md").write_text(PAGE.format(summary=f"Extra {i}", body="More text."))
    service = service_for(project)
    service.rebuild(embed=False)
    done, state = service.embed_pending(budget_s=0.0)  # the budget is spent at once: one batch, then stop
    assert (done, state) == (BUDGETED_BATCH, "pending")
    done, state = service.embed_pending()
    assert done > 0 and state == "ready"
    service.close()


def test_vectors_catching_up_are_reloaded_at_a_bounded_rate(project):
    """While a backlog is embedded in slices, a reader whose last vector load was slow waits before the next
    one; the slice that finishes the backlog is always loaded."""
    for i in range(20):
        (project / f"wiki/global/extra-{i}.md").write_text(PAGE.format(summary=f"Extra {i}", body="More text."))
    service = service_for(project)
    service.rebuild(embed=False)
    engine = service.refreshed_engine()
    service.embed_pending(limit=5)
    first = engine.snapshot.embedded_docs
    engine._next_vector_load = time.monotonic() + 60  # as if loading vectors had taken seconds
    service.embed_pending(limit=5)
    assert engine.embedding_status == "pending" and engine.snapshot.embedded_docs == first  # not yet
    service.embed_pending()  # the backlog is done: loaded at once
    assert engine.embedding_status == "ready"
    assert engine.snapshot.embedded_docs == len(engine.snapshot.doc_uids)
    service.close()


def test_once_every_text_has_a_vector_only_changed_documents_are_checked(project, monkeypatch):
    """A commit's embedding step reads the chunks of the documents changed since every text last had a vector,
    not every chunk; a forgotten vector (a repaired vector file) sends it over every chunk again."""
    from ktx_index.index.store import DocStore

    scanned: list[int | None] = []
    whole = DocStore.missing_vector_keys

    def counted(self, among=None):
        scanned.append(None if among is None else len(among))
        return whole(self, among)

    monkeypatch.setattr(DocStore, "missing_vector_keys", counted)
    embedder = HashEmbedder()
    service = service_for(project, embedder)
    service.rebuild()
    (project / "wiki/global/new.md").write_text(PAGE.format(summary="Deliveries", body="Late boxes."))
    scanned.clear()
    report = service.rebuild()
    assert scanned == [1] and report.embedding_status == "ready" and report.embedded > 0
    status = service.status()
    assert status.chunks_embedded == status.chunks
    writer = service.acquire_writer()
    writer.store.vectors.forget_from(0)  # as a repair that lost the vector file would
    scanned.clear()
    done, state = service.embed_pending()
    assert scanned[0] is None and state == "ready" and done > 0
    assert service.status().chunks_embedded == status.chunks
    service.close()


def test_a_failed_rechunk_leaves_no_transaction_open(project, monkeypatch):
    """A new embedding fingerprint re-keys every chunk in one transaction; when that fails, it is rolled back,
    so the next commit (and the next try) can begin its own."""
    from ktx_index.index.store.words import Words

    service_for(project).rebuild()
    service_for(project).close()
    calls = []
    rekey = Words.rekey

    def failing_once(self, key_of):
        calls.append(1)
        if len(calls) == 1:
            raise OSError("disk full")
        return rekey(self, key_of)

    monkeypatch.setattr(Words, "rekey", failing_once)
    service = service_for(project, HashEmbedder(dim=256))  # another fingerprint: every chunk is re-keyed
    service.acquire_writer()  # held across both tries, as a watcher holds it
    with pytest.raises(OSError):
        service.rebuild()
    (project / "wiki/global/new.md").write_text(PAGE.format(summary="Deliveries", body="Late boxes."))
    report = service.rebuild()
    assert report.embedding_status == "ready" and len(calls) == 2
    assert service.wiki_search("late boxes").results[0].key == "new"
    service.release_writer()
    service.close()


class FallingBack(HashEmbedder):
    """An embedder whose faster form fails as it loads, on its first encode (as int8 falls back to float32):
    from then on it writes another vector space, under another fingerprint."""

    def __init__(self) -> None:
        super().__init__()
        self.fingerprint = "hash-int8"

    def encode(self, texts):
        if self.fingerprint == "hash-int8":
            self.fingerprint = "hash-float32"
        return super().encode(texts)


def test_vectors_are_keyed_under_the_form_the_model_fell_back_to(project):
    """The fingerprint was read before the model loaded: float vectors were kept under int8's name for good
    (a code review found it), so a later process running int8 would reuse them for its unchanged texts."""
    service = service_for(project, FallingBack())
    first = service.rebuild()
    status = service.status()
    assert first.embedding_status == "ready" and status.chunks_embedded == status.chunks > 0
    assert status.model == "hash-float32"
    service.close()
    running = HashEmbedder()
    running.fingerprint = "hash-int8"  # a later process whose int8 loads: none of those vectors are its own
    service = service_for(project, running)
    assert service.rebuild().embedded == first.embedded
    service.close()
