"""``ktx-index inspect``: what the index will see, without building it."""

from __future__ import annotations

import click

from ktx_index.cli.common import (
    echo_diagnostics,
    echo_json,
    json_option,
    open_service,
    project_option,
    render_counts,
    user_errors,
)
from ktx_index.reports import InspectReport


def render_inspect(report: InspectReport) -> None:
    click.echo(f"project  {report.project}")
    click.echo(f"total    {render_counts(report.counts)}")
    if report.wiki_counts:
        click.echo(f"wiki     {render_counts(report.wiki_counts)}")
    for conn in report.connections:
        origin = "" if conn.declared else " (folder only, not in ktx.yaml)"
        click.echo(f"{conn.id} [{conn.driver or '?'}]{origin}: {render_counts(conn.counts)}")
    problems = [d for d in report.diagnostics if d.code != "warning"]
    click.echo(f"diagnostics: {len(problems)} error(s), {len(report.diagnostics) - len(problems)} warning(s)")
    echo_diagnostics(report.diagnostics, [])


@click.command("inspect")
@project_option
@json_option
@user_errors
def inspect_command(project_dir: str | None, as_json: bool) -> None:
    """Read the project and print what the index will see: counts per kind and connection, and diagnostics."""
    service = open_service(project_dir)
    try:
        report = service.inspect()
    finally:
        service.close()
    if as_json:
        echo_json(report)
    else:
        render_inspect(report)
