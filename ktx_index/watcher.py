"""The watch daemon: file events become the same incremental update a rebuild makes.

Only ``wiki/``, ``semantic-layer/``, ``raw-sources/`` and ``ktx.yaml`` are watched (never
``.ktx/``). Events are batched (editors save through temp files and renames, git touches
hundreds of files at once); each batch is one incremental rebuild and one commit, after
which readers reload. The watcher holds the index writer for its whole life, and records
its state in ``.ktx/index/watcher.json`` for ``status``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

from ktx_index.reports import RebuildReport
from ktx_index.service import KtxIndex

TREES = ("wiki", "semantic-layer", "raw-sources")
CONFIG = "ktx.yaml"
#: Work per idle wake-up on an embedding backlog: at most this many texts and about this long, so an
#: event waits little behind it. A slice also has fixed costs that grow with the index (finding the
#: pending texts, reloading the vectors readers see); the budget grows to twice them, so about two
#: thirds of the watcher's time on a backlog goes to embedding.
EMBED_SLICE = 1024
EMBED_SLICE_S = 0.1
MAX_EMBED_SLICE_S = 5.0
#: How often the loop wakes without events: the pace at which a backlog's slices follow each other.
IDLE_WAKE_MS = 50
TEMP_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".crdownload")


def _now() -> str:
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"


def relevant(root: Path, path: str) -> bool:
    """Events worth a rebuild: project sources, not dotfiles, editor temp files or the index itself."""
    try:
        rel = Path(path).resolve().relative_to(root.resolve())
    except ValueError:
        rel = Path(path)
    parts = rel.parts
    if not parts or any(p.startswith(".") for p in parts):
        return False
    name = parts[-1]
    if name.endswith(TEMP_SUFFIXES) or name.startswith("#") or name.isdigit():  # vim's 4913 probe, emacs #x#
        return False
    return parts[0] in TREES or rel.as_posix() == CONFIG


class Watcher:
    def __init__(
        self,
        service: KtxIndex,
        step_ms: int = 40,
        debounce_ms: int = 400,
        on_batch: Callable[[RebuildReport], None] | None = None,
    ) -> None:
        self.service = service
        self.root = service.root
        self.step_ms = step_ms
        self.debounce_ms = debounce_ms
        self.on_batch = on_batch
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.state: dict[str, object] = {
            "pid": os.getpid(), "started": _now(), "last_event": None, "last_commit": None, "pending": 0,
            "embedding_backlog": False,  # texts committed but not embedded yet (a burst's tail)
        }  # fmt: skip
        self._slice_s = EMBED_SLICE_S
        self.error: BaseException | None = None
        self.ready = threading.Event()

    # ------------------------------------------------------------------ lifecycle

    def start_in_thread(self) -> None:
        """Run in a background thread (``serve --watch``); raises here if another process holds the writer."""
        self.service.acquire_writer()
        self._thread = threading.Thread(target=self._run_guarded, name="ktx-index-watcher", daemon=True)
        self._thread.start()

    def _run_guarded(self) -> None:
        try:
            self.run()
        except BaseException as exc:
            self.error = exc

    def request_stop(self) -> None:
        self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        self._write_state(pid=None)
        self.service.release_writer()

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        """Watch, catch up with the files, then apply each batch of events until stopped.

        The catch-up commit runs once watching has started (on the first wake-up), so an edit
        made while it runs is an event, not a loss; it runs again whenever a watched tree
        appears or vanishes, since files already inside a new tree raise no event."""
        self.service.acquire_writer()
        catch_up = True
        backlog = False
        config_stat = self._config_stat()
        while not self._stop.is_set():
            trees = [self.root / t for t in TREES if (self.root / t).is_dir()]
            for changes in watchfiles.watch(
                *(trees or [self.root]),
                watch_filter=lambda _change, path: relevant(self.root, path),
                step=self.step_ms,
                debounce=self.debounce_ms,
                stop_event=self._stop,
                yield_on_timeout=True,
                rust_timeout=IDLE_WAKE_MS,
                raise_interrupt=False,
            ):
                config_now = self._config_stat()
                if changes or config_now != config_stat:
                    config_stat = config_now
                    self.state["last_event"] = _now()
                    self.state["pending"] = len(changes) or 1
                    self._write_state()
                if changes or catch_up or self.state["pending"]:
                    first = not self.ready.is_set()
                    catch_up = False
                    self._commit()  # documents and lexical index: searchable now
                    self.ready.set()
                    if first:  # parse shared files ahead, while readers start; events meanwhile are queued
                        self.service.acquire_writer().warm()
                    # an edit's own texts (one slice) are embedded at once; a burst's rest in idle slices
                    backlog = self._embed_slice()
                elif backlog:  # idle: embed a slice of what the commits left pending
                    backlog = self._embed_slice()
                if [t for t in TREES if (self.root / t).is_dir()] != [p.name for p in trees]:
                    catch_up = True
                    break  # a tree appeared or vanished: watch the new set, then catch up

    def _embed_slice(self) -> bool:
        """Embed one slice of pending texts; True while some remain (recorded for status readers)."""
        started = time.perf_counter()
        backlog = self.service.embed_pending(limit=EMBED_SLICE, budget_s=self._slice_s)[1] == "pending"
        fixed_costs = time.perf_counter() - started - self._slice_s
        self._slice_s = min(MAX_EMBED_SLICE_S, max(EMBED_SLICE_S, 2 * fixed_costs))
        if backlog != self.state["embedding_backlog"]:
            self.state["embedding_backlog"] = backlog
            self._write_state()
        return backlog

    def _commit(self) -> None:
        report = self.service.rebuild(embed=False)
        self.state["last_commit"] = _now()
        self.state["pending"] = 0
        self.state["last_report"] = {
            "added": report.added, "updated": report.updated, "deleted": report.deleted,
            "kept_stale": report.kept_stale, "generation": report.generation,
        }  # fmt: skip
        self._write_state()
        if self.on_batch is not None:
            self.on_batch(report)

    def _config_stat(self) -> tuple[int, int] | None:
        try:
            st = (self.root / CONFIG).stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def _write_state(self, **overrides: object) -> None:
        path = self.service.layout.watcher
        data = {**self.state, **overrides}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
