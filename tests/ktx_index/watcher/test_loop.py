"""The watch daemon against real filesystem events: no mocked watcher, no mocked filesystem.

Each test runs a ``Watcher`` in a thread (``start_in_thread``) over a small project in tmp_path,
does what editors, git and the scanner really do to the files, and polls a second, read-only
``KtxIndex`` on the same folder (bounded: ``WAIT`` seconds in ``STEP`` steps) until the change is
searchable. Commits are counted through ``Watcher(on_batch=...)``. The CLI tests run
``ktx-index watch`` / ``serve`` as subprocesses beside a watcher that holds the index.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
import watchfiles
from mcp import Client, StdioServerParameters, stdio_client
from projects import ORDERS_SOURCE as SOURCE
from projects import column, scan_files, table_file, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import IndexBusy
from ktx_index.reports import RebuildReport
from ktx_index.service import KtxIndex
from ktx_index.watcher import Watcher

pytestmark = pytest.mark.slow  # real inotify events, debounce windows and subprocesses: ~30 s in all

KTX_INDEX = Path(sys.executable).parent / "ktx-index"
WAIT = 10.0  # seconds any single change may take to become searchable
STEP = 0.05
QUIET = 0.8  # longer than the watcher's debounce (0.4 s) plus its idle wake-up (0.5 s) minus slack
ARM = 0.3  # the watch is armed after `ready` is set (see test_edit_during_the_initial_catch_up_is_indexed)

CONFIG = "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n"
SYNC_A = "2026-01-01-000000-local-a"
SYNC_B = "2026-02-01-000000-local-b"
ORDERS = {
    "catalog": None, "db": "public", "name": "orders", "kind": "table", "comment": "Customer orders",
    "columns": [column("id", "integer", "number"), column("status", comment="Order state")], "foreignKeys": [],
}  # fmt: skip
ZEBRA = {**ORDERS, "name": "zebra_shipments", "comment": "Parcels shipped by zebra", "columns": [column("carrier")]}


def page(summary: str, body: str) -> str:
    return f"---\nsummary: {summary}\ntags: [ops]\n---\n# {summary}\n\n{body}\n"


def token(prefix: str, i: int) -> str:
    """A nonsense word per page, letters only (digits would be split off by the analyzer)."""
    return prefix + "".join("abcdefghij"[int(d)] for d in f"{i:03d}")


BASE = {
    "wiki/global/revenue.md": page("Revenue definition", "Revenue is net of refunds, see zorblat."),
    "wiki/global/churn.md": page("Churn definition", "Churn counts cancellations, see quuxify."),
    "semantic-layer/warehouse/orders.yaml": SOURCE,
    **scan_files("warehouse", SYNC_A, [ORDERS]),
}


def atomic_write(path: Path, text: str) -> None:
    """What most editors do: write a temp file beside the target, then rename it over the target."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:.0f}s: {what}")
        time.sleep(STEP)


def epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC).timestamp()


@dataclass
class Watch:
    """One watcher thread holding the index, and a separate reader on the same folder."""

    root: Path
    service: KtxIndex
    watcher: Watcher
    reader: KtxIndex
    batches: list[tuple[float, RebuildReport]] = field(default_factory=list)

    @property
    def commits(self) -> int:
        return len(self.batches)

    def keys(self, query: str, limit: int = 50) -> list[str]:
        return [r.key for r in self.reader.wiki_search(query, limit).results]

    def wait_key(self, query: str, key: str, timeout: float = WAIT) -> None:
        wait_for(lambda: key in self.keys(query), f"wiki page {key!r} found by {query!r}", timeout)

    def indexed(self, uid: str) -> Any:
        return self.reader.refreshed_engine().store.docs.get(uid)

    def state(self) -> dict[str, Any]:
        return json.loads(self.service.layout.watcher.read_text())

    def settle(self, timeout: float = WAIT) -> None:
        """Until no batch arrived for QUIET seconds, the watcher has nothing pending and every text is embedded."""

        def quiet() -> bool:
            last = self.batches[-1][0] if self.batches else 0.0
            if time.monotonic() - last <= QUIET or self.state()["pending"] != 0:
                return False
            status = self.reader.status()
            return status.chunks_embedded == status.chunks

        wait_for(quiet, "the watcher to settle", timeout)

    def next_commit(self, after: int, what: str) -> RebuildReport:
        wait_for(lambda: self.commits > after, f"a commit after {what}")
        return self.batches[after][1]


