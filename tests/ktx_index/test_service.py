"""KtxIndex: one writer per process as well as per machine."""

from __future__ import annotations

import threading
import time

from projects import column, scan_files, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.index.builder import Builder
from ktx_index.search import learned
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex


def test_every_write_path_of_one_process_runs_alone(make_project, monkeypatch):
    """Rebuilds, repairs and embedding slices from several threads (an MCP worker beside the watcher thread)
    never overlap: each waits for the write in progress instead of writing beside it."""
    files = {f"wiki/global/page-{i}.md": f"---\nsummary: Page {i}\n---\nText {i} about refunds.\n" for i in range(20)}
    root = make_project(files)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    inside: dict[int, int] = {}  # thread → nesting depth (a rebuild embeds through embed_pending itself)
    overlaps: list[int] = []
    guard = threading.Lock()

    def watched(method):
        def run(self, *args, **kwargs):
            me = threading.get_ident()
            with guard:
                inside[me] = inside.get(me, 0) + 1
                overlaps.append(len(inside))
            time.sleep(0.005)  # widen the window a second writer would use
            try:
                return method(self, *args, **kwargs)
            finally:
                with guard:
                    inside[me] -= 1
                    if not inside[me]:
                        del inside[me]

        return run

    monkeypatch.setattr(Builder, "rebuild", watched(Builder.rebuild))
    monkeypatch.setattr(Builder, "embed_pending", watched(Builder.embed_pending))
    service.acquire_writer()  # held, as the watcher holds it

    def writer(n: int) -> None:
        for i in range(5):
            (root / f"wiki/global/page-{n}.md").write_text(f"---\nsummary: Page {n}\n---\nEdit {i} of {n}.\n")
            service.rebuild(embed=False)
            service.embed_pending(limit=4)
            service._repair("test: a reader found damage")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(overlaps) >= 4 * 5 * 3 and max(overlaps) == 1
    service.close()


def test_reads_refresh_without_writing(make_project):
    root = make_project({"wiki/global/a.md": "---\nsummary: A\n---\nAlpha.\n"})
    writer = KtxIndex(root, embedder=HashEmbedder())
    writer.rebuild()
    reader = KtxIndex(root, embedder=HashEmbedder())
    generation = reader.refreshed_engine().snapshot.generation
    (root / "wiki/global/b.md").write_text("---\nsummary: B\n---\nBeta.\n")
    assert reader.wiki_search("beta").totalFound == 0  # the reader does not index files: only writers do
    assert not reader.writing and reader.refreshed_engine().snapshot.generation == generation
    writer.rebuild()
    assert reader.wiki_search("beta").totalFound == 1  # and sees the writer's commit on its next call
    writer.close()
    reader.close()


def test_a_search_answers_at_once_only_warm_and_current(make_project):
    """answers_at_once (the MCP server's cue to answer on its event loop) holds only for a tool already
    answered on the loaded snapshot, with nothing committed since; never before the index exists or once
    the service is stopping."""
    root = make_project({"wiki/global/a.md": "---\nsummary: Alpha\n---\nAlpha.\n"})
    service = KtxIndex(root, embedder=HashEmbedder())
    assert not service.answers_at_once("discover_data")  # no engine yet: the first call builds the index
    service.discover_data("alpha")
    assert service.answers_at_once("discover_data")
    assert not service.answers_at_once("wiki_search")  # its own per-snapshot data is not derived yet
    service.wiki_search("alpha")
    assert service.answers_at_once("wiki_search")
    writer = KtxIndex(root, embedder=HashEmbedder())
    (root / "wiki/global/b.md").write_text("---\nsummary: Beta\n---\nBeta.\n")
    writer.rebuild()  # another process commits: the next call loads it, so not at once
    assert not service.answers_at_once("discover_data") and not service.answers_at_once("wiki_search")
    assert service.wiki_search("beta").totalFound == 1
    assert service.answers_at_once("wiki_search") and not service.answers_at_once("discover_data")
    service.request_stop()
    assert not service.answers_at_once("wiki_search")
    writer.close()
    service.close()


def test_work_asked_for_while_the_service_closes_never_touches_it(tmp_path):
    """serve's warm-up starting as a signal closes the service used the store as it closed (a segfault)."""
    service = KtxIndex(write_files(tmp_path, {"ktx.yaml": "connections: {}\n"}), embedder=HashEmbedder())
    ran = threading.Event()
    service.request_stop()  # what close does first
    service.in_background("late", ran.set).join(5)
    assert not ran.is_set()
    service.close()
    service.in_background("after", ran.set).join(5)  # a closed service is usable again
    assert ran.is_set()


