"""Watcher supervision: a batch that raises is retried and visible in ``status`` at once; a watcher
that cannot go on says so (status, the server's stderr) and ``serve --watch`` answers anyway.

Faults are injected into real runs: a real watcher thread over real files, and a real ``serve``
process whose watcher is made to fail by patching watchfiles before the CLI starts."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex
from ktx_index.watcher import Watcher

pytestmark = pytest.mark.slow

CONFIG = "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n"
PAGE = "---\nsummary: {0}\n---\n# {0}\n\n{1}\n"


def wait_for(predicate, what: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:.0f}s: {what}")
        time.sleep(0.02)
    return value


def test_a_batch_that_raises_is_visible_within_a_second_then_retried(make_project, monkeypatch) -> None:
    root = make_project({"wiki/global/a.md": PAGE.format("Alpha", "First page.")}, config=CONFIG)
    service = KtxIndex(root, embedder=HashEmbedder())
    reader = KtxIndex(root, embedder=HashEmbedder())
    watcher = Watcher(service)
    watcher.start_in_thread()
    assert watcher.wait_ready(10)
    time.sleep(0.3)  # the watch is armed
    real_rebuild = KtxIndex.rebuild
    raised_at: list[float] = []

    def full_disk(self, *args, **kwargs):
        if len(raised_at) < 3:  # three attempts fail, the fourth succeeds (the disk was cleaned up)
            raised_at.append(time.monotonic())
            raise OSError(28, "No space left on device")
        return real_rebuild(self, *args, **kwargs)

    monkeypatch.setattr(KtxIndex, "rebuild", full_disk)
    try:
        (root / "wiki/global/b.md").write_text(PAGE.format("Beta", "A page about zorblax."))
        status = wait_for(
            lambda: (s := reader.status()).watcher.state == "retrying" and s, "status to show the failing batch"
        )
        seen_after = time.monotonic() - raised_at[0]
        assert seen_after < 1.0, seen_after
        print(f"failing batch visible in status after {seen_after * 1000:.0f} ms")
        assert status.watcher.errors >= 1 and "No space left on device" in status.watcher.last_error
        assert status.watcher.recent_errors[0].during == "commit" and status.watcher.pid is not None
        wait_for(lambda: reader.wiki_search("zorblax").totalFound == 1, "the retried batch to commit")
        assert len(raised_at) == 3 and raised_at[2] - raised_at[1] > raised_at[1] - raised_at[0]  # backoff grows
        status = wait_for(lambda: (s := reader.status()).watcher.state == "running" and s, "the watcher to recover")
        assert status.watcher.errors == 3 and status.watcher.retry_in_s is None and status.watcher.pending == 0
    finally:
        watcher.stop()
        reader.close()
        service.close()
    assert watcher.error is None


def test_a_failed_embedding_slice_is_retried_without_another_event(make_project, monkeypatch) -> None:
    """(Until the watcher's state machine, a slice that raised dropped the backlog: the commit's texts stayed
    searchable by words alone until some later event brought another commit.)"""
    root = make_project({"wiki/global/a.md": PAGE.format("Alpha", "A page about zorblax.")}, config=CONFIG)
    real_embed = KtxIndex.embed_pending
    raised: list[float] = []

    def full_disk(self, *args, **kwargs):
        if not raised:  # the catch-up's first slice fails, the retry succeeds
            raised.append(time.monotonic())
            raise OSError(28, "No space left on device")
        return real_embed(self, *args, **kwargs)

    monkeypatch.setattr(KtxIndex, "embed_pending", full_disk)
    service = KtxIndex(root, embedder=HashEmbedder())
    reader = KtxIndex(root, embedder=HashEmbedder())
    watcher = Watcher(service)
    watcher.start_in_thread()
    try:
        assert watcher.wait_ready(10)
        status = wait_for(
            lambda: (s := reader.status()).chunks > 0 and s.chunks_embedded == s.chunks and s, "the retried slice"
        )
        assert raised and status.semantic == "available"
        assert status.watcher.errors == 1 and status.watcher.recent_errors[0].during == "embed"
        wait_for(lambda: reader.status().watcher.state == "running", "the watcher to recover")
    finally:
        watcher.stop()
        reader.close()
        service.close()
    assert watcher.error is None


def _watcher_whose_watch_fails(make_project, monkeypatch, **constants: float) -> tuple[Path, KtxIndex, Watcher, list]:
    """A watcher started on a small project whose watch raises at once, every time (the failures listed), with
    ``constants`` of the watcher's module replaced (``FIRST_RETRY_S`` 0.01 unless given)."""
    from ktx_index.watcher import loop as watcher_module

    root = make_project({"wiki/global/a.md": PAGE.format("Alpha", "First page.")}, config=CONFIG)
    for name, value in {"FIRST_RETRY_S": 0.01, **constants}.items():
        monkeypatch.setattr(watcher_module, name, value)
    failures: list[int] = []

    def broken_watch(*_args, **_kwargs):
        failures.append(1)
        raise OSError(28, "inotify watch limit reached")

    monkeypatch.setattr(watcher_module.watchfiles, "watch", broken_watch)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    watcher = Watcher(service)
    watcher.start_in_thread()
    return root, service, watcher, failures


