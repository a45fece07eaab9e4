"""Docs that cannot drift: the README's commands, CI, CLI commands, MCP tools and settings."""

import re
from pathlib import Path

from indexers.project import SETTINGS_HELP
from ktx_index.cli import cli
from ktx_index.mcp.server import TOOL_NAMES

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()


def quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_readme_has_exactly_two_quick_start_commands_and_ci_runs_the_test_one():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert "ktx-index" in commands[0] and "data/demo" in commands[0]
    assert commands[1].endswith("pytest")
    assert commands[1] in (REPO / ".ci/run").read_text()


def test_every_cli_command_mcp_tool_and_setting_is_documented():
    docs = README + "".join(p.read_text() for p in (REPO / "docs").glob("*.md"))
    for command in cli.commands:
        assert f"ktx-index {command}" in docs, command
    for tool in TOOL_NAMES:
        assert f"`{tool}" in docs, tool
    for setting in SETTINGS_HELP:
        assert f"{setting}:" in docs or f"`{setting}`" in docs, setting