@pytest.fixture
def start_watch() -> Iterator[Callable[[Path], Watch]]:
    started: list[Watch] = []

    def start(root: Path, **kwargs: Any) -> Watch:
        service = KtxIndex(root, embedder=HashEmbedder())
        batches: list[tuple[float, RebuildReport]] = []
        watcher = Watcher(service, on_batch=lambda report: batches.append((time.monotonic(), report)), **kwargs)
        watch = Watch(root, service, watcher, KtxIndex(root, embedder=HashEmbedder()), batches)
        started.append(watch)
        watcher.start_in_thread()
        assert watcher.ready.wait(WAIT), "the watcher's catch-up commit did not finish"
        time.sleep(ARM)
        return watch

    yield start
    errors = []
    for watch in started:
        watch.watcher.stop()
        thread = watch.watcher._thread
        if thread is not None and thread.is_alive():
            errors.append("the watcher thread did not stop")
        if watch.watcher.error is not None:
            errors.append(f"the watcher thread died: {watch.watcher.error!r}")
        watch.reader.close()
        watch.service.close()
    assert not errors, errors


@pytest.fixture
def watched(make_project: Callable[..., Path], start_watch: Callable[[Path], Watch]) -> Watch:
    return start_watch(make_project(BASE, config=CONFIG))


# ------------------------------------------------------------------ start and status


def test_catch_up_on_start_and_status_names_the_watcher(watched: Watch) -> None:
    assert watched.commits == 1 and watched.batches[0][1].added > 0  # the catch-up commit
    assert watched.keys("zorblat")[0] == "revenue"
    status = watched.reader.status()
    assert status.writer_pid == os.getpid()
    assert status.watcher is not None and status.watcher.pid == os.getpid()
    assert status.watcher.pending == 0 and status.watcher.last_commit is not None
    assert status.changed_files == 0 and status.stale == [] and status.diagnostics == []


def test_stopped_watcher_is_reported_as_not_running(make_project, start_watch) -> None:
    watch = start_watch(make_project(BASE, config=CONFIG))
    watch.watcher.stop()
    status = watch.reader.status()
    assert status.watcher is not None and status.watcher.pid is None and status.writer_pid is None
    assert status.watcher.last_commit is not None  # the history stays readable


# ------------------------------------------------------------------ editor saves


def test_create_page(watched: Watch) -> None:
    before = watched.commits
    (watched.root / "wiki/global/refunds.md").write_text(page("Refunds", "How refunds work: flibbertine."))
    watched.wait_key("flibbertine", "refunds")
    assert not watched.next_commit(before, "the new page").targeted  # a new file: listed again in full
    assert watched.indexed("wiki:global:refunds").summary == "Refunds"


def test_atomic_save_arrives_as_added(watched: Watch) -> None:
    before = watched.commits
    atomic_write(watched.root / "wiki/global/revenue.md", page("Revenue v2", "Gross revenue, see wobbleflux."))
    watched.wait_key("wobbleflux", "revenue")
    doc = watched.indexed("wiki:global:revenue")
    assert doc.summary == "Revenue v2" and "zorblat" not in doc.body
    report = watched.next_commit(before, "the atomic save")  # reported a moment after readers see the commit
    assert (report.added, report.updated, report.deleted) == (0, 1, 0)  # same page updated, not re-created
    assert report.targeted  # planned from the saved path alone


def test_rename_is_delete_plus_add_in_one_commit(watched: Watch) -> None:
    before = watched.commits
    os.rename(watched.root / "wiki/global/churn.md", watched.root / "wiki/global/attrition.md")
    watched.wait_key("quuxify", "attrition")
    assert "churn" not in watched.keys("quuxify")
    assert watched.indexed("wiki:global:churn") is None
    # the commit is visible to readers a moment before the watcher's batch callback runs
    wait_for(lambda: watched.batches[before:], "the watcher to report its batch")
    reports = [r for _, r in watched.batches[before:]]
    assert any(r.added == 1 and r.deleted == 1 for r in reports), reports  # both halves in one commit


