"""``ktx-index serve``: the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import faulthandler
import functools
import gc
import logging
import os
import sys
import threading
import time
from typing import TYPE_CHECKING

import click

from ktx_index.cli.common import given, log_options, open_service, project_option, stop_on_signals, user_errors
from ktx_index.cli.index_cmds import EMBEDDING_NOTES, terminal_progress
from ktx_index.errors import IndexBusy, Stopped
from ktx_index.reports import RebuildReport
from ktx_index.service import KtxIndex

if TYPE_CHECKING:
    from ktx_index.mcp.gateway import Gateway
    from ktx_index.mcp.upstream import UpstreamSpec
    from ktx_index.watcher import Watcher


@click.command("serve")
@project_option
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="HTTP port (0: one the system picks, printed at start).",
)
@click.option(
    "--token",
    envvar="KTX_INDEX_TOKEN",
    default=None,
    help="Require 'Authorization: Bearer <token>' over HTTP (env KTX_INDEX_TOKEN). Mandatory off loopback.",
)
@click.option(
    "--no-build",
    is_flag=True,
    help="Do not bring the index up to date at start (with no index yet, the first call builds it, answers "
    "lexically and embeds in the background). Not with --watch, whose watcher always does.",
)
@click.option(
    "--watch",
    is_flag=True,
    help="Also watch the project and re-index edits as they happen (beside a running watcher: serve its commits, "
    "and watch once it ends).",
)
@click.option(
    "--upstream",
    metavar="CMD|URL",
    default=None,
    help="Front upstream KTX's MCP server too: a command speaking MCP over stdio, run in the project "
    "(e.g. 'ktx mcp stdio'), or an http(s):// URL. Its tools ktx-index does not serve are listed and forwarded.",
)
@click.option(
    "--upstream-header",
    "upstream_headers",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="An HTTP header sent to an http(s):// --upstream (repeatable), e.g. 'Authorization: Bearer <token>'.",
)
@log_options("INFO")
@user_errors
def serve_command(
    project_dir: str | None,
    transport: str,
    host: str,
    port: int,
    token: str | None,
    no_build: bool,
    watch: bool,
    upstream: str | None,
    upstream_headers: tuple[str, ...],
) -> None:
    """Serve the index to agents over MCP (stdio by default; HTTP at http://HOST:PORT/mcp).

    Every tool call is logged as one JSON line (stderr, or --log-file). With --upstream, one server for the
    agent's whole loop: ktx-index's tools plus upstream KTX's (sl_query, sql_execution, memory_ingest…)."""
    from ktx_index.mcp import build_server
    from ktx_index.mcp.http import is_loopback, listen, serve_http
    from ktx_index.mcp.upstream import UpstreamSpec

    http_only = [f"--{name}" for name in ("host", "port", "token") if given(name)]
    if transport == "stdio" and http_only:
        verb = "applies" if len(http_only) == 1 else "apply"
        raise click.UsageError(f"{'/'.join(http_only)} {verb} to HTTP only; add --transport http, or drop it")
    token = (token or "").strip() or None  # a token of spaces protects nothing
    if transport == "http" and not is_loopback(host) and not token:  # refuse an unsafe bind before any work
        raise click.UsageError(
            f"refusing to serve on non-loopback address {host} without a token; pass --token (or set KTX_INDEX_TOKEN) "
            "or bind to 127.0.0.1"
        )
    if watch and no_build:  # refused, not ignored: the watcher's catch-up would index what --no-build said not to
        raise click.UsageError(
            "--no-build does not apply with --watch: the watcher brings the index up to date at start; drop one of them"
        )
    if upstream_headers and upstream is None:
        raise click.UsageError("--upstream-header needs --upstream URL")
    spec = UpstreamSpec.parse(upstream, upstream_headers) if upstream is not None else None  # before any work
    sockets = listen(host, port) if transport == "http" else []  # a port in use fails here, before any work
    faulthandler.enable()  # a crash in native code (ONNX Runtime, tantivy, watchfiles) says where, on stderr
    service = open_service(project_dir)
    if service.layout.elsewhere:
        click.echo(f"ktx-index: index at {service.layout.dir} ({service.layout.elsewhere})", err=True)
    service.embed_first_build_later = True  # --no-build on a project with no index: the first call answers lexically
    stopper = Stopper(service)  # from here on a signal stops at a safe point and exits 0, even while starting
    with stop_on_signals(stopper.stop_and_exit_soon):
        try:
            if watch:
                from ktx_index.watcher import Watcher

                stopper.watcher = Watcher(service)
                try:
                    stopper.watcher.start_in_thread()  # IndexBusy when another watcher or rebuild holds the index
                except IndexBusy as exc:  # a second agent session's server: the other keeps the index fresh
                    stopper.watcher = None
                    click.echo(f"ktx-index: {exc.message}; serving its commits read-only until it ends", err=True)
                    service.in_background("ktx-index-watch-later", functools.partial(_watch_when_free, stopper))
                else:
                    stopper.watcher.wait_ready()  # the first catch-up, committed or failed; never a dead thread
                if stopper.watcher is not None and stopper.watcher.state.state != "running":
                    state = stopper.watcher.state
                    click.echo(
                        f"ktx-index: the watcher is {state.state} ({state.last_error}); serving the last commit, "
                        "see `ktx-index status`",
                        err=True,
                    )
            elif no_build or _catch_up(service):  # not beside another writer, whose commits are served
                click.echo(
                    "ktx-index: serving without --watch: the index does not follow edits to the project; run "
                    "`ktx-index rebuild` after them (or serve with --watch)",
                    err=True,
                )
            server = build_server(service, _gateway(service, spec))
            server.ready = threading.Event()
            service.in_background("ktx-index-warm", functools.partial(_warm, service, server.ready))
            if not sockets:
                server.run("stdio")  # returns at the end of stdin
            else:
                click.echo(f"ktx-index: serving MCP at http://{host}:{sockets[0].getsockname()[1]}/mcp", err=True)
                serve_http(server, sockets, host, token)
        finally:
            stopper.stop()
            for sock in sockets:
                sock.close()


class Stopper:
    """Stops a server's writers at a safe point: the watcher's batch committed or discarded whole, background
    embedding after its batch, the writer released, the ONNX sessions closed.

    At the end of stdin the server returns and the process exits normally. On SIGINT/SIGTERM the stdio
    transport may be unable to return (when stdin is not a pipe, the SDK's reader thread is blocked reading it
    and cannot be cancelled; mcp/stdio.py), so the stop runs in a thread and the process then exits with code 0
    without waiting for that reader; the work that matters has been stopped and committed by then."""

    def __init__(self, service: KtxIndex) -> None:
        self.service = service
        self.watcher: Watcher | None = None
        self.lock = threading.Lock()  # a watcher started late (_watch_when_free) and a stop do not cross
        self.done = False

    def stop(self) -> None:
        with self.lock:
            if self.done:
                return
            self.service.request_stop()
            if self.watcher is not None:
                self.watcher.stop()
            self.service.close()
            self.done = True

    def stop_and_exit_soon(self) -> None:
        """From a signal handler: do no work here, hand it to a thread that exits when it is done."""
        threading.Thread(target=self._stop_and_exit, name="ktx-index-stop", daemon=True).start()

    def _stop_and_exit(self) -> None:
        code = 0
        try:
            self.stop()
            click.echo("ktx-index: stopped", err=True)
        except BaseException as exc:  # the exit must still happen; say why it is not a clean one
            click.echo(f"ktx-index: stop failed: {type(exc).__name__}: {exc}", err=True)
            code = 1
        logging.shutdown()
        from ktx_index.mcp.stdio import restore_modes

        restore_modes()  # os._exit unwinds nothing: stdin and stdout get their blocking mode back here
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


#: How often ``serve --watch`` beside another writer tries to take the watch over.
WATCH_RETRY_S = 2.0


def _watch_when_free(stopper: Stopper) -> None:
    """``serve --watch`` beside another watcher or rebuild: watch once that writer is gone (it served the other's
    commits meanwhile), so edits go on being indexed after the other session ends."""
    from ktx_index.watcher import Watcher

    service = stopper.service
    waited = 0.0
    while not service.stopping:
        time.sleep(0.1)  # short steps: closing the service joins this thread
        waited += 0.1
        if waited < WATCH_RETRY_S:
            continue
        waited = 0.0
        if not stopper.lock.acquire(timeout=0.1):  # a stop in progress (it joins this thread: never wait on it)
            continue
        try:
            if stopper.done or service.stopping:
                return
            watcher = Watcher(service)
            try:
                watcher.start_in_thread()
            except IndexBusy:
                continue
            stopper.watcher = watcher  # a stop from now on finds it and stops it
        finally:
            stopper.lock.release()
        click.echo("ktx-index: the other writer has ended; watching the project from now on", err=True)
        return


def _gateway(service: KtxIndex, spec: UpstreamSpec | None) -> Gateway | None:
    """The upstream connection, or None: without --upstream the server is exactly the seven tools."""
    if spec is None:
        return None
    from ktx_index.index.status import forget_stopped_upstreams
    from ktx_index.mcp.gateway import Gateway

    click.echo(f"ktx-index: fronting upstream '{spec.label}' (its tools are forwarded)", err=True)
    forget_stopped_upstreams(service.layout)
    return Gateway(spec, service.root, service.layout.upstream(os.getpid()), service.layout.errors)


def _warm(service: KtxIndex, done: threading.Event) -> None:
    """Warm the reader while the server starts (initialize and tools/list are answered meanwhile; a tool call
    waits for ``done``); a failure here is the first call's to report. Then the loaded index is moved out of the
    cyclic collector's way (gc.freeze): a full collection walking a 100k-column snapshot took ~260 ms, which one
    query or edit in a few hundred paid."""
    try:
        service.warm_reader()
    except Exception as exc:
        logging.getLogger("ktx_index.mcp").debug("warm-up failed: %s", exc)
    finally:
        gc.freeze()
        done.set()


def _catch_up(service: KtxIndex) -> bool:
    """Bring the index up to date, then embed new texts in the background while serving (a large
    first build answers lexically at once). Beside a running watcher, serve its commits read-only (False)."""
    update, finish = terminal_progress(quiet=False)
    try:
        service.acquire_writer()
        report = service.rebuild(on_progress=update, embed=False)
    except IndexBusy as exc:
        click.echo(f"ktx-index: {exc.message}; serving its commits read-only", err=True)
        return False
    except Stopped:  # a signal arrived while reading files: the stop in progress exits
        return True
    finally:
        finish()
    click.echo(
        f"ktx-index: index up to date: {report.added} added, {report.updated} updated, {report.deleted} deleted "
        f"in {report.duration_ms / 1000:.1f}s; {len(report.diagnostics)} diagnostic(s){_embedding_tail(service, report)}",
        err=True,
    )

    def done(count: int, status: str) -> None:
        if status == "disabled" or (status == "ready" and not count):  # the line above said all there is
            return
        stopped = " (stopped: the rest is embedded on the next start)" if service.stopping else ""
        click.echo(f"ktx-index: embeddings {status} ({count} texts embedded){stopped}", err=True)

    service.embed_in_background(done)  # texts a stop left without vectors too; releases the writer when done
    return True


def _embedding_tail(service: KtxIndex, report: RebuildReport) -> str:
    """What serve's start line says of embeddings: that they are off, or that this commit's new texts are embedded
    in the background, or nothing when it has none (it announced that embedding in every case). Texts an earlier stop
    left without vectors are embedded all the same, and said once done."""
    if service.embedder is None:
        return f"; embeddings {EMBEDDING_NOTES['disabled']}"
    return "; embedding new texts in the background" if report.added or report.updated else ""