def test_a_watcher_that_cannot_go_on_says_failed(make_project, monkeypatch) -> None:
    from ktx_index.watcher import loop as watcher_module

    root, service, watcher, _failures = _watcher_whose_watch_fails(make_project, monkeypatch)
    assert watcher.wait_ready(10)  # set by the first failure: nobody waits on it
    wait_for(lambda: not watcher.alive, "the watcher to give up")
    status = KtxIndex(root, embedder=None).status()
    assert status.watcher.state == "failed" and "inotify watch limit" in status.watcher.last_error
    assert status.watcher.errors == watcher_module.MAX_WATCH_RESTARTS + 1
    watcher.stop()
    assert KtxIndex(root, embedder=None).status().watcher.state == "failed"  # stopping keeps the verdict
    service.close()


def test_failures_a_healthy_stretch_apart_are_not_in_a_row(make_project, monkeypatch) -> None:
    from ktx_index.watcher import loop as watcher_module

    # every watch ran long enough before it failed
    _root, service, watcher, failures = _watcher_whose_watch_fails(
        make_project, monkeypatch, MAX_RETRY_S=0.01, HEALTHY_WATCH_S=0.0
    )
    wait_for(lambda: len(failures) > 2 * watcher_module.MAX_WATCH_RESTARTS, "more failures than a row allows")
    assert watcher.alive
    watcher.stop()
    service.close()


SERVE_WITH_BROKEN_WATCHER = textwrap.dedent(
    """
    import sys, watchfiles
    def broken_watch(*args, **kwargs):
        raise PermissionError(13, "Permission denied", "wiki")
    watchfiles.watch = broken_watch
    from ktx_index.watcher import loop as watcher
    watcher.FIRST_RETRY_S = 0.01
    from ktx_index.cli import cli
    sys.exit(cli(["serve", "--project", sys.argv[1], "--watch"]))
    """
)


def test_serve_watch_answers_within_5s_when_the_watcher_cannot_start(make_project, tmp_path: Path) -> None:
    root = make_project({"wiki/global/a.md": PAGE.format("Alpha", "A page about quibble.")}, config=CONFIG)
    KtxIndex(root, embedder=None).rebuild()
    params = StdioServerParameters(command=sys.executable, args=["-c", SERVE_WITH_BROKEN_WATCHER, str(root)])
    log = tmp_path / "serve.log"

    async def main() -> float:
        started = time.monotonic()
        with log.open("w") as errlog, anyio.fail_after(30):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                result = await client.call_tool("wiki_search", {"query": "quibble"})
                answered = time.monotonic() - started
                assert not result.is_error and result.structured_content["totalFound"] == 1
                return answered

    answered = anyio.run(main)
    assert answered < 5.0, answered
    print(f"serve --watch answered {answered:.2f} s after start with a watcher that cannot start")
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    assert any(line["event"] == "watcher.error" and "Permission denied" in line["error"] for line in lines)
    status = KtxIndex(root, embedder=None).status()
    assert status.watcher.pid is None and status.watcher.errors >= 1  # failed, or stopped while still retrying
    assert "Permission denied" in status.watcher.last_error
