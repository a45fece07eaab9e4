"""The CLI reference (docs/cli.md), written from click's own help so it cannot drift; and the ``index:``
settings table of docs/configuration.md, written from the settings' declaration.

    python -m ktx_index.cli.reference docs/cli.md docs/configuration.md

tests/test_docs.py regenerates both and fails on any difference, so a new option or setting lands in
the docs in the same commit. The width is fixed, so the output does not depend on
the terminal that runs it.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import click

from indexers.project import settings_table

WIDTH = 100
HEADER = """# CLI reference

Generated from the commands' own `--help` by `python -m ktx_index.cli.reference docs/cli.md`; do not edit by
hand (`tests/test_docs.py` fails when this file and the code disagree). Every command takes `-h`/`--help`.
"""


def _help(command: click.Command, name: str, parent: click.Context | None = None) -> str:
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    return command.get_help(ctx)


def render(group: click.Group | None = None) -> str:
    """Markdown: the group's help, then one section per command in name order."""
    if group is None:
        from ktx_index.cli import cli as group
    settings = {**group.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    root = click.Context(group, info_name="ktx-index", **settings)  # as `ktx-index` runs: -h is --help
    parts = [HEADER, "## ktx-index\n", "```text", group.get_help(root), "```\n"]
    for name in sorted(group.list_commands(root)):
        command = group.get_command(root, name)
        if command is None or command.hidden:
            continue
        parts += [f"## ktx-index {name}\n", "```text", _help(command, name, root), "```\n"]
    return "\n".join(parts)


#: docs/configuration.md's table of the ``index:`` keys: its header row and every row after it.
SETTINGS_TABLE = re.compile(r"^\| key \| default \| meaning \|\n(?:\|.*\n)*", re.MULTILINE)


def with_settings_table(text: str) -> str:
    """docs/configuration.md with its ``index:`` table replaced by the one the settings declare."""
    if len(SETTINGS_TABLE.findall(text)) != 1:
        raise ValueError("expected one '| key | default | meaning |' table (the index: settings) in the text")
    return SETTINGS_TABLE.sub(lambda _: settings_table(), text)


def main(argv: list[str] | None = None) -> None:
    """Write the CLI reference to each path named ``cli.md`` and the settings table into each other path (the
    configuration page); print the CLI reference when no path is given."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        sys.stdout.write(render())
    for arg in args:
        path = Path(arg)
        text = render() if path.name == "cli.md" else with_settings_table(path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
