"""The engine's caches (search/engine.py): what a tool derives per generation, documents per snapshot."""

from __future__ import annotations

from projects import column, scan_files, write_files

from ktx_index.embedding.embedder import HashEmbedder
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


def test_documents_are_read_once_per_snapshot(make_project):
    service = KtxIndex(make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [ORDERS])), embedder=None)
    service.rebuild()
    engine = service.refreshed_engine()
    uids = [c.uid for c in engine.rank("orders total", ["table", "column"])]
    first = engine.documents(uids)
    again = engine.documents([*reversed(uids), "table:warehouse:missing"])
    assert list(again) == list(reversed(uids)) and all(again[uid] is first[uid] for uid in uids)  # not parsed again
    service.close()
