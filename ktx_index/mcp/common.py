"""What every tool shares: registration, annotations, the result envelope, errors, progress, and the names of KTX's
other tools."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.lowlevel import RunVar
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, PrivateAttr

from ktx_index.errors import KtxIndexError, refused_by_system
from ktx_index.logs import log_event, record_error

#: Upstream KTX's other tools (reference/ktx-upstream-contract.md §3): the warehouse, dialect and memory ones,
#: which ``serve --upstream`` forwards. An agent written for KTX calls them by name, so a call to one is told
#: where it is served rather than only that it is unknown.
KTX_TOOLS = ("sl_query", "sql_execution", "sql_dialect_notes", "memory_ingest", "memory_ingest_status", "mongo_query")

log = logging.getLogger("ktx_index.mcp")


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (time.perf_counter), as the call log writes them."""
    return round((time.perf_counter() - started) * 1000, 2)


def log_call(
    started: float, errors_path: Path | None, kind: str | None = None, message: str = "", **fields: Any
) -> None:
    """One tool call's ``tool.call`` line (``fields``: tool, arguments, …); a failed one (``kind``) is a warning and
    is kept for ``status`` in ``errors_path`` (None: not kept), whether this server or upstream answered it."""
    if kind is None:
        log_event(log, logging.INFO, "tool.call", **fields, ms=elapsed_ms(started))
        return
    log_event(log, logging.WARNING, "tool.call", **fields, ms=elapsed_ms(started), error_kind=kind, error=message)
    if errors_path is not None:
        record_error(errors_path, tool=fields["tool"], kind=kind, message=message)


#: The longest a call that reports progress goes without a notification while its stage runs.
HEARTBEAT_S = 1.0

T = TypeVar("T", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])


def stripped(value: object) -> object:
    """Models pad strings with spaces: a string is read without them. One of spaces alone is left as it is, so
    that what the inputSchema admits is never refused as an argument error (the tool says what is wrong)."""
    return (value.strip() or value) if isinstance(value, str) else value


def as_list(value: object) -> object:
    """Models drift into sending one string where a list is expected: it is read as a list of one, and each
    string in it without the spaces around it."""
    items = [value] if isinstance(value, str) else value
    return [stripped(item) for item in items] if isinstance(items, list) else items


def read_only(title: str, idempotent: bool = False) -> ToolAnnotations:
    """Upstream's annotations: the title repeated, read-only, closed world, and idempotentHint only when true
    (upstream omits the key rather than sending false)."""
    return ToolAnnotations(
        title=title, readOnlyHint=True, idempotentHint=True if idempotent else None, openWorldHint=False
    )


class ToolSet(list[Tool]):
    """The tools a module defines, collected by a decorator like ``MCPServer.tool`` and handed to the server's
    constructor (``MCPServer(tools=...)``), so the server keeps them by name without reaching into the SDK's
    tool manager."""

    def tool(self, name: str, title: str, description: str, idempotent: bool = False) -> Callable[[F], F]:
        def add(fn: F) -> F:
            annotations = read_only(title, idempotent)
            self.append(
                Tool.from_function(fn, name=name, title=title, description=description, annotations=annotations)
            )
            return fn

        return add


class ToolFailure(CallToolResult):
    """An in-band error whose text is the library's message alone, as upstream KTX writes it (``Wiki page "x" was
    not found.``), without the SDK's ``Error executing tool …`` prefix; the error kind rides along for the call
    log and never goes on the wire."""

    _kind: str = PrivateAttr(default="")

    @classmethod
    def of(cls, message: str, kind: str) -> ToolFailure:
        failure = cls(content=[TextContent(type="text", text=message)], is_error=True)
        failure._kind = kind
        return failure

    @property
    def kind(self) -> str:
        return self._kind


def envelope(result: BaseModel) -> CallToolResult:
    """structuredContent plus the same object as compact JSON text."""
    data = result.model_dump(mode="json")
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


#: Tool calls that run on worker threads at once (more wait, and a call cancelled or abandoned while waiting never
#: runs): anyio's default of 40 let abandoned slow calls hold 52 threads and 300 MB more on a two-core machine
#: (an outside pass over HTTP). Several still overlap a first build or a long read with the warm answers.
TOOL_THREADS = 8
_TOOL_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("ktx_index_tool_threads")


def _tool_threads() -> anyio.CapacityLimiter:
    """The tool calls' limiter of the running event loop (a limiter belongs to one loop, as anyio's own does)."""
    try:
        return _TOOL_THREADS.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(TOOL_THREADS)
        _TOOL_THREADS.set(limiter)
        return limiter


async def call(
    ctx: Context | None, fn: Callable[..., T], *args: Any, at_once: Callable[[], bool] | None = None, **kwargs: Any
) -> CallToolResult:
    """Run a blocking service call off the event loop; library errors become in-band tool errors (their own
    message, nothing added).

    ``ctx``: the call's context when ``fn`` reports progress (it takes ``on_progress``), None when it does not. When
    the caller sent a progress token, that progress is relayed as ``notifications/progress`` (stage boundaries and
    counts). When ``at_once`` says the call will take
    milliseconds (a warm search: KtxIndex.answers_at_once), it runs on the event loop instead, saving the hop
    to a worker thread and back (0.1-0.4 ms of a ~9 ms MCP call on a 2-core machine, docs/benchmarks.md).
    """
    try:
        if at_once is not None and at_once():
            result = fn(*args, **kwargs)  # no build, so no progress to relay (on_progress stays as given)
        else:
            if ctx is not None:
                kwargs["on_progress"] = _relay(ctx)
            work = functools.partial(fn, *args, **kwargs)
            result = await anyio.to_thread.run_sync(work, limiter=_tool_threads())
    except KtxIndexError as exc:
        return ToolFailure.of(str(exc), type(exc).__name__)
    except OSError as exc:
        return ToolFailure.of(refused_by_system(exc), type(exc).__name__)
    return envelope(result)


def _relay(ctx: Context) -> Callable[[str, int, int], None]:
    """The service's progress as MCP wants it: a notification where a stage starts, where it ends, and at least
    every HEARTBEAT_S between (not one per file or batch; a client that restarts its timeout on progress is never
    left silent through a long embedding), each worth one step more than the last. The MCP spec says the value
    MUST increase, and each stage counts from 1 again (parse 87/87, then embed 256/1769), so the counts go in
    the message ("embed 256/1769") and the value counts the notifications."""
    sent, last = 0, 0.0
    current: str | None = None
    in_order = threading.Lock()  # keeps the count and the sends in order, whichever thread reports

    def on_progress(stage: str, done: int, total: int) -> None:
        nonlocal sent, last, current
        with in_order:
            now = time.monotonic()
            starts, ends = stage != current, bool(total) and done >= total
            if not (starts or ends or now - last >= HEARTBEAT_S):
                return
            current, sent, last = stage, sent + 1, now
            message = f"{stage} {done}/{total}" if total else stage
            with contextlib.suppress(Exception):  # a client that went away must not fail the call
                anyio.from_thread.run(ctx.report_progress, sent, None, message)

    return on_progress
