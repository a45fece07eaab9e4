"""``ktx-index rebuild`` and ``ktx-index status``."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from ktx_index.cli.common import (
    echo_diagnostics,
    echo_json,
    json_option,
    open_service,
    project_option,
    render_counts,
    stop_on_signals,
    user_errors,
)
from ktx_index.errors import Stopped
from ktx_index.reports import RebuildReport, StatusReport

if TYPE_CHECKING:  # Ray is imported only with --ray (ray_pool imports it when a pool starts)
    from ktx_index.index.ray_pool import RayEmbedding
    from ktx_index.service import KtxIndex

STAGE_LABEL = {"parse": "Reading files ", "index": "Indexing      ", "embed": "Embedding     "}


def terminal_progress(quiet: bool) -> tuple[Callable[[str, int, int], None], Callable[[], None]]:
    """A progress bar per stage on stderr, only on a terminal (and never with --quiet or --json)."""
    if quiet or not sys.stderr.isatty():
        return (lambda _s, _d, _t: None), (lambda: None)
    state: dict[str, object] = {}

    def update(stage: str, done: int, total: int) -> None:
        if state.get("stage") != stage:
            finish()
            bar = click.progressbar(length=max(total, 1), label=STAGE_LABEL.get(stage, stage), file=sys.stderr)
            bar.__enter__()
            state.update(stage=stage, bar=bar, done=0)
        bar = state["bar"]
        bar.update(done - int(state["done"]))  # type: ignore[attr-defined]
        state["done"] = done

    def finish() -> None:
        bar = state.pop("bar", None)
        if bar is not None:
            bar.__exit__(None, None, None)  # type: ignore[attr-defined]
        state.pop("stage", None)

    return update, finish


#: Files rebuild and status list by name (the count covers them all).
SHOWN_PATHS = 20


def echo_paths(paths: list[str], total: int) -> None:
    """The first SHOWN_PATHS of ``paths``, one a line, then how many more of the ``total`` there are."""
    for path in paths[:SHOWN_PATHS]:
        click.echo(f"  {path}")
    if total > SHOWN_PATHS:
        click.echo(f"  … and {total - SHOWN_PATHS} more")


def render_rebuild(report: RebuildReport) -> None:
    click.echo(
        f"rebuild  scanned={report.files} files ({report.scopes_read}/{report.scopes} scopes read)  "
        f"added={report.added} updated={report.updated} deleted={report.deleted} unchanged={report.unchanged}  "
        f"embedded={report.embedded}  diagnostics={len(report.diagnostics)}  {report.duration_ms / 1000:.2f}s"
    )
    if report.deleted_paths:
        click.echo(f"deleted  {report.deleted} document(s) of {len(report.deleted_paths)} file(s):")
        echo_paths(report.deleted_paths, len(report.deleted_paths))
    if up_to_date(report):
        click.echo("index    up to date: no file changed since the last rebuild (`ktx-index status` counts it)")
    if report.words_embedded:
        click.echo(f"words    embedded {report.words_embedded} common words for the bridge (once on this machine)")
    if report.lexical_rewritten:
        click.echo("lexical  written again: a tenth of it was deleted documents, which skew word weights until merged")
    if report.embedding_status != "ready":
        click.echo(f"embeddings: {embedding_note(report.embedding_status)}", err=True)
    echo_diagnostics(report.diagnostics, report.stale, err=True)


def up_to_date(report: RebuildReport) -> bool:
    """Whether a rebuild found nothing to do, said in words since 'unchanged=0' alone read as an empty index; not
    when texts are still to embed (a stop during embedding, which the embeddings line says) or cannot be."""
    nothing_read = not (report.scopes_read or report.deleted or report.force)
    return nothing_read and report.embedding_status in ("ready", "disabled")


@click.command("rebuild")
@project_option
@click.option(
    "--force",
    is_flag=True,
    help="Re-read every file and rebuild the search index from every document (documents whose text did not change "
    "are reported unchanged; vectors stay cached).",
)
@json_option
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option(
    "--ray",
    "ray_address",
    metavar="ADDRESS",
    default=None,
    help="Embed on a Ray cluster: `auto` starts one on this machine for the run, HOST:PORT joins a running one "
    "(needs the extra: pip install -e '.[ray]'). This process still writes the index.",
)
@user_errors
def rebuild_command(project_dir: str | None, force: bool, as_json: bool, quiet: bool, ray_address: str | None) -> None:
    """Bring the index under <project>/.ktx/index (or KTX_INDEX_HOME) up to date (incremental: only what changed)."""
    service = open_service(project_dir)
    update, finish = terminal_progress(quiet or as_json)
    pool = None
    try:
        if ray_address:
            pool = start_ray_pool(service, ray_address, quiet)
            update = cluster_progress(update, quiet or as_json) if pool is not None else update
        with stop_on_signals(service.request_stop):  # SIGINT/SIGTERM: stop at a safe point, exit 0
            report = service.rebuild(force=force, on_progress=update)
            report.words_embedded = service.ensure_word_table()
    except Stopped as exc:
        click.echo(f"ktx-index: {exc.message}", err=True)
        if as_json:  # one JSON object on stdout, as --json promises, even for a stop
            echo_json({"stopped": True, "message": exc.message})
        return
    finally:
        finish()
        service.close()
        if pool is not None:
            pool.close()
            if not quiet:
                by_node = ", ".join(f"{node[:8]} {n}" for node, n in sorted(pool.texts_by_node.items()))
                click.echo(
                    f"ray: {sum(pool.texts_by_node.values())} texts embedded across {len(pool.texts_by_node)} "
                    f"node(s) ({by_node or 'none'}); {pool.lost} worker(s) lost, {pool.retried} batch(es) retried",
                    err=True,
                )
    if not as_json:
        render_rebuild(report)
    else:
        echo_json(report)
        if report.embedding_status == "pending":  # render_rebuild's embeddings line, on stderr
            click.echo(f"ktx-index: embeddings: {embedding_note('pending')}", err=True)


def start_ray_pool(service: KtxIndex, address: str, quiet: bool) -> RayEmbedding | None:
    """Connect to (or, with ``auto``, start) the cluster and its workers; the service embeds through them."""
    if service.embedder is None:
        click.echo("ktx-index: --ray ignored: embeddings are off for this project (index.embeddings)", err=True)
        return None
    from ktx_index.index.ray_pool import RayEmbedding

    say = (lambda _m: None) if quiet else (lambda message: click.echo(message, err=True))
    pool = RayEmbedding(address, service.embedder, on_event=say)
    try:
        pool.start()
    except BaseException:
        pool.close()
        raise
    service.embed_backend = pool
    return pool


def cluster_progress(update: Callable[[str, int, int], None], quiet: bool) -> Callable[[str, int, int], None]:
    """Off a terminal (where there is no bar: a log, CI), a line every 10 s on stderr in its place: texts embedded
    across the cluster. On a terminal the bar alone, unchanged."""
    if quiet or sys.stderr.isatty():
        return update
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        update(stage, done, total)
        if stage == "embed" and (done == total or time.monotonic() - last[0] >= 10):
            last[0] = time.monotonic()
            click.echo(f"ray: {done}/{total} texts embedded across the cluster", err=True)

    return progress


#: What rebuild says when not every text is embedded, by the embedding status (others: the model's failure).
EMBEDDING_NOTES = {
    "disabled": "off (index.embeddings: false in ktx.yaml): search is lexical only",
    "pending": "not all texts embedded yet (stopped early): the next `ktx-index rebuild` or `serve` embeds the rest; "
    "until then those documents are found by their words only",
}


def embedding_note(status: str) -> str:
    return EMBEDDING_NOTES.get(status) or f"{status} — search is lexical only until this is fixed"


def render_status(report: StatusReport) -> None:
    click.echo(f"project      {report.project}")
    click.echo(f"index        {report.index_path}{'' if report.exists else '  (missing: run `ktx-index rebuild`)'}")
    if report.index_elsewhere:
        click.echo(f"             ({report.index_elsewhere})")
    if not report.exists:
        return
    click.echo(f"generation   {report.generation}   last rebuild {report.last_rebuild or 'never'}")
    click.echo(f"documents    {render_counts(report.counts)}")
    for conn in report.connections:
        click.echo(f"  {conn.id} [{conn.driver or '?'}]: {render_counts(conn.counts, 'nothing indexed')}")
    semantic = report.semantic + (f" ({report.semantic_reason})" if report.semantic_reason else "")
    runtime = f" on {report.model_runtime}" if report.model and report.model_runtime else ""
    click.echo(f"model        {report.model or 'none (lexical only)'}{runtime}")
    click.echo(f"semantic     {semantic}; {report.chunks_embedded}/{report.chunks} chunks embedded")
    click.echo(f"ranker       {report.ranker or 'none (the declared pipeline orders alone)'}")
    if report.model:
        table = (
            f"{report.bridge_words} words looked up" if report.bridge_words else "none yet: words embedded one by one"
        )
        click.echo(f"word table   {table} (built once per machine by rebuild or serve)")
    if report.changed_files:  # a scope's files are read together: one edited file puts its siblings here too
        click.echo(
            f"changed      {report.changed_files} file(s) to read again: they, or a file read with them, changed "
            "since the last commit (`ktx-index rebuild` reads them; `watch` and `serve --watch` do as files change)"
        )
    else:
        click.echo("changed      0 file(s): the index is up to date with the project")
    gone = set(report.deleted_paths)
    echo_paths([f"{p} (deleted)" if p in gone else p for p in report.changed_paths], report.changed_files)
    if report.writer_pid:
        click.echo(f"writer       PID {report.writer_pid}")
    watcher = report.watcher
    if watcher is not None:
        running = f"{watcher.state} (PID {watcher.pid})" if watcher.pid else f"not running ({watcher.state})"
        click.echo(
            f"watcher      {running}; last event {watcher.last_event or '-'}; "
            f"last commit {watcher.last_commit or '-'}; pending {watcher.pending}; errors {watcher.errors}"
        )
        if watcher.retry_in_s is not None:
            click.echo(f"  retrying the failed batch in {watcher.retry_in_s:g}s")
        if watcher.state == "died":
            click.echo(
                "  it ended without stopping (killed or crashed): the next rebuild, watch or serve indexes its edits"
            )
        for err in watcher.recent_errors:
            click.echo(f"  error {err.at} during {err.during}: {err.error}")
    for upstream in report.upstreams:
        who = f" (PID {upstream.pid})" if upstream.pid else ""
        click.echo(f"upstream     {upstream.state}{who} since {upstream.since or '-'}: '{upstream.upstream}'")
        if upstream.tools:
            click.echo(f"  forwarded  {', '.join(upstream.tools)}")
        if upstream.hidden:
            click.echo(f"  served by ktx-index instead of upstream: {', '.join(upstream.hidden)}")
        if upstream.state == "unavailable":
            retry = f"; retrying in {upstream.retry_in_s:g}s" if upstream.retry_in_s is not None else ""
            click.echo(f"  {upstream.last_error} (attempt {upstream.attempts}{retry})")
    if report.recent_errors:
        click.echo(f"tool errors  last {len(report.recent_errors)}")
        for err in report.recent_errors:
            click.echo(f"  {err.at} {err.tool}: {err.kind}: {err.message}")
    kept = f", {len(report.stale)} file(s) kept at their last good version" if report.stale else ""
    click.echo(f"diagnostics  {len(report.diagnostics)}{kept}")
    echo_diagnostics(report.diagnostics, report.stale)


@click.command("status")
@project_option
@json_option
@user_errors
def status_command(project_dir: str | None, as_json: bool) -> None:
    """Show the index: documents per kind and connection, freshness, model, watcher, diagnostics."""
    service = open_service(project_dir)
    try:
        report = service.status()
    finally:
        service.close()
    echo_json(report) if as_json else render_status(report)
