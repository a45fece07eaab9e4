"""mcp/common.py: blocking service calls run on a bounded set of worker threads."""

from __future__ import annotations

import threading

import anyio
import pytest
from pydantic import BaseModel

from ktx_index.mcp.common import TOOL_THREADS, call

pytestmark = pytest.mark.anyio


class Done(BaseModel):
    n: int


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_at_most_tool_threads_calls_run_at_once_and_a_cancelled_waiting_call_never_runs() -> None:
    """anyio's default of 40 threads let abandoned slow calls hold 52 threads and 300 MB more (an outside pass over
    HTTP): calls past TOOL_THREADS wait, and one cancelled while it waits never starts."""
    running, most, started = 0, 0, []
    lock, release = threading.Lock(), threading.Event()

    def slow(n: int) -> Done:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            started.append(n)
        release.wait(10)
        with lock:
            running -= 1
        return Done(n=n)

    async with anyio.create_task_group() as tg:
        for n in range(TOOL_THREADS + 4):
            tg.start_soon(call, None, slow, n)
        await anyio.sleep(0.3)  # the first TOOL_THREADS run, the others wait
        with anyio.move_on_after(0.3) as abandoned:  # waits behind the others, then is given up
            await call(None, slow, 99)
        assert abandoned.cancelled_caught
        release.set()
    assert most == TOOL_THREADS and 99 not in started and len(started) == TOOL_THREADS + 4