def test_an_edit_inside_a_wiki_that_is_a_symlink_is_committed(make_project, start_watch) -> None:
    """``wiki -> docs/wiki``: rebuild indexes its pages. (Until this test the watcher dropped their events: it read
    the tree from the resolved path, ``docs/``, so an edit waited for the idle plan two minutes later.)"""
    files = {(f"docs/{rel}" if rel.startswith("wiki/") else rel): text for rel, text in BASE.items()}
    root = make_project(files, config=CONFIG)
    os.symlink(root / "docs/wiki", root / "wiki")
    watch = start_watch(root)
    assert watch.keys("zorblat") == ["revenue"]  # the catch-up read the pages through the link
    before = watch.commits
    atomic_write(root / "wiki/global/revenue.md", page("Revenue v2", "Gross revenue, see snorkelwig."))
    watch.wait_key("snorkelwig", "revenue")
    assert watch.next_commit(before, "the edit through the link").updated == 1


def test_delete_page(watched: Watch) -> None:
    os.remove(watched.root / "wiki/global/churn.md")
    wait_for(lambda: watched.indexed("wiki:global:churn") is None, "the deleted page to leave the index")
    assert "churn" not in watched.keys("quuxify")
    assert watched.reader.status().counts["wiki"] == 1


def test_broken_save_keeps_the_last_good_page_flagged_stale_until_repaired(watched: Watch) -> None:
    path = watched.root / "wiki/global/revenue.md"
    atomic_write(path, "---\nsummary: [broken\n---\nRevenue rewritten, see snorkelwick.\n")
    stale = wait_for(lambda: watched.reader.status().stale, "status to flag the broken page stale")
    assert [s.path for s in stale] == ["wiki/global/revenue.md"]
    assert "frontmatter" in stale[0].reason  # the parse error itself
    assert watched.keys("zorblat")[0] == "revenue"  # the last good version is still searchable
    assert "revenue" not in watched.keys("snorkelwick")
    status = watched.reader.status()
    assert any(d.path == "wiki/global/revenue.md" and d.code == "parse_error" for d in status.diagnostics)

    atomic_write(path, page("Revenue repaired", "Revenue after repair, see snorkelwick."))
    watched.wait_key("snorkelwick", "revenue")
    status = watched.reader.status()
    assert status.stale == [] and status.diagnostics == []
    assert "zorblat" not in watched.indexed("wiki:global:revenue").body


def test_broken_source_stays_stale_until_deleted(watched: Watch) -> None:
    path = watched.root / "semantic-layer/warehouse/orders.yaml"
    path.write_text(SOURCE.replace("measures:", "measures: [\n"))  # an in-place save that no longer parses
    stale = wait_for(lambda: watched.reader.status().stale, "status to flag the broken source stale")
    assert {s.path for s in stale} == {"semantic-layer/warehouse/orders.yaml"}
    assert watched.reader.discover_data("order_count").refs[0].id == "orders.order_count"

    os.remove(path)
    wait_for(lambda: not watched.reader.status().stale, "the deleted file's stale documents to go")
    assert watched.indexed("sl_source:warehouse:orders") is None
    assert "orders.order_count" not in [r.id for r in watched.reader.discover_data("order_count").refs]


def test_editor_temp_files_and_dot_ktx_cause_no_commit(watched: Watch) -> None:
    watched.settle()
    before, counts = watched.commits, watched.reader.status().counts
    temps = [
        "wiki/global/.revenue.md.swp",  # vim swap
        "wiki/global/revenue.md~",  # backup
        "wiki/global/4913",  # vim's write probe
        "wiki/global/#revenue.md#",  # emacs autosave
        "wiki/global/.#revenue.md",  # emacs lock
        "wiki/global/revenue.md.tmp",
        "semantic-layer/warehouse/orders.yaml.swp",
        "semantic-layer/warehouse/.orders.yaml.swx",
    ]
    for rel in temps:
        (watched.root / rel).write_text(page("Temp", "half written tempblorp"))
    (watched.root / ".ktx/notes.md").write_text("not watched")
    for rel in temps:
        (watched.root / rel).unlink()
    time.sleep(2 * QUIET)
    assert watched.commits == before, [r for _, r in watched.batches[before:]]
    status = watched.reader.status()
    assert status.counts == counts and status.diagnostics == [] and watched.keys("tempblorp") == []


