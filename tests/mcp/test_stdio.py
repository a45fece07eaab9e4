"""stdio.py: serve's thread-free stdio streams (pipes read and written from the event loop) and the fallback to
the SDK's transport for anything else."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from projects import INITIALIZE, write_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.mcp.stdio import FdLines, FdWriter, pollable
from ktx_index.service import KtxIndex

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def nonblocking_pipe() -> tuple[int, int]:
    read, write = os.pipe()
    os.set_blocking(read, False)
    os.set_blocking(write, False)
    return read, write


async def test_lines_are_cut_at_newlines_whatever_the_reads_bring() -> None:
    """A line split over two reads, a UTF-8 character split between them, a last line without its newline."""
    read, write = nonblocking_pipe()
    lines = FdLines(read)
    got: list[str] = []
    chunks = [b'{"a":1}\n{"b"', b":2}\n\xc3", b"\xa9 last"]

    async def reader() -> None:
        async for line in lines:
            got.append(line)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)  # parks on the empty pipe first: the wait-for-readable path
            for chunk in chunks:
                await anyio.wait_all_tasks_blocked()
                os.write(write, chunk)
            await anyio.wait_all_tasks_blocked()
            os.close(write)
            write = -1
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    assert got == ['{"a":1}\n', '{"b":2}\n', "é last"]


async def test_a_write_larger_than_the_pipe_waits_for_the_reader_and_arrives_whole() -> None:
    read, write = nonblocking_pipe()
    message = json.dumps({"rows": ["x" * 1000] * 1000}) + "\n"  # ~1 MB: many times a pipe's 64 KiB
    got: list[str] = []

    async def reader() -> None:
        async for line in FdLines(read):
            got.append(line)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            writer = FdWriter(write)
            await writer.write(message)
            await writer.write("second\n")
            await writer.flush()
            os.close(write)
            write = -1
    finally:
        os.close(read)
        if write >= 0:
            os.close(write)
    assert got == [message, "second\n"]


async def test_many_lines_in_one_read_come_out_one_by_one_in_order() -> None:
    read, write = nonblocking_pipe()
    sent = [f'{{"id":{i}}}\n' for i in range(2000)]  # ~22 KB: one read brings them all
    os.write(write, "".join(sent).encode())
    os.close(write)
    try:
        got = [line async for line in FdLines(read)]
    finally:
        os.close(read)
    assert got == sent


def test_only_pipes_and_sockets_are_pollable(tmp_path: Path) -> None:
    read, write = os.pipe()
    path = tmp_path / "f"
    path.write_text("x")
    with path.open() as regular:
        try:
            assert pollable(read) and pollable(write)
            assert not pollable(regular.fileno())
        finally:
            os.close(read)
            os.close(write)
    assert not pollable(12345)  # not open


#: Echoes one JSON-RPC message through fd_stdio's streams; prints around it to show where fd 1 points.
ECHO = """
import anyio, os, sys
from ktx_index.mcp.stdio import fd_stdio, pollable

async def main():
    fast = pollable(0) and pollable(1)
    async with fd_stdio() as (read, write):
        print("stray print", flush=True)
        os.system("echo stray child")
        message = await read.receive()
        await write.send(message)
        await write.aclose()  # the server closes it when it stops; the transport then ends
    print("after", "fast" if fast else "sdk", os.get_blocking(0), os.get_blocking(1), flush=True)

anyio.run(main)
"""
REQUEST = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
def test_the_wire_carries_only_messages_and_is_given_back_afterwards(stdin_kind: str, tmp_path: Path) -> None:
    """Over pipes (the thread-free streams) and with a regular file on stdin (the SDK's transport): a stray
    print or child output goes to stderr while serving, and fds 0 and 1 are the wire again once the streams close,
    in the blocking mode they came in (their open file descriptions are shared with the parent)."""
    request = json.dumps(REQUEST) + "\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), *sys.path])}
    if stdin_kind == "pipe":
        run = subprocess.run(
            [sys.executable, "-c", ECHO], input=request, capture_output=True, text=True, env=env, timeout=60
        )
    else:
        path = tmp_path / "stdin.jsonl"
        path.write_text(request)
        with path.open() as stdin:
            run = subprocess.run(
                [sys.executable, "-c", ECHO], stdin=stdin, capture_output=True, text=True, env=env, timeout=60
            )
    assert run.returncode == 0, run.stderr
    first, after = run.stdout.splitlines()
    assert json.loads(first) == REQUEST
    assert after == f"after {'fast' if stdin_kind == 'pipe' else 'sdk'} True True"  # blocking, as they came
    assert "stray print" in run.stderr and "stray child" in run.stderr


PROJECT = {
    "ktx.yaml": "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n",
    "wiki/global/refund-policy.md": "---\nsummary: When a refund is issued\n---\n# Refunds\nRefunds within 30 days.\n",
}


@pytest.mark.slow
def test_a_server_stopped_by_sigterm_gives_stdin_and_stdout_back_blocking(tmp_path: Path) -> None:
    """The Stopper exits with os._exit, which unwinds nothing: the pipes' blocking mode is restored before it.
    This test keeps the server's own ends of both pipes open, as a shell script running it would (its stdin is
    the script's too), so it sees the very open file descriptions the server set non-blocking."""
    root = write_files(tmp_path / "project", PROJECT)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    service.close()
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    command = [str(Path(sys.executable).parent / "ktx-index"), "serve", "--project", str(root), "--no-build"]
    proc = subprocess.Popen(command, stdin=stdin_read, stdout=stdout_write, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        os.write(stdin_write, (json.dumps(INITIALIZE) + "\n").encode())
        with os.fdopen(os.dup(stdout_read), "rb") as answers:
            assert json.loads(answers.readline())["id"] == 1  # serving
        assert not os.get_blocking(stdin_read) and not os.get_blocking(stdout_write)  # the fast path is on
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0, proc.stderr.read() if proc.stderr else ""
        assert os.get_blocking(stdin_read) and os.get_blocking(stdout_write)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for fd in (stdin_read, stdin_write, stdout_read, stdout_write):
            os.close(fd)


@pytest.mark.slow
def test_a_server_without_watch_says_edits_are_not_followed(tmp_path: Path) -> None:
    """Upstream KTX reads the project on every call; a server started without --watch does not, and says so on
    stderr where whoever configured it looks (the agent's answers stay what the last build indexed)."""
    root = write_files(tmp_path / "project", PROJECT)
    command = [str(Path(sys.executable).parent / "ktx-index"), "serve", "--project", str(root)]
    run = subprocess.run(command, input="", capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "serving without --watch: the index does not follow edits to the project" in run.stderr


@pytest.mark.slow
def test_a_server_says_where_an_index_kept_elsewhere_lives(tmp_path: Path) -> None:
    """With KTX_INDEX_HOME (or a read-only project) the index is not in the project: serve says where it is."""
    root = write_files(tmp_path / "project", PROJECT)
    command = [str(Path(sys.executable).parent / "ktx-index"), "serve", "--project", str(root)]
    env = {**os.environ, "KTX_INDEX_HOME": str(tmp_path / "indexes")}
    run = subprocess.run(command, input="", capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
    assert run.returncode == 0, run.stderr
    assert f"index at {tmp_path / 'indexes'}/project-" in run.stderr and "(KTX_INDEX_HOME is set)" in run.stderr
    assert not (root / ".ktx").exists()
