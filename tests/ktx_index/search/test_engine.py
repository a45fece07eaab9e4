"""The ranking engine's caches (search/engine.py): what a tool derives per generation, documents per snapshot
(warmed before the first question), and which thread embeds a question."""

from __future__ import annotations

import threading

from projects import column, scan_files, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.engine import Engine
from ktx_index.search.query import Query
from ktx_index.service import KtxIndex

ORDERS = {"catalog": None, "db": "main", "name": "orders", "columns": [column("id", "int"), column("total")]}


def test_what_a_tool_derives_is_built_once_per_generation(make_project):
    root = make_project({"wiki/global/refunds.md": "Refunds are netted.\n"})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    engine = service.refreshed_engine()
    built: list[int] = []

    def build() -> int:
        built.append(engine.snapshot.generation)
        return len(built)

    assert engine.per_generation("counts", build) == 1 and engine.per_generation("counts", build) == 1
    assert engine.per_generation("other", build) == 2  # each name its own
    write_files(root, scan_files("warehouse", "2026-01-01-000000-aaaa", [ORDERS]))
    service.rebuild()
    assert service.refreshed_engine() is engine and engine.per_generation("counts", build) == 3  # a new commit
    assert built[0] < built[2] == engine.snapshot.generation
    service.close()


def test_the_noise_level_a_question_must_clear_depends_on_its_words(make_project):
    """One probe measurement per snapshot, two levels: English words the lower (search/calibration.py)."""
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [ORDERS])), embedder=HashEmbedder()
    )
    service.rebuild()
    engine = service.refreshed_engine()
    snap = engine.snapshot
    english, gibberish = engine.noise(snap, Query.parse("late returns")), engine.noise(snap, Query.parse("zxqv blorp"))
    level = snap.derived["noise"]
    assert (english, gibberish) == (level.english, level.not_english) and english <= gibberish
    service.close()


def test_documents_are_read_once_per_snapshot(make_project):
    service = KtxIndex(make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [ORDERS])), embedder=None)
    service.rebuild()
    engine = service.refreshed_engine()
    uids = [c.uid for c in engine.rank("orders total", ["table", "column"])]
    first = engine.documents(uids)
    again = engine.documents([*reversed(uids), "table:warehouse:missing"])
    assert list(again) == list(reversed(uids)) and all(again[uid] is first[uid] for uid in uids)  # not parsed again
    service.close()


def test_warm_up_reads_the_documents_a_first_answer_returns(make_project):
    """serve warms the reader: the documents behind a first answer are already parsed, none read again."""
    service = KtxIndex(make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [ORDERS])), embedder=None)
    service.rebuild()
    engine = service.refreshed_engine()
    engine.warm()
    uids = [c.uid for c in engine.rank("orders total", ["table", "column"])]
    reads: list[list[str]] = []
    read = engine.store.docs.get_many
    engine.store.docs.get_many = lambda missing: reads.append(missing) or read(missing)  # type: ignore[method-assign]
    assert set(engine.documents(uids)) == set(uids) and reads == []
    service.close()


class Recording(HashEmbedder):
    """Notes which thread embeds each text."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: dict[str, str] = {}

    def encode(self, texts):
        self.threads.update((text, threading.current_thread().name) for text in texts)
        return super().encode(texts)


def test_a_question_is_embedded_while_its_lexical_lane_runs(demo_service):
    embedder = Recording()
    engine = Engine(demo_service.layout, embedder)
    assert engine.rank("monthly refunds by region", ["table", "column"])
    assert embedder.threads["monthly refunds by region"].startswith("ktx-index-query-vector")
    assert engine.rank("refund policy for partners", ["wiki"])
    assert embedder.threads["refund policy for partners"].startswith("ktx-index-query-vector")
    lexical_only = Engine(demo_service.layout, None)
    assert lexical_only.rank("monthly refunds by region", ["table", "column"])  # no model: nothing to embed
    engine.close()
    lexical_only.close()
    assert engine.rank("after close", ["table"]) is not None  # closed: no worker to hand it to
