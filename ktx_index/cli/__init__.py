"""``ktx-index``: command-line entry point. Commands live one family per module."""

from __future__ import annotations

import signal

import click

from ktx_index import __version__
from ktx_index.cli.eval_cmd import eval_command
from ktx_index.cli.index_cmds import rebuild_command, status_command
from ktx_index.cli.inspect_cmd import inspect_command
from ktx_index.cli.search_cmd import search_command
from ktx_index.cli.serve_cmd import serve_command
from ktx_index.cli.watch_cmd import watch_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ktx-index")
def cli() -> None:
    """Hybrid search index and MCP server over a KTX project (wiki, semantic layer, scans)."""


for command in (
    eval_command,
    inspect_command,
    rebuild_command,
    search_command,
    status_command,
    serve_command,
    watch_command,
):
    cli.add_command(command)


def main() -> None:
    """SIGINT/SIGTERM are a requested stop (exit 0): a read just ends; rebuild, watch and serve install their
    own handlers while they write, to stop at a safe point (cli/common.py stop_on_signals)."""

    def stop(_signum: int, _frame: object) -> None:
        raise SystemExit(0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, stop)
    cli()
