"""The CLI reference (docs/cli.md), written from click's own help so it cannot drift.

    python -m ktx_index.cli.reference docs/cli.md

tests/test_docs.py regenerates it and fails on any difference, so a new option lands in
the reference in the same commit. The width is fixed, so the output does not depend on
the terminal that runs it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

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


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if args:
        Path(args[0]).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
