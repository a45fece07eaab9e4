"""``serve``'s stdio transport without a thread hop per line.

The SDK's ``stdio_server`` reads stdin and writes stdout through ``anyio.wrap_file``: every line read, every
write and every flush is a round trip to a worker thread (two thread wake-ups each). That is three round trips
per tool call, a measurable share of a small call's latency on a busy machine (docs/benchmarks.md, gateway
section). When stdin and stdout are pipes or sockets, as an agent starting ``ktx-index serve`` makes them, they
are read and written here from the event loop instead (non-blocking, woken by the loop's poller); the SDK's
own ``stdio_server`` still frames and parses the messages, given these two streams in place of its files.

As the SDK does, the wire moves to private descriptors while serving: fd 0 reads the null device and fd 1
writes to stderr, so a stray ``print`` or a child process cannot corrupt the protocol. Anything else (a regular
file or a terminal on stdin, Windows) keeps the SDK's transport, unchanged.
"""

from __future__ import annotations

import codecs
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

#: Bytes asked of the kernel per read; a larger message is read in several.
READ_SIZE = 1 << 16


def pollable(fd: int) -> bool:
    """Whether the loop's poller can watch fd (a pipe or a socket; not a regular file, not a terminal)."""
    if sys.platform == "win32":  # pragma: no cover
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class FdLines:
    """The lines of a non-blocking descriptor, as the ``async for line in stdin`` the SDK's reader runs. Each
    byte is scanned and copied once, however many reads a long message takes or however many lines one read
    brings."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending: list[str] = []  # the line being read, before its newline
        self._ready: deque[str] = deque()  # whole lines read, not handed out yet
        self._eof = False

    def __aiter__(self) -> FdLines:
        return self

    async def __anext__(self) -> str:
        while not self._ready:
            if self._eof:
                if self._pending:  # a last line without its newline, as readline returns it
                    line = "".join(self._pending)
                    self._pending.clear()
                    return line
                raise StopAsyncIteration
            try:
                chunk = os.read(self.fd, READ_SIZE)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            self._eof = not chunk
            self._feed(self._decoder.decode(chunk, final=self._eof))
        return self._ready.popleft()

    def _feed(self, text: str) -> None:
        *ends, rest = text.split("\n")
        for end in ends:
            self._pending.append(end + "\n")
            self._ready.append("".join(self._pending))
            self._pending.clear()
        if rest:
            self._pending.append(rest)


class FdWriter:
    """``write`` and ``flush`` as the SDK's writer calls them, on a non-blocking descriptor: the whole text is
    written before ``write`` returns (waiting for the reader when the pipe is full), so ``flush`` has nothing
    left to do."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    async def write(self, text: str) -> None:
        view = memoryview(text.encode("utf-8"))
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self.fd)
                continue
            view = view[written:]

    async def flush(self) -> None:
        return None


@asynccontextmanager
async def fd_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The server's (read, write) streams over stdin and stdout; the SDK's transport when they are not pipes
    or sockets."""
    if not (pollable(0) and pollable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    wire_in, wire_out = _claim(0, os.O_RDONLY), _claim(1, os.O_WRONLY)
    # The open file descriptions are shared with whoever started us (a shell script's own stdin, say): they
    # are left as they came, here or, when a signal ends the process without unwinding this, by the Stopper.
    _modes.update({fd: os.get_blocking(fd) for fd in (wire_in, wire_out)})
    try:
        for fd in (wire_in, wire_out):
            os.set_blocking(fd, False)
        async with stdio_server(FdLines(wire_in), FdWriter(wire_out)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        restore_modes()
        for fd, std in ((wire_in, 0), (wire_out, 1)):
            anyio.notify_closing(fd)
            os.dup2(fd, std)
            os.close(fd)


#: The wire descriptors made non-blocking while serving, with the blocking mode each came in.
_modes: dict[int, bool] = {}


def restore_modes() -> None:
    """Give the wire descriptors back their blocking mode (safe from any thread, and to call twice)."""
    while _modes:
        fd, blocking = _modes.popitem()
        with suppress(OSError):  # already closed
            os.set_blocking(fd, blocking)


def _claim(fd: int, mode: int) -> int:
    """A private copy of the wire descriptor fd; fd itself then points at the null device (stdin) or at
    stderr (stdout)."""
    private = os.dup(fd)
    os.set_inheritable(private, False)
    if mode == os.O_RDONLY:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, fd)
        os.close(null)
    else:
        sys.stdout.flush()
        os.dup2(2, fd)
    return private
