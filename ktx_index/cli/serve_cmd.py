"""``ktx-index serve``: the MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import threading

import click

from ktx_index.cli.common import log_options, open_service, project_option, setup_logging, user_errors
from ktx_index.cli.index_cmds import terminal_progress
from ktx_index.errors import IndexBusy
from ktx_index.service import KtxIndex


@click.command("serve")
@project_option
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP port.")
@click.option(
    "--token",
    envvar="KTX_INDEX_TOKEN",
    default=None,
    help="Require 'Authorization: Bearer <token>' over HTTP (env KTX_INDEX_TOKEN). Mandatory off loopback.",
)
@click.option("--no-build", is_flag=True, help="Do not bring the index up to date at start.")
@click.option("--watch", is_flag=True, help="Also watch the project and re-index edits as they happen.")
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
    log_level: str,
    log_file: str | None,
) -> None:
    """Serve the index to agents over MCP (stdio by default; HTTP at http://HOST:PORT/mcp).

    Every tool call is logged as one JSON line (stderr, or --log-file)."""
    from ktx_index.mcp import build_server
    from ktx_index.mcp.http import is_loopback, serve_http

    if transport == "http" and not is_loopback(host) and not token:  # refuse an unsafe bind before any work
        raise click.UsageError(
            f"refusing to serve on non-loopback address {host} without a token; pass --token or bind to 127.0.0.1"
        )
    setup_logging(log_level, log_file)
    service = open_service(project_dir)
    watcher = None
    if watch:
        from ktx_index.watcher import Watcher

        watcher = Watcher(service)
        watcher.start_in_thread()  # raises IndexBusy (exit 1) when another watcher holds the index
        watcher.wait_ready()  # the first catch-up, committed or failed; never a dead thread
        if watcher.state.state != "running":
            click.echo(
                f"ktx-index: the watcher is {watcher.state.state} ({watcher.state.last_error}); serving the last "
                "commit, see `ktx-index status`",
                err=True,
            )
    elif not no_build:
        _catch_up(service)
    server = build_server(service)
    try:
        if transport == "stdio":
            server.run("stdio")
        else:
            click.echo(f"ktx-index: serving MCP at http://{host}:{port}/mcp", err=True)
            serve_http(server, host, port, token)
    finally:
        if watcher is not None:
            watcher.stop()
        service.close()


def _catch_up(service: KtxIndex) -> None:
    """Bring the index up to date, then embed new texts in the background while serving (a large
    first build answers lexically at once). Beside a running watcher, serve its commits read-only."""
    update, finish = terminal_progress(quiet=False)
    try:
        service.acquire_writer()
        report = service.rebuild(on_progress=update, embed=False)
    except IndexBusy as exc:
        click.echo(f"ktx-index: {exc.message}; serving its commits read-only", err=True)
        return
    finally:
        finish()
    click.echo(
        f"ktx-index: index up to date: {report.added} added, {report.updated} updated, {report.deleted} deleted "
        f"in {report.duration_ms / 1000:.1f}s; {len(report.diagnostics)} diagnostic(s); embedding new texts in the background",
        err=True,
    )

    def embed_then_release() -> None:
        try:
            done, status = service.embed_pending()
            click.echo(f"ktx-index: embeddings {status} ({done} texts embedded)", err=True)
        finally:
            service.release_writer()

    threading.Thread(target=embed_then_release, name="ktx-index-embed", daemon=True).start()
