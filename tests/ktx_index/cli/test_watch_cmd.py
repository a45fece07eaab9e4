"""``ktx-index watch`` as a user runs it: started, stopped with Ctrl-C, and saying so, as ``serve`` does."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from projects import write_files

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