def test_vim_style_save_through_a_backup_rename(watched: Watch) -> None:
    """vim with backupcopy=no: probe 4913, rename the page to page~, write a new page, drop page~."""
    wiki = watched.root / "wiki/global"
    (wiki / "4913").write_text("")
    (wiki / "4913").unlink()
    os.rename(wiki / "churn.md", wiki / "churn.md~")
    (wiki / "churn.md").write_text(page("Churn v2", "Churn after vim, see glimmerdash."))
    (wiki / "churn.md~").unlink()
    watched.wait_key("glimmerdash", "churn")
    watched.settle()
    status = watched.reader.status()
    assert status.stale == [] and status.diagnostics == [] and status.counts["wiki"] == 2


# ------------------------------------------------------------------ bursts


def test_burst_of_200_pages_few_commits_all_searchable_status_truthful(watched: Watch) -> None:
    watched.settle()
    before = watched.commits
    first_write = time.time()
    for i in range(200):
        (watched.root / f"wiki/global/burst-{i:03d}.md").write_text(page(f"Burst {i}", f"Page {token('zq', i)}."))
    last_write = time.time()
    wait_for(lambda: watched.reader.status().counts.get("wiki") == 202, "all 200 pages in the index", 30)
    watched.settle()
    commits = watched.commits - before
    assert commits <= 20, f"{commits} commits for 200 files"
    missing = [i for i in range(200) if f"burst-{i:03d}" not in watched.keys(token("zq", i), limit=5)]
    assert missing == []

    state = watched.state()
    status = watched.reader.status()
    assert status.watcher is not None and status.watcher.pid == os.getpid()
    assert status.watcher.pending == 0 and status.changed_files == 0
    assert epoch(status.watcher.last_commit) >= last_write - 0.001  # stamps have millisecond precision
    assert first_write - 0.001 <= epoch(status.watcher.last_event) <= epoch(status.watcher.last_commit)
    assert state["last_report"]["generation"] == status.generation


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed (a system tool, not a pip dependency)")
def test_git_checkout_of_hundreds_of_files(make_project, start_watch) -> None:
    files = dict(BASE)
    files |= {f"wiki/global/page-{i:03d}.md": page(f"Page {i}", f"Main {token('mq', i)}.") for i in range(150)}
    root = make_project(files, config=CONFIG)

    def git(*args: str) -> None:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
        env["GIT_COMMITTER_EMAIL"] = "t@t"
        subprocess.run(
            ["git", "-c", "init.defaultBranch=main", *args], cwd=root, env=env, check=True, capture_output=True
        )

    (root / ".gitignore").write_text(".ktx/\n")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "main")
    git("checkout", "-qb", "feature")
    for i in range(100):  # 100 edited, 50 deleted, 50 added: 200 files touched
        (root / f"wiki/global/page-{i:03d}.md").write_text(page(f"Page {i} v2", f"Feature {token('fq', i)}."))
    for i in range(100, 150):
        (root / f"wiki/global/page-{i:03d}.md").unlink()
    for i in range(150, 200):
        (root / f"wiki/global/page-{i:03d}.md").write_text(page(f"Page {i}", f"Added {token('fq', i)}."))
    git("add", "-A")
    git("commit", "-qm", "feature")
    git("checkout", "-q", "main")

    watch = start_watch(root)
    assert watch.reader.status().counts["wiki"] == 152
    watch.settle()
    before = watch.commits
    git("checkout", "-q", "feature")
    wait_for(lambda: watch.reader.status().counts.get("wiki") == 152 and watch.keys(token("fq", 0)), "the checkout")
    watch.settle()
    commits = watch.commits - before
    assert commits <= 5, f"{commits} commits for one checkout"
    docs = watch.reader.refreshed_engine().store.docs.get_many([f"wiki:global:page-{i:03d}" for i in range(200)])
    assert sorted(docs) == [f"wiki:global:page-{i:03d}" for i in (*range(100), *range(150, 200))]
    assert all(token("fq", int(uid[-3:])) in doc.body for uid, doc in docs.items())
    assert watch.reader.status().changed_files == 0


# ------------------------------------------------------------------ scan snapshots


