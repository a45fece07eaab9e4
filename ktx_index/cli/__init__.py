"""``ktx-index``: command-line entry point. Commands live one family per module."""

from __future__ import annotations

import click

from ktx_index import __version__
from ktx_index.cli.inspect_cmd import inspect_command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="ktx-index")
def cli() -> None:
    """Hybrid search index and MCP server over a KTX project (wiki, semantic layer, scans)."""


cli.add_command(inspect_command)


def main() -> None:
    cli()
