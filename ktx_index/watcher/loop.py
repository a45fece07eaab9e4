"""The watch daemon: file events become the same incremental update a rebuild makes.

Only ``wiki/``, ``semantic-layer/``, ``raw-sources/`` and ``ktx.yaml`` are watched (never
``.ktx/``). Events are batched (editors save through temp files and renames, git touches
hundreds of files at once); each batch is one incremental rebuild and one commit, after
which readers reload. The watcher holds the index writer for its whole life, and records
its state (one typed model, ``WatcherState``) in ``.ktx/index/watcher.json`` for ``status``.

Supervised: a batch that raises (a full disk, a permission error) is logged, counted in the
state file (``state: retrying``, ``last_error``) and tried again with backoff, so one bad
batch never ends watching; the watch itself is restarted the same way a few times before the
watcher says ``failed``. ``ready`` is set after the first catch-up attempt whatever its
outcome, so ``serve --watch`` never waits on a watcher that cannot start.

The loop is a state machine (states.py: the phases and the pure ``decide``): at each wake-up it gathers what it
saw, lets ``decide`` pick the next step, runs it and feeds the outcome back.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import watchfiles

from indexers.project import CONFIG_FILE, PROJECT_TREES
from ktx_index.errors import Stopped
from ktx_index.logs import log_event, write_atomic
from ktx_index.logs import timestamp as _now
from ktx_index.reports import BatchSummary, RebuildReport, WatcherError, WatcherState
from ktx_index.service import KtxIndex
from ktx_index.watcher.states import Action, Inputs, Outcome, Phase, decide

#: Work per idle wake-up on an embedding backlog: at most this many texts and about this long, so an
#: event waits little behind it. A slice also has fixed costs that grow with the index (finding the
#: pending texts, reloading the vectors readers see); the budget grows to twice them, so about two
#: thirds of the watcher's time on a backlog goes to embedding.
EMBED_SLICE = 1024
EMBED_SLICE_S = 0.1
MAX_EMBED_SLICE_S = 5.0
#: How often the loop wakes without events: the pace at which a backlog's slices follow each other.
IDLE_WAKE_MS = 50
#: Backoff before a failed batch is tried again: doubles from FIRST_RETRY_S up to MAX_RETRY_S.
FIRST_RETRY_S = 0.25
MAX_RETRY_S = 30.0
#: The watch itself (not a batch) failing this many times in a row ends the watcher (state: failed); a watch that
#: ran HEALTHY_WATCH_S before failing starts the count again (six failures a day apart are not "in a row").
MAX_WATCH_RESTARTS = 5
HEALTHY_WATCH_S = 60.0
RECENT_ERRORS = 5
#: A commit told which paths changed plans from them alone (``planning.Planner``); idle this long since the
#: last full plan, the watcher plans in full once, so an event the OS dropped is picked up anyway.
IDLE_FULL_PLAN_S = 120.0
TEMP_SUFFIXES = ("~", ".swp", ".swx", ".tmp", ".part", ".crdownload")


log = logging.getLogger("ktx_index.watcher")  # the logger keeps the name the docs and log readers know


def relevant(root: Path, path: str, index: Path | None = None) -> bool:
    """Events worth a rebuild: project sources, not dotfiles, editor temp files or the index itself (``index``: its
    folder, wherever KTX_INDEX_HOME put it: inside ``wiki/`` its own writes woke the watcher ten times a second).

    The tree is told from the path as the event names it, as ``_relative`` tells it: resolved, an edit under a tree
    that is a symlink (``wiki -> docs/wiki``) read as one under ``docs/`` and was dropped, though rebuild indexes it.
    Only the index check resolves, so an index reached through a symlink is still known."""
    if index is not None and _real(Path(path)).is_relative_to(_real(index)):
        return False
    rel = _relative(root, path)
    if rel is None:
        return False
    parts = Path(rel).parts
    if not parts or any(p.startswith(".") for p in parts):
        return False
    name = parts[-1]
    if name.endswith(TEMP_SUFFIXES) or name.startswith("#") or name.isdigit():  # vim's 4913 probe, emacs #x#
        return False
    return parts[0] in PROJECT_TREES or rel == CONFIG_FILE


def _relative(root: Path, path: str) -> str | None:
    """The project-relative path the indexers list, or None when it cannot be told."""
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        try:
            return _real(Path(path)).relative_to(_real(root)).as_posix()
        except (OSError, ValueError):
            return None


def _real(path: Path) -> Path:
    """The path with symlinks resolved as far as they go: ``Path.resolve`` raises on a symlink loop before Python
    3.13 (a loop made in the wiki ended the watch), ``os.path.realpath`` stops at it."""
    return Path(os.path.realpath(path))


class Watcher:
    def __init__(
        self,
        service: KtxIndex,
        step_ms: int = 40,
        debounce_ms: int = 400,
        on_batch: Callable[[RebuildReport], None] | None = None,
        idle_plan_s: float = IDLE_FULL_PLAN_S,
        on_embedded: Callable[[int, float], None] | None = None,
    ) -> None:
        """``idle_plan_s``: how long after the last full plan an idle watcher plans in full again, the safety net
        for a change no event reported (tests shorten it to exercise that net). ``on_embedded`` hears how many texts
        were embedded, and in how many ms, once the commits' new texts are all embedded (a commit embeds none: its
        documents are searchable by their words at once, by meaning a moment later)."""
        self.service = service
        self.root = service.root
        self.step_ms = step_ms
        self.debounce_ms = debounce_ms
        self.on_batch = on_batch
        self.on_embedded = on_embedded
        self._embedded = (0, 0.0)  # texts embedded since the backlog was last empty, and the ms it took
        self.idle_plan_s = idle_plan_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.state = WatcherState(pid=os.getpid(), started=_now())
        self._slice_s = EMBED_SLICE_S
        self._failures = 0  # consecutive failed attempts (batches or watch restarts)
        self._retry_at = 0.0
        self.error: BaseException | None = None  # what ended the watcher, when it failed
        self.ready = threading.Event()
        self.phase = Phase.CATCHING_UP
        self._warmed = False  # shared files parsed ahead once, after the first commit (Builder.warm)
        # paths changed since the last commit (None: plan in full), those seen appear, when planned in full
        self._changed: set[str] | None = None
        self._created: set[str] = set()
        self._full_plan_at = 0.0

    # ------------------------------------------------------------------ lifecycle

    def start_in_thread(self) -> None:
        """Run in a background thread (``serve --watch``); raises here if another process holds the writer."""
        self.service.acquire_writer()
        self._thread = threading.Thread(target=self._run_guarded, name="ktx-index-watcher", daemon=True)
        self._thread.start()

    def _run_guarded(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # whatever ends the thread is recorded, never lost (once: run records its own)
            if self.error is not exc:
                self._fail(exc)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Until the first catch-up was attempted (committed or failed) or the thread ended; never longer."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.ready.wait(0.05):
            if not self.alive or (deadline is not None and time.monotonic() > deadline):
                return self.ready.is_set()
        return True

    def request_stop(self) -> None:
        """Stop at the next safe point (safe from a signal handler): a batch being read is discarded,
        one being committed completes, an embedding slice ends after its batch."""
        self._stop.set()
        self.service.request_stop()

    def stop(self, timeout: float = 60.0) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)
        if self.state.state != "failed":
            self.state.state = "stopped"
        self.state.retry_in_s = None
        self._write_state(pid=None)
        self.service.release_writer()  # waits for a commit still in progress: it is never cut in half
        self.service.resume()

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        """Watch, catch up with the files, then apply each batch of events until stopped.

        The catch-up commit runs once watching has started (on the first wake-up), so an edit made while it runs
        is an event, not a loss. A failure of the watch itself restarts it (with a catch-up) after a backoff,
        MAX_WATCH_RESTARTS times; the next one is recorded (state: failed, ``error``) and raised, so both callers,
        ``serve --watch``'s thread and ``ktx-index watch`` in the foreground, leave the same verdict for ``status``."""
        self.service.acquire_writer()
        self.state.state = "running"
        self._write_state()
        restarts = 0
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._watch()
                restarts = 0
            except Exception as exc:
                restarts = 1 if time.monotonic() - started >= HEALTHY_WATCH_S else restarts + 1
                if restarts > MAX_WATCH_RESTARTS:
                    self._fail(exc)
                    raise
                self._record_failure("watch", exc)
                self._stop.wait(self._retry_at - time.monotonic())

    def _watch(self) -> None:
        """Watch the trees that exist now, until that set changes: gather inputs, ``decide``, run the action."""
        self.phase = Phase.CATCHING_UP
        config_stat = self._config_stat()
        trees, index = self._trees(), self.service.layout.dir
        watch = watchfiles.watch(
            *(trees or [self.root]), watch_filter=lambda _change, path: relevant(self.root, path, index), step=self.step_ms,
            debounce=self.debounce_ms, stop_event=self._stop, yield_on_timeout=True, rust_timeout=IDLE_WAKE_MS,
            raise_interrupt=False, ignore_permission_denied=True,
        )  # fmt: skip
        # ignore_permission_denied: a folder that cannot be listed is the rebuild's to report (an ``unlisted``
        # diagnostic, its documents kept), not a reason to stop watching the rest; the idle full plan finds its
        # files once it can be read again
        for changes in watch:
            config_now, now = self._config_stat(), time.monotonic()
            seen = Inputs(
                events=bool(changes), config_changed=config_now != config_stat, trees_changed=self._trees() != trees,
                stopping=self._stopping, retry_due=now >= self._retry_at,
                idle_plan_due=now - self._full_plan_at > self.idle_plan_s, warmed=self._warmed,
            )  # fmt: skip
            if seen.events or seen.config_changed:
                config_stat = config_now
                self.state.last_event = _now()
                self.state.pending = max(self.state.pending, len(changes) or 1)
                self._write_state()
            action, self.phase = decide(self.phase, seen)
            self._note(changes, full=self.phase is Phase.CATCHING_UP)
            while action is not Action.WAIT:
                if action is Action.RESTART:
                    return
                outcome = self._run(action)
                after = Inputs(stopping=self._stopping, warmed=self._warmed, after=(action, outcome))
                action, self.phase = decide(self.phase, after)

    @property
    def _stopping(self) -> bool:
        return self._stop.is_set() or self.service.stopping

    def _trees(self) -> list[Path]:
        return [self.root / t for t in PROJECT_TREES if (self.root / t).is_dir()]

    def _run(self, action: Action) -> Outcome:
        if action is Action.COMMIT:
            outcome = self._attempt("commit", self._commit)
            self.ready.set()  # the first catch-up was attempted, whatever its outcome
            return outcome
        if action is Action.WARM:  # parse shared files ahead while readers start; events meanwhile queue
            outcome = self._attempt("warm", self._warm)
            self._warmed = outcome is Outcome.DONE
            gc.freeze()  # what is parsed and loaded by now lives long: keep full collections off it
            return outcome
        return self._attempt("embed", self._embed_slice)

    def _attempt(self, during: str, step: Callable[[], Outcome]) -> Outcome:
        """Run one step; a failure is recorded and its retry scheduled, a success after failures clears them."""
        try:
            outcome = step()
        except Stopped:
            return Outcome.STOPPED  # a requested stop, not a failure: the loop ends at its next wake-up
        except Exception as exc:
            self._record_failure(during, exc)
            return Outcome.FAILED
        if self._failures:
            self._failures = 0
            self._retry_at = 0.0
            self.state.state, self.state.retry_in_s = "running", None
            log_event(log, logging.INFO, "watcher.recovered", during=during)
            self._write_state()
        return outcome

    def _record_failure(self, during: str, exc: BaseException) -> None:
        self._failures += 1
        delay = min(MAX_RETRY_S, FIRST_RETRY_S * 2 ** (self._failures - 1))
        self._retry_at = time.monotonic() + delay
        message = f"{type(exc).__name__}: {exc}"
        state = self.state
        state.errors += 1
        state.state, state.last_error, state.retry_in_s = "retrying", message, delay
        state.recent_errors = [*state.recent_errors, WatcherError(at=_now(), during=during, error=message)][
            -RECENT_ERRORS:
        ]
        log_event(
            log, logging.ERROR, "watcher.error", during=during, error_kind=type(exc).__name__, error=str(exc),
            errors=state.errors, retry_in_s=delay,
        )  # fmt: skip
        self._write_state()
        self.ready.set()  # a catch-up that failed still ends the wait: the server answers from the last commit

    def _fail(self, exc: BaseException) -> None:
        self.error = exc
        message = f"{type(exc).__name__}: {exc}"
        self.state.state, self.state.last_error, self.state.retry_in_s = "failed", message, None
        self.state.errors += 1
        self.state.recent_errors = [*self.state.recent_errors, WatcherError(at=_now(), during="watch", error=message)][
            -RECENT_ERRORS:
        ]
        log_event(
            log, logging.CRITICAL, "watcher.failed", error_kind=type(exc).__name__, error=str(exc),
            next_step="edits are no longer indexed; restart the server (or `ktx-index watch`) once fixed",
        )  # fmt: skip
        self._write_state()
        self.ready.set()  # nobody waits on a dead thread

    def _warm(self) -> Outcome:
        started = time.perf_counter()
        self.service.acquire_writer().warm()
        log_event(log, logging.INFO, "watcher.warmed", ms=round((time.perf_counter() - started) * 1000, 1))
        return Outcome.DONE

    def _embed_slice(self) -> Outcome:
        """Embed one slice of pending texts; MORE while some remain (recorded for status readers)."""
        started = time.perf_counter()
        done, status = self.service.embed_pending(limit=EMBED_SLICE, budget_s=self._slice_s)
        backlog = status == "pending"
        fixed_costs = time.perf_counter() - started - self._slice_s
        self._slice_s = min(MAX_EMBED_SLICE_S, max(EMBED_SLICE_S, 2 * fixed_costs))
        ms = (time.perf_counter() - started) * 1000
        if done:
            log_event(log, logging.DEBUG, "watcher.embed", embedded=done, status=status, ms=round(ms, 1))
        count, total_ms = self._embedded = (self._embedded[0] + done, self._embedded[1] + ms)
        if not backlog:
            self._embedded = (0, 0.0)
            if count and status == "ready" and self.on_embedded is not None:  # not a model that broke midway
                self.on_embedded(count, total_ms)
        if backlog != self.state.embedding_backlog:
            self.state.embedding_backlog = backlog
            self._write_state()
        return Outcome.MORE if backlog else Outcome.DONE

    def _note(self, changes: set[tuple[watchfiles.Change, str]], full: bool) -> None:
        """Gather the changed paths for the next commit's plan; anything unusual plans in full."""
        if full or self._changed is None:
            self._changed = None  # a full plan is due: these paths add nothing to it
            return
        for change, path in changes:
            rel = _relative(self.root, path)
            if rel is None:
                self._changed = None
                return
            self._changed.add(rel)
            if change == watchfiles.Change.added:
                self._created.add(rel)

    def _commit(self) -> Outcome:
        changed, created = self._changed, self._created
        self._changed, self._created = None, set()  # a failed commit plans in full when it is tried again
        report = self.service.rebuild(embed=False, changed=changed, created=created)
        self._changed = set()
        if changed is None:
            self._full_plan_at = time.monotonic()
            if self._found_nothing(report):
                log_event(log, logging.DEBUG, "watcher.full_plan", generation=report.generation, ms=report.duration_ms)
                return Outcome.DONE
        self.state.last_commit = _now()
        self.state.pending = 0
        self.state.last_report = BatchSummary(
            added=report.added, updated=report.updated, deleted=report.deleted,
            kept_stale=report.kept_stale, generation=report.generation,
        )  # fmt: skip
        self._write_state()
        log_event(
            log, logging.INFO, "watcher.commit", generation=report.generation, targeted=report.targeted, added=report.added,
            updated=report.updated, deleted=report.deleted, kept_stale=report.kept_stale, ms=report.duration_ms,
        )  # fmt: skip
        if self.on_batch is not None:
            self.on_batch(report)
        return Outcome.DONE

    def _found_nothing(self, report: RebuildReport) -> bool:
        """Whether a full plan the watcher made of its own accord (no event or ``ktx.yaml`` change pending: the idle
        safety net every 120 s, a restarted watch's catch-up) found nothing to change since the last commit: then it
        is no commit (``watch`` printed 'commit 1: +0 ~0 -0' every two minutes, and status's last commit moved with
        nothing committed). The first commit is one all the same: it says the watcher has caught up; and a plan
        something the user did asked for is one, so a save is answered even when it changed nothing."""
        last = self.state.last_report
        changes = report.added or report.updated or report.deleted or report.kept_stale
        return last is not None and not self.state.pending and report.generation == last.generation and not changes

    def _config_stat(self) -> tuple[int, int] | None:
        try:
            st = (self.root / CONFIG_FILE).stat()
        except OSError:
            return None
        return (st.st_size, st.st_mtime_ns)

    def _write_state(self, **overrides: object) -> None:
        """Replace watcher.json atomically; a state that cannot be written (full disk) is logged, not fatal."""
        path = self.service.layout.watcher
        data = self.state.model_copy(update=overrides)
        try:
            write_atomic(path, data.model_dump_json())
        except OSError as exc:
            log_event(log, logging.WARNING, "watcher.state_unwritable", error=f"{type(exc).__name__}: {exc}")
