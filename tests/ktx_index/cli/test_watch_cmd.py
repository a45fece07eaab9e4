"""``ktx-index watch`` as a user runs it: started, stopped with Ctrl-C, and saying so, as ``serve`` does; a watcher
that gives up says so, with the next step."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from projects import run_cli, write_files

from ktx_index.service import KtxIndex
from ktx_index.watcher import loop

PROJECT = {
    "ktx.yaml": "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n",
    "wiki/global/refund-policy.md": "---\nsummary: When a refund is issued\n---\n# Refunds\nRefunds within 30 days.\n",
}


@pytest.mark.slow
def test_a_watcher_stopped_with_ctrl_c_says_it_stopped(tmp_path: Path) -> None:
    root = write_files(tmp_path / "project", PROJECT)
    command = [str(Path(sys.executable).parent / "ktx-index"), "watch", "--project", str(root)]
    proc = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # its first catch-up, then the line that says it watches
            if line.startswith("ktx-index: watching"):
                break
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == 0, rest
        assert rest.rstrip().endswith("ktx-index: stopped")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_watcher_that_gives_up_says_failed_and_what_to_do(tmp_path: Path, monkeypatch) -> None:
    """watchfiles raises RuntimeErrors ("OS file watch limit reached."): the foreground watcher recorded
    'stopped' over its failure, and the user got a traceback. Now: failed in status, an error with the next step."""
    root = write_files(tmp_path / "project", PROJECT)

    def broken_watch(*_args, **_kwargs):
        raise RuntimeError("OS file watch limit reached.")

    monkeypatch.setattr(loop.watchfiles, "watch", broken_watch)
    monkeypatch.setattr(loop, "FIRST_RETRY_S", 0.01)
    result = run_cli("watch", "--project", root)
    assert result.exit_code == 1 and not isinstance(result.exception, RuntimeError), result.output
    assert "RuntimeError: OS file watch limit reached." in result.output
    assert "edits are no longer indexed: fix that and run `ktx-index watch` again" in result.output
    reader = KtxIndex(root, embedder=None)
    status = reader.status()
    reader.close()
    assert status.watcher is not None and status.watcher.state == "failed" and status.watcher.pid is None
    assert status.watcher.errors == loop.MAX_WATCH_RESTARTS + 1  # recorded once, not by run and by stop both