def test_warming_the_reader_builds_what_the_first_calls_would(make_project):
    """serve's warm-up answers a discover and a wiki question, so the per-snapshot derivations exist before the
    first real call; the dictionary's value index (~1 s at 100k columns) is left to the first dictionary call."""
    root = make_project({"wiki/global/a.md": "---\nsummary: A\n---\nAlpha.\n"})
    KtxIndex(root, embedder=HashEmbedder()).rebuild()
    service = KtxIndex(root, embedder=HashEmbedder())
    built: list[str] = []
    engine = service.refreshed_engine()
    derive = engine.per_generation
    engine.per_generation = lambda name, build: derive(name, lambda: built.append(name) or build())  # type: ignore[method-assign]
    service.warm_reader()
    assert "groups" in engine.snapshot.derived and built == []  # the dense lane's chunk groups
    service.dictionary_search(["alpha"])
    assert built == ["dictionary"]
    service.close()


def test_under_serve_a_first_build_answers_before_its_texts_are_embedded(make_project):
    """serve sets embed_first_build_later: with --no-build on a project nobody indexed, the first call commits the
    lexical index and answers (no embed stage before it), and the texts are embedded in the background."""
    root = make_project({"wiki/global/a.md": "---\nsummary: Alpha\n---\nAlpha.\n"})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.embed_first_build_later = True
    stages: list[str] = []
    assert service.discover_data("alpha", on_progress=lambda stage, done, total: stages.append(stage)).refs
    assert "parse" in stages and "embed" not in stages
    deadline = time.monotonic() + 30
    while (status := service.status()).chunks_embedded < status.chunks and time.monotonic() < deadline:
        time.sleep(0.05)
    assert status.chunks and status.chunks_embedded == status.chunks
    service.close()


def test_a_call_waiting_on_another_calls_first_build_hears_its_progress(make_project):
    """Two calls on a project nobody indexed: the second waits for the first one's build, and its progress
    callback hears that build from when it started waiting (an MCP client that restarts its timeout on progress
    is not left silent); once built, nothing more reaches either."""
    root = make_project({f"wiki/global/p{i}.md": f"---\nsummary: Page {i}\n---\nAlpha {i}.\n" for i in range(5)})
    service = KtxIndex(root, embedder=HashEmbedder())
    first: list[str] = []
    second: list[str] = []
    waiting = threading.Event()

    def builder_hears(stage: str, done: int, total: int) -> None:
        first.append(stage)
        if len(first) == 1:  # hold the build until the second call waits on it
            assert waiting.wait(10)
            deadline = time.monotonic() + 10
            while len(service._first_build._listeners) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)

    def second_call() -> None:
        waiting.set()
        service.discover_data("alpha", on_progress=lambda stage, done, total: second.append(stage))

    builder = threading.Thread(target=service.discover_data, args=("alpha",), kwargs={"on_progress": builder_hears})
    builder.start()
    while not first:
        time.sleep(0.01)
    waiter = threading.Thread(target=second_call)
    waiter.start()
    builder.join(30)
    waiter.join(30)
    assert second and set(second) <= set(first) and second[-1] == first[-1]
    assert not service._first_build._listeners
    heard = len(second)
    service.discover_data("alpha", on_progress=lambda stage, done, total: second.append(stage))
    assert len(second) == heard  # built: no progress
    service.close()


def test_the_order_follows_a_semantic_layer_gaining_and_losing_its_measures(make_project):
    """``snapshot.curated`` is read once per snapshot: an update that adds the project's first measure, or removes
    its last, switches the learned order of the running service (the engine's snapshot moves by a delta)."""
    source = "name: orders\ntable: public.orders\ncolumns:\n  - {name: status, type: string}\n"
    tables = [  # enough documents that one changed file is applied as a delta, not loaded whole
        {"catalog": None, "db": "public", "name": f"t{i}", "columns": [column("id", "int"), column("name")]}
        for i in range(12)
    ]
    root = make_project(
        {**scan_files("warehouse", "2026-01-01-000000-local-a", tables), "semantic-layer/warehouse/orders.yaml": source}
    )
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    assert service.status().ranker == learned.fingerprint()
    (root / "semantic-layer/warehouse/orders.yaml").write_text(source + "measures:\n  - {name: n, expr: count(*)}\n")
    service.rebuild()
    assert service.status().ranker == learned.fingerprint(PARAMS.curated_ranker)
    (root / "semantic-layer/warehouse/orders.yaml").write_text(source)
    service.rebuild()
    assert service.status().ranker == learned.fingerprint()
    service.close()


def test_an_index_home_keeps_the_project_untouched(make_project, tmp_path, monkeypatch):
    root = make_project({"wiki/global/a.md": "---\nsummary: Alpha\n---\nAlpha.\n"})
    monkeypatch.setenv("KTX_INDEX_HOME", str(tmp_path / "indexes"))
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    assert service.wiki_search("alpha").totalFound == 1
    status = service.status()
    assert status.index_path.startswith(str(tmp_path / "indexes")) and status.index_elsewhere == "KTX_INDEX_HOME is set"
    assert not (root / ".ktx").exists()
    service.close()
