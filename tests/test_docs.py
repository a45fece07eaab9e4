"""Docs that cannot drift: the README's commands, CI, the CLI reference, flags quoted in docs, links, MCP tools, settings."""

import re
from pathlib import Path

import click

from indexers.project import IndexSettings, settings_table
from ktx_index.cli import cli, reference
from ktx_index.mcp.server import TOOL_NAMES

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
DOCS = {p: p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))] if p.is_file()}
#: Flags that follow a ktx-index command on a line but belong to the tool wrapping it (the MCP inspector).
NOT_OURS = {"--method", "--cli"}


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_exactly_two_quick_start_commands_and_ci_runs_the_test_one():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert "ktx-index" in commands[0] and "data/demo" in commands[0]
    assert commands[1].endswith("pytest")
    assert commands[1] in (REPO / ".ci/run").read_text()


def test_cli_reference_is_generated_from_the_code():
    current = (REPO / "docs/cli.md").read_text()
    assert current == reference.render(), "docs/cli.md is stale: run `python -m ktx_index.cli.reference docs/cli.md`"
    for name, command in cli.commands.items():
        assert f"## ktx-index {name}\n" in current
        for param in command.params:
            for opt in param.opts if isinstance(param, click.Option) else []:
                assert opt in current, (name, opt)
    assert "](docs/cli.md)" in README


def test_settings_table_is_generated_from_the_declaration():
    current = (REPO / "docs/configuration.md").read_text()
    stale = (
        "docs/configuration.md's index: table is stale: run `python -m ktx_index.cli.reference docs/configuration.md`"
    )
    assert reference.with_settings_table(current) == current, stale
    assert settings_table() in current and "| `max_file_mb` | `64` |" in current


def test_flags_quoted_in_the_docs_exist():
    """`ktx-index <command> ... --flag` anywhere in the docs names an option that command has."""
    for path, text in DOCS.items():
        for name, rest in re.findall(r"ktx-index (\w+)([^`\n|&)]*)", text):
            if name not in cli.commands:
                continue
            opts = {o for p in cli.commands[name].params for o in getattr(p, "opts", [])} | {"--help", "-h"}
            for flag in re.findall(r"(?<![\w-])(--[a-z][\w-]*)", rest):
                assert flag in opts or flag in NOT_OURS, f"{path.name}: ktx-index {name} has no {flag}"


def test_relative_links_resolve():
    for path, text in DOCS.items():
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" in target or target.startswith("mailto:"):
                continue
            assert (path.parent / target).exists(), f"{path.name} links to missing {target}"


def test_every_cli_command_mcp_tool_and_setting_is_documented():
    docs = "".join(DOCS.values())
    for command in cli.commands:
        assert f"`ktx-index {command}`" in README, command
    for tool in TOOL_NAMES:
        assert f"`{tool}" in docs, tool
    for setting in IndexSettings.model_fields:
        assert f"{setting}:" in docs or f"`{setting}`" in docs, setting


def test_every_benchmark_table_has_the_command_that_regenerates_it():
    lines = (REPO / "docs/benchmarks.md").read_text().splitlines()
    tables = [i for i, line in enumerate(lines) if line.startswith("|") and not lines[i - 1].startswith("|")]
    assert len(tables) >= 7
    for start in tables:
        above = "\n".join(lines[max(0, start - 4) : start])
        found = re.search(r"Regenerate: `python (tests/benchmarks/\w+\.py)", above)
        assert found, (
            f"docs/benchmarks.md line {start + 1}: no `Regenerate: python tests/benchmarks/...` above the table"
        )
        assert (REPO / found.group(1)).is_file(), found.group(1)
