"""The gateway's client side: one MCP connection to upstream KTX (``serve --upstream``), kept alive.

ktx-index serves search; upstream KTX serves the rest of an agent's loop (``sl_query``, ``sql_execution``,
``memory_ingest``…). ``Upstream.run`` holds one client connection to it for the server's whole life: it
connects, lists upstream's tools, and when the connection is lost (the process died, the HTTP server went away)
it says so in the call log and in ``.ktx/index/upstream-<pid>.json`` (read by ``status``) and connects again with
backoff. A call made while it is down fails at once with ``UpstreamUnavailable``, which the gateway answers
in-band, so the agent reads why and ktx-index's own tools keep answering.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import shlex
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, Unpack

import anyio
import httpx2
import mcp.types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from pydantic import TypeAdapter

from ktx_index.errors import InvalidInput
from ktx_index.logs import cut, log_event, timestamp, write_atomic
from ktx_index.reports import UpstreamChanges, UpstreamState, UpstreamStateName

log = logging.getLogger("ktx_index.mcp.upstream")

#: Backoff between connection attempts: doubled from the first to the cap. The cap bounds how long a restarted
#: upstream waits to be used again (the target is 5 s); a missing command fails in microseconds, so retrying
#: it every couple of seconds costs nothing.
BACKOFF_FIRST, BACKOFF_CAP = 0.1, 2.0
#: An upstream that starts but does not answer initialize and tools/list within this is retried.
CONNECT_TIMEOUT = 30.0
RAW = TypeAdapter(dict[str, Any])
LOST = "the connection was lost (the upstream process exited or its server went away)"


class UpstreamUnavailable(Exception):
    """Upstream cannot take a call now; the message names it, says why, and that it is being retried."""


@dataclass(frozen=True)
class UpstreamSpec:
    """What ``--upstream`` names: a command that speaks MCP over stdio, or a streamable-HTTP URL."""

    label: str  # how messages name it: the command as given, or the URL without credentials
    command: tuple[str, ...] = ()
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, value: str, headers: Sequence[str] = ()) -> UpstreamSpec:
        value = value.strip()
        parsed: dict[str, str] = {}
        for header in headers:
            name, sep, content = header.partition(":")
            if not sep or not name.strip():
                raise InvalidInput(
                    f"--upstream-header {header!r} is not 'Name: value'", "e.g. 'Authorization: Bearer …'"
                )
            parsed[name.strip()] = content.strip()
        if value.startswith(("http://", "https://")):
            return cls(label=_without_userinfo(value), url=value, headers=parsed)
        if parsed:
            raise InvalidInput("--upstream-header applies to an http(s):// upstream only", "drop it for a command")
        try:
            argv = tuple(shlex.split(value))
        except ValueError as exc:
            raise InvalidInput(
                f"--upstream {value!r} is not a command line ({exc})", "quote it as a shell would"
            ) from exc
        if not argv:
            raise InvalidInput("--upstream is empty", "pass a command such as 'ktx mcp stdio' or an http(s):// URL")
        return cls(label=value, command=argv)

    @asynccontextmanager
    async def transport(self, cwd: Path, said: StderrTail | None = None) -> AsyncIterator[Any]:
        """The SDK transport: the command as a child process (in the project, with our environment, so it
        serves the same project with the user's credentials; its stderr through ``said``, which keeps its last
        lines), or an HTTP client carrying the headers."""
        if self.url is None:
            params = StdioServerParameters(
                command=self.command[0], args=list(self.command[1:]), env=dict(os.environ), cwd=str(cwd)
            )
            async with (said or StderrTail()).pipe() as errlog, stdio_client(params, errlog=errlog) as streams:
                yield streams
            return
        timeout = httpx2.Timeout(30.0, read=None)  # a tool may run for minutes; progress keeps the stream busy
        async with (
            httpx2.AsyncClient(headers=self.headers, timeout=timeout) as http,
            streamable_http_client(self.url, http_client=http) as streams,
        ):
            yield streams


class StderrTail:
    """An upstream command's stderr, passed on to this server's line by line, its last lines kept: a command that
    exits before answering (a missing setting, a project it cannot read) says why there, and ``describe`` repeats
    it where the agent and ``status`` read it."""

    def __init__(self, keep: int = 3) -> None:
        self.lines: deque[str] = deque(maxlen=keep)

    @asynccontextmanager
    async def pipe(self) -> AsyncIterator[TextIO]:
        """A file to hand the child as its stderr; on exit, once the child is gone, the lines it wrote are read
        (waiting at most a second, off the event loop: a grandchild may hold the pipe open)."""
        self.lines.clear()
        read_fd, write_fd = os.pipe()
        pump = threading.Thread(target=self._pump, args=(read_fd,), name="ktx-index-upstream-stderr", daemon=True)
        pump.start()
        writer = os.fdopen(write_fd, "w")
        try:
            yield writer
        finally:
            writer.close()  # the pump ends when the child's copy closes too (it exited)
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(pump.join, 1.0)

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8", errors="replace") as lines:
            for line in lines:
                with contextlib.suppress(OSError, ValueError):  # our own stderr gone: the line is still kept
                    sys.stderr.write(line)
                    sys.stderr.flush()
                if line.strip():
                    self.lines.append(cut(line.strip()))


def _without_userinfo(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    return f"{scheme}{sep}{authority.rpartition('@')[2]}{slash}{path}"


class _WatchedRead:
    """The transport's read stream, telling ``lost`` when it ends: over stdio, the child's exit is only seen as
    the end of its stdout, and the SDK's client has no other signal for it."""

    def __init__(self, inner: Any, lost: Callable[[], None]) -> None:
        self._inner, self._lost = inner, lost

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            self._lost()
            raise

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _WatchedRead:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def session_gone(error: types.ErrorData) -> bool:
    """Whether a call failed because the connection is gone, not because upstream refused it: the stream closed,
    or an HTTP upstream that restarted no longer knows our session (a 404, read by the SDK as "Session not found"
    or "Session terminated"). Only a new connection helps then; the request never ran."""
    if error.code == types.CONNECTION_CLOSED:
        return True
    return error.code == types.INVALID_REQUEST and error.message.casefold().startswith("session ")