def test_new_scan_snapshot_is_used_only_once_scan_report_exists(watched: Watch) -> None:
    watched.settle()
    files = scan_files("warehouse", SYNC_B, [{**ORDERS, "comment": "Orders from the rescan"}, ZEBRA])
    report_rel = next(rel for rel in files if rel.endswith("scan-report.json"))
    base = f"raw-sources/warehouse/live-database/{SYNC_B}"
    order = [f"{base}/connection.json", f"{base}/tables/{table_file(None, 'public', 'orders')}"]
    order += [f"{base}/tables/{table_file(None, 'public', 'zebra_shipments')}"]
    assert sorted([*order, report_rel]) == sorted(files)

    def tables() -> list[str]:
        return [r.id for r in watched.reader.discover_data("zebra_shipments", kinds=["table"]).refs]

    for rel in order:  # the scanner writes the sync folder file by file
        before = watched.commits
        write_files(watched.root, {rel: files[rel]})
        report = watched.next_commit(before, rel)
        assert any("no scan-report.json yet" in d.message for d in report.diagnostics)
        assert "public.zebra_shipments" not in tables()
        orders = watched.indexed("table:warehouse:public.orders")
        assert orders.attrs["snapshot"]["syncId"] == SYNC_A and orders.comment == "Customer orders"
        time.sleep(0.2)

    write_files(watched.root, {report_rel: files[report_rel]})
    wait_for(lambda: tables()[:1] == ["public.zebra_shipments"], "the new snapshot's table")
    orders = watched.indexed("table:warehouse:public.orders")
    assert orders.attrs["snapshot"]["syncId"] == SYNC_B and orders.comment == "Orders from the rescan"
    watched.settle()
    assert watched.reader.status().diagnostics == []


def test_first_scan_in_a_project_without_raw_sources(make_project, start_watch, tmp_path: Path) -> None:
    files = {k: v for k, v in BASE.items() if not k.startswith("raw-sources/")}
    watch = start_watch(make_project(files, config=CONFIG))
    staging = write_files(tmp_path / "staging", scan_files("warehouse", SYNC_A, [ZEBRA]))
    os.rename(staging / "raw-sources", watch.root / "raw-sources")  # as `mv`, or a checkout adding the folder
    wait_for(
        lambda: watch.indexed("table:warehouse:public.zebra_shipments") is not None,
        "the first scan snapshot to be indexed",
        timeout=5,
    )


# ------------------------------------------------------------------ ktx.yaml


def test_ktx_yaml_change_is_picked_up(make_project, start_watch) -> None:
    files = {**BASE, "wiki/user/alice/private.md": page("Alice's notes", "Only for alice: brindlewhump.")}
    watch = start_watch(make_project(files, config=CONFIG))
    assert watch.keys("brindlewhump") == []  # index.user defaults to "local"
    (watch.root / "ktx.yaml").write_text(CONFIG + "  user: alice\n")
    watch.wait_key("brindlewhump", "private")


def test_a_change_no_event_reports_is_found_by_the_idle_plan_and_embedded(make_project, start_watch) -> None:
    """The periodic full plan is the safety net for changes no event reports; what it commits must also get
    its vectors, not stay lexical-only until some later event.

    The change: ktx.yaml rewritten to the same size with its mtime put back. ktx.yaml lies outside the watched
    trees (it is polled by stat, not watched), so nothing reports it; the full plan re-reads it anyway.
    (Until this test, the idle plan committed and never embedded: the new user's page stayed lexical-only.)"""
    files = {**BASE, "wiki/user/bobby/notes.md": page("Bobby's notes", "Only for bobby: sprocketwhim gadzooks.")}
    watch = start_watch(make_project(files, config=CONFIG + "  user: alice\n"), idle_plan_s=1.0)
    wait_for(lambda: (s := watch.reader.status()).chunks_embedded == s.chunks, "the catch-up's texts embedded")
    assert watch.keys("sprocketwhim") == []  # bobby's page is not alice's
    config, last_event = watch.root / "ktx.yaml", watch.state()["last_event"]
    before = config.stat()
    config.write_text(CONFIG + "  user: bobby\n")
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (config.stat().st_size, config.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)

    def by_meaning() -> bool:
        results = watch.reader.wiki_search("notes for bobby: sprocketwhim gadzooks").results
        hits = [r for r in results if r.key == "notes"]
        return bool(hits) and "semantic" in hits[0].matchReasons

    wait_for(by_meaning, "bobby's page found by its vectors, not only its words")
    status = watch.reader.status()
    assert status.chunks_embedded == status.chunks and status.semantic == "available"
    assert watch.state()["last_event"] == last_event  # no event reported it: the idle plan did


