"""The service's background threads and the stop request they heed.

A thread still inside ONNX Runtime when the interpreter exits aborts the process ("terminate called without an
active exception"), and one started while the service closes (a signal during serve's start) used the store as it
closed: a segfault in SQLite. So every thread the service starts is kept here, a stop is asked before they are
joined, and none starts once a stop was asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class BackgroundThreads:
    def __init__(self) -> None:
        #: A requested stop: writers finish their batch and return; nothing new starts.
        self.stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()  # a join never misses a thread being started

    def start(self, name: str, work: Callable[[], None]) -> threading.Thread:
        """Run ``work`` in a daemon thread that ``join`` waits for (nothing, once a stop was asked)."""
        with self._lock:
            if self.stop.is_set():  # closing: a thread started now could use the engine while it is closed
                work = _nothing
            thread = threading.Thread(target=work, name=name, daemon=True)
            self._threads.append(thread)
            thread.start()
        return thread

    def stop_and_join(self, timeout: float) -> None:
        """Ask for a stop and wait up to ``timeout`` for each thread; those still running are kept."""
        self.stop.set()
        with self._lock:  # from here on start runs nothing that could touch the engine
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)
        with self._lock:
            self._threads = [t for t in self._threads if t.is_alive()]


def _nothing() -> None:
    """What a thread asked for while the service closes does instead."""
