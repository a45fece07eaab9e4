"""What every tool shares: annotations, the result envelope, errors and progress."""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel

from ktx_index.errors import KtxIndexError

T = TypeVar("T", bound=BaseModel)

READ_ONLY = ToolAnnotations(readOnlyHint=True, idempotentHint=False, openWorldHint=False)
READ_ONLY_IDEMPOTENT = ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False)


def envelope(result: BaseModel) -> CallToolResult:
    """structuredContent plus the same object as compact JSON text."""
    data = result.model_dump(mode="json")
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


async def call(ctx: Context | None, fn: Callable[..., T], *args: Any, **kwargs: Any) -> CallToolResult:
    """Run a blocking service call off the event loop; library errors become in-band tool errors.

    When the caller sent a progress token, the service's progress callback is relayed as
    ``notifications/progress`` (stage boundaries and counts).
    """
    if ctx is not None and "on_progress" in kwargs:
        kwargs["on_progress"] = _relay(ctx)
    try:
        result = await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
    except KtxIndexError as exc:
        raise ToolError(str(exc)) from exc
    return envelope(result)


def _relay(ctx: Context) -> Callable[[str, int, int], None]:
    def on_progress(stage: str, done: int, total: int) -> None:
        with contextlib.suppress(Exception):  # a client that went away must not fail the call
            anyio.from_thread.run(ctx.report_progress, done, total or None, stage)

    return on_progress