def test_an_idle_plan_that_finds_nothing_is_no_commit(make_project, start_watch) -> None:
    """(Until this test each idle plan was reported as a commit: ``watch`` printed 'commit 1: +0 ~0 -0' every two
    minutes, and status's last commit moved with nothing committed.) An edit after it is a commit as ever."""
    watch = start_watch(make_project(BASE, config=CONFIG), idle_plan_s=0.2)
    last_commit = watch.state()["last_commit"]
    full_plans = watch.watcher._full_plan_at
    wait_for(lambda: watch.watcher._full_plan_at > full_plans + 0.4, "two idle plans")
    assert watch.commits == 1 and watch.state()["last_commit"] == last_commit
    (watch.root / "wiki/global/refunds.md").write_text(page("Refunds", "How refunds work: grommetine."))
    watch.wait_key("grommetine", "refunds")
    assert watch.next_commit(1, "the new page").added == 1


def test_paths_noted_with_a_config_change_still_plan_in_full(make_project) -> None:
    """A batch holding a ktx.yaml change (or the catch-up) plans in full whatever file paths came with it."""
    root = make_project(BASE, config=CONFIG)
    service = KtxIndex(root, embedder=HashEmbedder())
    watcher = Watcher(service)
    page_path = str(root / "wiki/global/revenue.md")
    watcher._changed = set()  # as after a commit
    watcher._note({(watchfiles.Change.modified, page_path)}, full=False)
    assert watcher._changed == {"wiki/global/revenue.md"}
    watcher._note({(watchfiles.Change.modified, page_path)}, full=True)
    assert watcher._changed is None
    watcher._note({(watchfiles.Change.added, page_path)}, full=False)
    assert watcher._changed is None  # still due in full
    service.close()


# ------------------------------------------------------------------ catch-up gap


def test_edit_during_the_initial_catch_up_is_indexed(make_project) -> None:
    root = make_project(BASE, config=CONFIG)
    service = KtxIndex(root, embedder=HashEmbedder())
    reader = KtxIndex(root, embedder=HashEmbedder())
    edited = threading.Event()

    def on_batch(_report: RebuildReport) -> None:
        if not edited.is_set():  # the catch-up commit has read the files; the user saves a page now
            (root / "wiki/global/during.md").write_text(page("During", "Saved during catch-up: plinkerton."))
            edited.set()

    watcher = Watcher(service, on_batch=on_batch)
    watcher.start_in_thread()
    try:
        assert watcher.ready.wait(WAIT) and edited.is_set()
        wait_for(lambda: reader.wiki_search("plinkerton").results, "the page saved during catch-up", timeout=5)
    finally:
        watcher.stop()
        reader.close()
        service.close()


# ------------------------------------------------------------------ one writer


def test_second_watcher_and_writers_are_refused_naming_the_pid(watched: Watch) -> None:
    other = KtxIndex(watched.root, embedder=HashEmbedder())
    try:
        second = Watcher(other)
        with pytest.raises(IndexBusy, match=f"being written by PID {os.getpid()}"):
            second.start_in_thread()
        with pytest.raises(IndexBusy, match=f"PID {os.getpid()}"):
            other.acquire_writer()
        with pytest.raises(IndexBusy, match=f"PID {os.getpid()}"):
            other.rebuild()
    finally:
        other.close()
    (watched.root / "wiki/global/after.md").write_text(page("After", "Still watching: dandelope."))
    watched.wait_key("dandelope", "after")  # the first watcher is unaffected
    assert watched.reader.status().watcher.pid == os.getpid()


