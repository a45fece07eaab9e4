"""Clean shutdown: ``serve --watch`` (and plain ``serve`` with its background embedding) stopped by
SIGTERM, SIGINT or the end of stdin while a burst of edits is being indexed and texts are being embedded.

Twenty stops, each a real process with the real model (the fault is ONNX Runtime's threads torn down by
the interpreter's exit): every one exits 0 with no abort text, every committed vector survives, and a
final start converges without embedding any text twice (each embedded text appends one row to the vector
file, so rows == distinct keys proves it). Trials are kept short: a small generated project, stops
after a fraction of a second to two seconds."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ktx_index.index.layout import IndexLayout
from ktx_index.index.store import DocStore

pytestmark = [pytest.mark.slow, pytest.mark.model]

KTX_INDEX = Path(sys.executable).parent / "ktx-index"
TRIALS = 20
ABORT_TEXT = ("terminate called", "Traceback", "Aborted", "core dumped", "Fatal Python error", "Exception ignored")
WORDS = "order refund courier depot box meal plan subscriber churn revenue margin supplier recipe route".split()


def page(i: int, trial: int) -> str:
    rng = random.Random(i * 7919 + trial)
    body = " ".join(rng.choice(WORDS) for _ in range(60))
    return f"---\nsummary: Note {trial}-{i} on {rng.choice(WORDS)}\n---\n# Note {i}\n\n{body}.\n\n## More\n\n{body[::-1]}\n"


def write_burst(root: Path, trial: int, count: int) -> None:
    for i in range(count):
        (root / f"wiki/global/t{trial:02d}-p{i:02d}.md").write_text(page(i, trial))


def vector_state(root: Path) -> tuple[int, int, int, int]:
    """(chunks, chunks embedded, distinct vector keys, rows in the vector file)."""
    layout = IndexLayout(root)
    store = DocStore(layout.store, readonly=True)
    try:
        chunks, embedded = store.chunks.stats()
        keys = store.vectors.count()
    finally:
        store.close()
    rows = layout.vectors.stat().st_size // (384 * 2) if layout.vectors.exists() else 0
    return chunks, embedded, keys, rows


def wait_started(root: Path, proc: subprocess.Popen, log: Path) -> None:
    """Until the server has committed its catch-up (watcher.json names it, or the plain serve said so)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if json.loads((root / ".ktx/index/watcher.json").read_text()).get("pid") == proc.pid:
                return
        except (OSError, ValueError):
            pass
        if "index up to date" in log.read_text():
            return
        time.sleep(0.02)
    pytest.fail(f"the server did not start: {log.read_text()}")


def test_twenty_stops_mid_burst_and_mid_embedding_exit_clean_and_converge(make_project, tmp_path: Path) -> None:
    root = make_project({f"wiki/global/base-{i:02d}.md": page(i, 99) for i in range(40)})
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    rng = random.Random(12)
    outcomes, embedded_before, keys_before = [], 0, 0
    mid_embedding = 0
    for trial in range(TRIALS):
        how = ("sigterm", "sigint", "eof")[trial % 3]
        args = ["serve", "--project", str(root)] + ([] if trial % 4 == 3 else ["--watch"])
        log = tmp_path / f"serve-{trial}.log"
        with log.open("w") as err:
            proc = subprocess.Popen(
                [str(KTX_INDEX), *args], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=env
            )
        try:
            wait_started(root, proc, log)  # (a signal before Python has installed its handlers kills any process)
            time.sleep(rng.uniform(0.0, 0.6))  # the catch-up commit is done; embedding
            write_burst(root, trial, 30)  # a burst arrives while it embeds (int8 embeds fast: a large one)
            time.sleep(rng.uniform(0.1, 1.2))
            if how == "eof":
                proc.stdin.close()
            else:
                proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        text = log.read_text()
        outcomes.append((trial, how, code))
        assert code == 0, f"trial {trial} ({how}): exit {code}\n{text}"
        assert not [a for a in ABORT_TEXT if a in text], f"trial {trial} ({how}):\n{text}"
        chunks, embedded, keys, rows = vector_state(root)
        assert embedded >= embedded_before, "a committed vector was lost"
        assert rows == keys, f"trial {trial}: {rows} rows for {keys} keys (a text embedded twice, or a torn batch)"
        mid_embedding += embedded < chunks
        embedded_before, keys_before = embedded, keys
    assert mid_embedding >= TRIALS // 2, f"only {mid_embedding} stops happened mid-embedding: make the trials harder"

    final = subprocess.run(
        [str(KTX_INDEX), "rebuild", "--project", str(root), "--json", "--quiet"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert final.returncode == 0, final.stderr
    report = json.loads(final.stdout)
    chunks, embedded, keys, rows = vector_state(root)
    assert report["embedding_status"] == "ready" and embedded == chunks
    assert rows == keys, f"{rows} vector rows for {keys} distinct texts: some text was embedded twice"
    assert report["embedded"] == keys - keys_before  # only what no stopped run had committed
    print(f"{TRIALS} stops ({mid_embedding} mid-embedding): exit codes {sorted({c for _, _, c in outcomes})}; "
          f"final start embedded {report['embedded']} of {keys} texts")  # fmt: skip


def test_rebuild_stopped_by_sigint_exits_0_and_the_next_one_finishes_the_rest(make_project) -> None:
    root = make_project({f"wiki/global/p-{i:03d}.md": page(i, 7) for i in range(300)})  # several batches
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [str(KTX_INDEX), "rebuild", "--project", str(root), "--json", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (root / ".ktx/index/vectors.f16").exists() and time.monotonic() < deadline:
        time.sleep(0.02)  # the first batch is embedded: stop in the middle of the rest
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not [a for a in ABORT_TEXT if a in err], err
    first = json.loads(out)
    _chunks, _embedded, keys, rows = vector_state(root)
    assert first["embedding_status"] == "pending" and "not all texts embedded yet (stopped early)" in err
    assert first["embedded"] == keys == rows
    again = subprocess.run(
        [str(KTX_INDEX), "rebuild", "--project", str(root), "--json", "--quiet"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    second = json.loads(again.stdout)
    _chunks, _embedded, keys, rows = vector_state(root)
    assert second["embedding_status"] == "ready" and first["embedded"] + second["embedded"] == keys == rows


def test_http_server_stopped_by_sigterm_exits_0(make_project, tmp_path: Path) -> None:
    import socket

    root = make_project({f"wiki/global/p-{i:02d}.md": page(i, 3) for i in range(10)})
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    log = tmp_path / "http.log"
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(KTX_INDEX), "serve", "--project", str(root), "--transport", "http", "--port", str(port), "--watch"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "serving MCP at" not in log.read_text():
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not [a for a in ABORT_TEXT if a in log.read_text()], log.read_text()


def test_a_read_command_stopped_by_sigterm_exits_0(make_project) -> None:
    """`search` on a project without an index builds it first (with the model): a stop then is clean too."""
    root = make_project({f"wiki/global/p-{i:03d}.md": page(i, 5) for i in range(200)})
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [str(KTX_INDEX), "search", "refund", "--project", str(root)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (root / ".ktx/index/store.sqlite").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert not [a for a in ABORT_TEXT if a in err], err