class Upstream:
    """One supervised connection; ``tools`` keeps the last list upstream gave (still listed while it is down,
    so an agent's call gets the in-band reason rather than an unknown tool)."""

    def __init__(
        self, spec: UpstreamSpec, cwd: Path, state_path: Path | None, on_tools: Callable[[], Awaitable[None]]
    ) -> None:
        self.spec, self.cwd, self.state_path, self.on_tools = spec, cwd, state_path, on_tools
        self.tools: dict[str, types.Tool] = {}
        self.state = UpstreamState(pid=os.getpid(), upstream=spec.label)
        self.first_attempt = anyio.Event()  # the server waits for it (bounded) before serving its first list
        self._client: Client | None = None
        self._said = StderrTail()  # the command's last lines on stderr, for why it exited
        self._wake = anyio.Event()
        self._lost = self._relist = False

    @property
    def connected(self) -> bool:
        return self._client is not None

    def unavailable(self, reason: str | None = None) -> UpstreamUnavailable:
        why = reason or self.state.last_error or "not connected yet"
        return UpstreamUnavailable(
            f"upstream '{self.spec.label}' is unavailable: {why}; retrying in the background "
            "(`ktx-index status` shows its state); ktx-index's own tools still answer"
        )

    async def call(self, name: str, arguments: dict[str, Any] | None, progress: ProgressFnT | None) -> dict[str, Any]:
        """Forward one tools/call as it is. The result is upstream's wire object, untouched (isError, structured
        content; kept as a dict: the SDK checks it against the protocol, and our server checks it again on the
        way out, so a typed copy in between would only cost a parse and a dump); upstream's own JSON-RPC errors
        pass through; a lost connection raises UpstreamUnavailable. Cancelling the caller cancels the request
        upstream (the SDK sends notifications/cancelled)."""
        client = self._client
        if client is None:
            raise self.unavailable()
        request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
        try:
            result = await client.session.send_request(request, RAW, progress_callback=progress)
        except MCPError as exc:
            if not session_gone(exc.error):
                raise
            self._mark_lost()
            raise self.unavailable() from exc
        # A handshake-era upstream (KTX's SDK) sends no resultType; our 2026-07-28 clients require it, and our
        # server drops it again for handshake-era ones.
        result.setdefault("resultType", "complete")
        return result

    def _mark_lost(self) -> None:
        """Seen lost (end of the stream, or a call answered "connection closed"): say so at once, in the state
        ``status`` reads and to the next call; the supervisor then reconnects."""
        if self._client is not None:
            self._client = None
            self._set("unavailable", last_error=LOST, retry_in_s=None)
        self._lost = True
        self._wake.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()
        elif isinstance(message, Exception):
            log_event(log, logging.DEBUG, "upstream.stream_error", upstream=self.spec.label, error=str(message))

    @asynccontextmanager
    async def _watched(self) -> AsyncIterator[Any]:
        self._said = StderrTail()  # this connection's own: a reconnect does not quote the last process's lines
        async with self.spec.transport(self.cwd, self._said) as (read, write):
            yield _WatchedRead(read, self._mark_lost), write

    async def run(self) -> None:
        """Connect, serve, and connect again after every loss, until cancelled (the server stopping)."""
        delay = BACKOFF_FIRST
        try:
            while True:
                started = time.perf_counter()
                self._lost = self._relist = False
                self._wake = anyio.Event()
                reason, was_up = await self._session(started)
                if was_up:
                    delay = BACKOFF_FIRST  # it was up: the first retry is quick again
                self.state.attempts += 1
                self._set("unavailable", last_error=reason, retry_in_s=delay)
                log_event(
                    log, logging.WARNING, "upstream.unavailable", upstream=self.spec.label, error=reason,
                    attempt=self.state.attempts, retry_in_s=delay,
                )  # fmt: skip
                self.first_attempt.set()
                await anyio.sleep(delay)
                delay = min(delay * 2, BACKOFF_CAP)
        finally:
            with anyio.CancelScope(shield=True):
                self._client = None
                self._set("stopped", retry_in_s=None)

    async def _session(self, started: float) -> tuple[str, bool]:
        """One connection's life; returns why it ended, and whether it had been up."""
        self._set("connecting")
        was_up = False
        with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT) as attempt:
            try:
                async with Client(self._watched(), mode="legacy", message_handler=self._on_message) as client:
                    await self._list(client)
                    attempt.deadline = math.inf
                    self._client, was_up = client, True
                    self.state.attempts = 0
                    self._set("connected", last_error=None, retry_in_s=None)
                    log_event(
                        log, logging.INFO, "upstream.connected", upstream=self.spec.label, tools=list(self.tools),
                        ms=round((time.perf_counter() - started) * 1000, 1),
                    )  # fmt: skip
                    self.first_attempt.set()
                    while not self._lost:
                        await self._wake.wait()
                        self._wake = anyio.Event()
                        if self._relist and not self._lost:
                            self._relist = False
                            await self._list(client)
                return LOST, was_up
            except Exception as exc:
                return describe(exc, self.spec, list(self._said.lines)), was_up
            finally:
                self._client = None
        return f"no answer to initialize and tools/list within {CONNECT_TIMEOUT:g}s", was_up  # the deadline fired

    async def _list(self, client: Client) -> None:
        tools: dict[str, types.Tool] = {}
        cursor: str | None = None
        for _page in range(100):  # a paginator that never ends cannot hang the connection
            result = await client.session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
            tools.update((tool.name, tool) for tool in result.tools)
            cursor = result.next_cursor
            if cursor is None:
                break
        changed = [t.model_dump(by_alias=True, mode="json") for t in tools.values()] != [
            t.model_dump(by_alias=True, mode="json") for t in self.tools.values()
        ]
        self.tools = tools
        if changed:
            log_event(log, logging.INFO, "upstream.tools", upstream=self.spec.label, tools=list(tools))
            await self.on_tools()

    def _set(self, state: UpstreamStateName, **changes: Unpack[UpstreamChanges]) -> None:
        """Enter ``state`` (``since`` moves only when it is a new one), setting what ``changes`` names."""
        since = timestamp() if state != self.state.state else self.state.since
        self.state = self.state.model_copy(update={**changes, "state": state, "since": since})
        self.write_state()

    def write_state(self) -> None:
        """Small and only at a change of state; a file that cannot be written is logged, never raised."""
        if self.state_path is None:
            return
        try:
            self.state_path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.state_path, self.state.model_dump_json())
        except OSError as exc:
            log_event(log, logging.WARNING, "upstream.state_unwritable", error=str(exc))


def describe(exc: BaseException, spec: UpstreamSpec, said: Sequence[str] = ()) -> str:
    """The innermost cause, readable: the SDK's transports wrap the real error in exception groups. ``said``: the
    command's last lines on stderr, quoted when it exited before answering."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, FileNotFoundError) and spec.command:
        return f"command {spec.command[0]!r} not found (is KTX installed and on PATH? see the README's agent config)"
    if isinstance(exc, MCPError):
        if exc.error.code == types.CONNECTION_CLOSED and spec.command:  # it exited before answering
            exited = f"command {spec.label!r} exited before answering (MCP error {exc.error.code}: {exc.error.message})"
            if said:
                return f"{exited}; its last words on stderr: {' | '.join(said)}"  # each line cut as it was kept
            return f"{exited}; it wrote nothing on stderr"
        return f"MCP error {exc.error.code}: {exc.error.message}"
    if isinstance(exc, httpx2.ConnectError) and spec.url:
        return f"nothing answers at {spec.label} (ConnectError: {exc}); is the KTX server running there?"
    return cut(f"{type(exc).__name__}: {exc}")