def _child_env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`ktx-index ARGS` to completion (bounded), stdout and stderr captured."""
    return subprocess.run(
        [str(KTX_INDEX), *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=_child_env()
    )


def test_cli_second_watcher_exits_non_zero_naming_the_holder(watched: Watch) -> None:
    proc = run_cli("watch", "--project", str(watched.root))
    assert proc.returncode != 0
    assert f"being written by PID {os.getpid()}" in proc.stderr, proc.stderr
    (watched.root / "wiki/global/after.md").write_text(page("After", "Still watching: kerfuddle."))
    watched.wait_key("kerfuddle", "after")


def test_refused_cli_watcher_leaves_the_running_watchers_status_alone(watched: Watch) -> None:
    """(At HEAD e271f40 the refused `watch` ran watcher.stop() in its finally block, which rewrote the
    running watcher's watcher.json with pid=null: status then said no watcher was running.)"""
    before = watched.state()
    proc = run_cli("watch", "--project", str(watched.root))
    assert proc.returncode != 0
    status = watched.reader.status()
    assert status.watcher is not None and status.watcher.pid == os.getpid()
    assert status.watcher.last_commit == before["last_commit"]


def test_cli_watch_process_status_and_sigterm(make_project) -> None:
    root = make_project(BASE, config=CONFIG)
    log = root.parent / "watch.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(KTX_INDEX), "watch", "--project", str(root)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=_child_env(),
        )
    reader = KtxIndex(root, embedder=None)
    try:

        def running() -> bool:
            try:
                state = json.loads((root / ".ktx/index/watcher.json").read_text())
            except (OSError, ValueError):
                return False
            return state.get("pid") == proc.pid and state.get("last_commit") is not None

        wait_for(running, f"the watcher process to commit (log: {log})", timeout=30)
        time.sleep(ARM)
        status = reader.status()
        assert status.writer_pid == proc.pid and status.watcher.pid == proc.pid
        (root / "wiki/global/cli.md").write_text(page("From the CLI", "Watched by a process: grobblenut."))
        wait_for(lambda: reader.wiki_search("grobblenut").results, "the page through the CLI watcher")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0, log.read_text()
        status = reader.status()
        assert status.writer_pid is None and status.watcher.pid is None and status.watcher.pending == 0
        assert "commit" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=15)
        reader.close()


@pytest.mark.parametrize("watch", [[], ["--watch"]], ids=["serve", "serve-watch"])
def test_serve_beside_a_watcher_only_reads_and_reloads(watched: Watch, tmp_path: Path, watch: list[str]) -> None:
    """A second agent session's ``serve --watch`` (its MCP config asks for a watcher) serves too: the running
    watcher keeps the index fresh, and it exited at start before."""
    params = StdioServerParameters(
        command=str(KTX_INDEX), args=["serve", "--project", str(watched.root), *watch], env=_child_env(),
        cwd=str(tmp_path),
    )  # fmt: skip
    log = tmp_path / "serve.log"

    async def main() -> None:
        with log.open("w") as errlog, anyio.fail_after(60):
            async with Client(stdio_client(params, errlog=errlog)) as client:

                async def keys(query: str) -> list[str]:
                    result = await client.call_tool("wiki_search", {"query": query})
                    assert not result.is_error, result.content
                    return [r["key"] for r in result.structured_content["results"]]

                assert (await keys("zorblat"))[0] == "revenue"
                generation = watched.reader.status().generation
                (watched.root / "wiki/global/served.md").write_text(page("Served", "Served read-only: fandangle."))
                with anyio.fail_after(WAIT):
                    while "served" not in await keys("fandangle"):
                        await anyio.sleep(STEP)
                assert watched.reader.status().generation > generation
                assert watched.reader.status().writer_pid == os.getpid()
                if watch:  # the first watcher ends (its session closed): this server watches from now on
                    watched.watcher.stop()
                    (watched.root / "wiki/global/later.md").write_text(page("Later", "Watched by the server: brimble."))
                    with anyio.fail_after(WAIT + 5):
                        while "later" not in await keys("brimble"):
                            await anyio.sleep(STEP)

    anyio.run(main)
    assert "serving its commits read-only" in log.read_text()
    assert ("watching the project from now on" in log.read_text()) == bool(watch)


def test_a_commits_new_texts_are_reported_once_all_are_embedded(make_project, start_watch) -> None:
    """A commit embeds nothing (its documents are searchable by their words at once), so `watch` said "embedded 0"
    after every edit; it now says how many texts were embedded once a commit's are all done."""
    heard: list[tuple[int, float]] = []
    watch = start_watch(make_project(BASE, config=CONFIG), on_embedded=lambda count, ms: heard.append((count, ms)))
    watch.settle()
    before = len(heard)
    (watch.root / "wiki/global/embedded.md").write_text(page("Embedded", "A page to embed: quintessa."))
    wait_for(lambda: len(heard) > before, "the new page's texts embedded")
    assert heard[-1][0] >= 1
