"""``status`` against the files on disk now: what changed since the commit, and the watcher's and the gateway's
own accounts, corrected when the process that wrote them is gone."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.index.status import forget_stopped_upstreams
from ktx_index.reports import UpstreamState, WatcherState
from ktx_index.service import KtxIndex

PAGE = "---\nsummary: {0}\n---\nHow {0} is counted.\n"


@pytest.fixture
def built(make_project):
    root = make_project({f"wiki/global/{name}.md": PAGE.format(name) for name in ("orders", "refunds", "depots")})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    yield service
    service.close()


def gone_pid() -> int:
    """The PID of a process that has exited (and been reaped), so no signal reaches it."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_before_the_first_build_nothing_is_counted_and_no_plan_is_made(make_project):
    service = KtxIndex(make_project({"wiki/global/orders.md": PAGE.format("orders")}), embedder=HashEmbedder())
    status = service.status()
    assert not status.exists and status.generation == 0 and status.counts == {}
    assert status.changed_paths == [] and status.watcher is None and status.upstream is None
    service.close()


def test_changed_paths_are_the_edited_added_and_deleted_files_until_the_next_rebuild(built):
    root = built.project.root
    assert built.status().changed_paths == []
    (root / "wiki/global/orders.md").write_text(PAGE.format("orders, now with returns"))
    (root / "wiki/global/couriers.md").write_text(PAGE.format("couriers"))
    (root / "wiki/global/depots.md").unlink()
    status = built.status()
    expected = ["wiki/global/couriers.md", "wiki/global/depots.md", "wiki/global/orders.md"]
    assert status.changed_paths == expected and status.changed_files == 3
    assert status.deleted_paths == ["wiki/global/depots.md"]  # listed as one to read again, with no sign it is gone
    built.rebuild()
    assert built.status().changed_paths == [] == built.status().deleted_paths


def test_an_overlay_deleted_from_its_sources_folder_is_listed_as_deleted(make_project):
    """A connection's semantic-layer files are one scope: a deleted overlay was not listed at all."""
    source = "name: orders\ntable: public.orders\ncolumns:\n  - {name: id, type: number}\n"
    overlay = "name: orders\ndescriptions: {user: Paid orders.}\n"
    root = make_project({"semantic-layer/wh/orders.yaml": source, "semantic-layer/wh/orders_notes.yaml": overlay})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    (root / "semantic-layer/wh/orders_notes.yaml").unlink()
    status = service.status()
    assert "semantic-layer/wh/orders_notes.yaml" in status.changed_paths
    assert status.deleted_paths == ["semantic-layer/wh/orders_notes.yaml"]
    service.close()


def test_what_listing_finds_is_in_status_as_in_the_rebuild_summary(built):
    root = built.project.root
    (root / "wiki/global/Bad Key.md").write_text(PAGE.format("bad"))
    (root / "wiki/global/nested").mkdir()
    expected = {("wiki/global/Bad Key.md", "error"), ("wiki/global/nested", "warning")}
    assert {(d.path, d.code) for d in built.rebuild().diagnostics} == expected
    assert {(d.path, d.code) for d in built.status().diagnostics} == expected


def test_counts_and_chunks_come_from_the_committed_index(built):
    status = built.status()
    assert status.exists and status.generation >= 1 and status.counts == {"wiki": 3}
    assert status.chunks == status.chunks_embedded > 0 and status.model == HashEmbedder().fingerprint


def test_a_watcher_that_is_gone_without_stopping_reads_as_died_whatever_its_file_says(built):
    """A watcher that stops writes its PID away; one whose PID is still there was killed or crashed, and the edits
    it had not committed are still to be indexed."""
    path = built.layout.watcher
    path.write_text(WatcherState(pid=gone_pid(), state="retrying", pending=3, retry_in_s=2.0).model_dump_json())
    watcher = built.status().watcher
    assert (watcher.pid, watcher.state, watcher.pending, watcher.retry_in_s) == (None, "died", 3, None)
    path.write_text(WatcherState(pid=None, state="stopped").model_dump_json())
    assert built.status().watcher.state == "stopped"
    path.write_text(WatcherState(pid=gone_pid(), state="failed", last_error="disk full").model_dump_json())
    watcher = built.status().watcher
    assert watcher.state == "failed" and watcher.last_error == "disk full"  # the verdict outlives the process


def test_a_running_watcher_is_reported_as_it_wrote_itself(built):
    state = WatcherState(pid=os.getpid(), state="running", pending=2, embedding_backlog=True)
    built.layout.watcher.write_text(state.model_dump_json())
    assert built.status().watcher == state


def test_an_unreadable_watcher_file_means_no_watcher(built):
    built.layout.watcher.write_text("{not json")
    assert built.status().watcher is None


def test_the_upstream_of_a_server_that_is_gone_is_stopped(built):
    path = built.layout.upstream(gone_pid())
    path.write_text(
        UpstreamState(pid=gone_pid(), upstream="ktx mcp", state="connected", retry_in_s=1.0).model_dump_json()
    )
    upstream = built.status().upstream
    assert (upstream.pid, upstream.state, upstream.retry_in_s, upstream.upstream) == (None, "stopped", None, "ktx mcp")
    alive = UpstreamState(pid=os.getpid(), upstream="ktx mcp", state="unavailable", attempts=2)
    built.layout.upstream(os.getpid()).write_text(alive.model_dump_json())
    assert built.status().upstreams == [alive]  # a running one hides the gone one
    assert built.status().upstream == alive


def test_two_servers_fronting_one_project_are_both_reported_and_a_new_one_forgets_those_gone(built):
    parent = os.getppid()  # another live process: a second agent's server
    mine = UpstreamState(pid=os.getpid(), upstream="ktx mcp", state="connected", since="2026-12-07T10:00:00Z")
    theirs = UpstreamState(pid=parent, upstream="ktx mcp", state="unavailable", since="2026-12-07T10:05:00Z")
    gone = UpstreamState(pid=gone_pid(), upstream="ktx mcp", state="connected", since="2026-12-07T11:00:00Z")
    for state in (mine, theirs, gone):
        built.layout.upstream(state.pid).write_text(state.model_dump_json())
    assert built.status().upstreams == [theirs, mine]  # the latest to change first
    (built.layout.dir / "upstream.json").write_text(gone.model_dump_json())  # a version before wrote one file
    forget_stopped_upstreams(built.layout)
    assert [p.name for p in built.layout.upstreams()] == sorted(f"upstream-{pid}.json" for pid in (os.getpid(), parent))
    assert not (built.layout.dir / "upstream.json").exists()
