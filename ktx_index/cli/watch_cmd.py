"""``ktx-index watch``: keep the index fresh as files change."""

from __future__ import annotations

import click

from ktx_index.cli.common import log_options, open_service, project_option, stop_on_signals, user_errors
from ktx_index.reports import RebuildReport
from ktx_index.watcher import Watcher


@click.command("watch")
@project_option
@click.option("--quiet", "-q", is_flag=True, help="Do not print a line per commit.")
@log_options("WARNING")
@user_errors
def watch_command(project_dir: str | None, quiet: bool) -> None:
    """Watch wiki/, semantic-layer/, raw-sources/ and ktx.yaml; re-index each batch of edits.

    Holds the index writer: a second watcher (or a rebuild) on the same project is refused
    while this one runs; `ktx-index serve` beside it serves each commit read-only.
    """
    service = open_service(project_dir)

    def report(batch: RebuildReport) -> None:
        if not quiet:
            click.echo(
                f"commit {batch.generation}: +{batch.added} ~{batch.updated} -{batch.deleted}"
                + (f" stale {batch.kept_stale}" if batch.kept_stale else "")
                + f" in {batch.duration_ms:.0f} ms",
                err=True,
            )
            for diag in batch.diagnostics:
                if diag.code in ("parse_error", "wrong_shape"):  # what the file held is kept, stale: say why
                    click.echo(f"  {diag.path}: {diag.message}", err=True)

    def embedded(count: int, ms: float) -> None:
        if not quiet:
            click.echo(f"embedded {count} new text(s) in {ms:.0f} ms: searchable by meaning too", err=True)

    watcher = Watcher(service, on_batch=report, on_embedded=embedded)
    try:
        service.acquire_writer()  # IndexBusy (exit 1) leaves the running watcher and its status alone
    except BaseException:
        service.close()
        raise
    try:
        with stop_on_signals(watcher.request_stop):  # the loop ends at its next wake-up, a batch whole
            click.echo(f"ktx-index: watching {service.root} (Ctrl-C to stop)", err=True)
            watcher.run()
    except KeyboardInterrupt:  # a second signal: stop now
        pass
    except Exception as exc:
        if watcher.error is not exc:
            raise
        raise gave_up(watcher) from exc  # recorded (state: failed) by the watcher; stopping below keeps the verdict
    finally:
        watcher.stop()
        service.close()
    click.echo("ktx-index: stopped", err=True)  # as serve says it: the last batch committed or discarded whole


def gave_up(watcher: Watcher) -> click.ClickException:
    """A watcher whose watch kept failing, told as an error with the next step rather than a traceback: watchfiles
    raises RuntimeErrors ("OS file watch limit reached."), which no user-error rule knows."""
    return click.ClickException(
        f"the watch kept failing ({watcher.state.last_error}); edits are no longer indexed: fix that and run "
        "`ktx-index watch` again (`ktx-index status` lists its last errors)"
    )
