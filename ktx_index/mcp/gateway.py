"""``serve --upstream``: one MCP server for the agent's whole loop, ktx-index's seven tools plus upstream KTX's.

The server lists its own tools, then every upstream tool it does not serve itself, exactly as upstream lists
it (schemas, annotations, title, description). A call to one of those is forwarded as it is (`upstream.py`):
the arguments, the result (isError and structured content included), upstream's progress notifications relayed
to our caller in order, and our caller's cancellation passed on. When upstream's list changes (it reconnected,
or it sent ``notifications/tools/list_changed``) every connected client is told with the same notification.

The hook in ``server.py`` is small on purpose: ``KtxMCPServer.list_tools`` asks ``Gateway.merged`` and
``call_tool`` hands ``Gateway.forwards`` names to ``Gateway.call``; without ``--upstream`` there is no
gateway and nothing changes.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.mcpserver import Context
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ToolsListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from ktx_index.logs import log_event
from ktx_index.mcp.common import KTX_TOOLS, log_call
from ktx_index.mcp.upstream import Upstream, UpstreamSpec, UpstreamUnavailable

log = logging.getLogger("ktx_index.mcp")

#: How long the server waits at start for upstream's first answer, so that the first tools/list already holds
#: upstream's tools (some clients list once). A slower upstream joins later, announced by list_changed.
START_WAIT = 15.0


class Gateway:
    """The upstream connection plus what the server needs from it: the merged list, forwarding, and telling
    clients when the list changes. Constructed before the server, whose constructor takes ``bus``,
    ``middleware`` and ``lifespan`` from it."""

    def __init__(self, spec: UpstreamSpec, cwd: Path, state_path: Path | None, errors_path: Path | None) -> None:
        self.upstream = Upstream(spec, cwd, state_path, self._tools_changed)
        self.errors_path = errors_path
        self.local: frozenset[str] = frozenset()  # set by build_server: the names ktx-index serves itself
        # 2026-07-28 clients hear about list changes on subscriptions/listen streams, fed by this bus;
        # handshake-era clients on their connection's standalone channel, one session per connection.
        self.bus = InMemorySubscriptionBus()
        self._sessions: dict[int, ServerSession] = {}
        self.middleware = [self._track_sessions]

    def instructions(self) -> str:
        """Appended to the server's instructions: where the rest of the loop is."""
        return (
            f" The other tools (queries with sl_query or sql_execution, sql_dialect_notes before raw SQL, "
            f"memory_ingest) are upstream KTX's ('{self.upstream.spec.label}'), forwarded as they are."
        )

    # ------------------------------------------------------------------ the list

    def merged(self, local: list[types.Tool]) -> list[types.Tool]:
        """Ours first, then upstream's in its order, minus names we serve (ours win)."""
        if not self.upstream.tools:
            return local
        return local + [tool for name, tool in self.upstream.tools.items() if name not in self.local]

    def hidden(self) -> list[str]:
        return [name for name in self.upstream.tools if name in self.local]

    async def _tools_changed(self) -> None:
        state = self.upstream.state
        state.tools = [name for name in self.upstream.tools if name not in self.local]
        hidden = self.hidden()
        if hidden != state.hidden:
            log_event(
                log, logging.INFO, "upstream.collision", upstream=self.upstream.spec.label, tools=hidden,
                served_by="ktx-index",
            )  # fmt: skip
        state.hidden = hidden
        self.upstream.write_state()
        await self.bus.publish(ToolsListChanged())
        for key, session in list(self._sessions.items()):
            try:
                await session.send_tool_list_changed()
            except Exception as exc:  # a connection closing under us must not look like an upstream failure
                self._sessions.pop(key, None)
                log_event(log, logging.DEBUG, "upstream.notify_failed", error=f"{type(exc).__name__}: {exc}")

    async def _track_sessions(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Remember each handshake-era connection (at its notifications/initialized) until it closes."""
        if ctx.method == "notifications/initialized" and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # SDK gap (mcp 2.3.0): middleware gets a ServerRequestContext, which carries the ServerSession but not
            # its Connection (the session keeps it as _connection); the connection's exit stack is where
            # per-connection cleanup goes, so the session is forgotten when the client goes away.
            connection = getattr(ctx.session, "_connection", None)
            key = id(connection if connection is not None else ctx.session)
            self._sessions[key] = ctx.session
            if connection is not None:
                connection.exit_stack.callback(self._sessions.pop, key, None)
        return await call_next(ctx)

    # ------------------------------------------------------------------ calls

    def forwards(self, name: str) -> bool:
        """Upstream's tools, and (while upstream is connected) any name we do not serve: upstream answers an
        unknown tool itself, in-band, as KTX does. KTX's own tool names are upstream's even before it was ever
        reached (a missing ``ktx`` command): the call is told why upstream is unavailable, not that the tool is
        unknown."""
        if name in self.local:
            return False
        return name in self.upstream.tools or self.upstream.connected or name in KTX_TOOLS

    async def call(self, name: str, arguments: dict[str, Any], context: Context | None) -> Any:
        """Forward one call and log it as a ``tool.call`` event with ``upstream`` set."""
        started = time.perf_counter()
        fields: dict[str, Any] = {"tool": name, "arguments": arguments, "upstream": self.upstream.spec.label}
        try:
            result = await self._forward(name, arguments, context)
        except UpstreamUnavailable as exc:
            log_call(started, self.errors_path, "UpstreamUnavailable", str(exc), **fields)
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)
        except MCPError as exc:  # upstream's own JSON-RPC error: passed through as it is, and logged like the rest
            log_call(started, self.errors_path, "UpstreamError", f"{exc.error.code}: {exc.error.message}", **fields)
            raise
        if result.get("isError"):
            content = result.get("content") or [{}]
            text = content[0].get("text", "") if isinstance(content[0], dict) else ""
            log_call(started, self.errors_path, "UpstreamToolError", text, **fields)
        else:
            log_call(started, None, **fields)
        return result

    async def _forward(self, name: str, arguments: dict[str, Any], context: Context | None) -> dict[str, Any]:
        if not _wants_progress(context):
            return await self.upstream.call(name, arguments, None)
        assert context is not None
        # The SDK runs each progress callback as its own task; they start in arrival order, so each only
        # queues its notification and one relay sends them, in order, before the result goes back.
        send, receive = anyio.create_memory_object_stream[tuple[float, float | None, str | None]](math.inf)

        async def queue(progress: float, total: float | None, message: str | None) -> None:
            send.send_nowait((progress, total, message))

        async def relay() -> None:
            async with receive:
                async for progress, total, message in receive:
                    await context.report_progress(progress, total, message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            with send:
                return await self.upstream.call(name, arguments, queue)
        raise AssertionError("unreachable")  # pragma: no cover  (the task group re-raises or returns)

    # ------------------------------------------------------------------ life

    @asynccontextmanager
    async def lifespan(self, _server: Any) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: the upstream connection lives in the server's event loop, for its whole run."""
        self.upstream.first_attempt = anyio.Event()  # one per run: an in-process test client enters it again
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.upstream.run)
            with anyio.move_on_after(START_WAIT):
                await self.upstream.first_attempt.wait()
            try:
                yield {}
            finally:
                tg.cancel_scope.cancel()


def _wants_progress(context: Context | None) -> bool:
    """Whether our caller sent a progress token (only then is upstream asked for progress)."""
    if context is None:
        return False
    try:
        meta = context.request_context.meta or {}
    except ValueError:  # no request (a direct call in-process)
        return False
    return meta.get("progress_token", meta.get("progressToken")) is not None


def advertise_list_changed(server: Server[Any]) -> None:
    """Handshake-era clients re-list on ``notifications/tools/list_changed`` only when the server said it sends
    them (``tools.listChanged``); the SDK's stdio and HTTP runners build that from default options."""
    build = server.create_initialization_options

    def with_list_changed(notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any) -> Any:
        return build(notification_options or NotificationOptions(tools_changed=True), *args, **kwargs)

    server.create_initialization_options = with_list_changed  # type: ignore[method-assign]
