"""Docs that cannot drift: the README's commands, CI, the CLI reference, flags quoted in docs, links, MCP tools, settings."""

import ast
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


#: `path.py:Name` or `path.py:Class.method` in backticks (anything after the colon up to the backtick is checked).
CODE_REFERENCE = re.compile(r"`([\w./-]+\.py):([^`\s]+)`")
#: Where a reference's path is looked up. The rule: a module of ktx_index/ is cited from there
#: (`search/engine.py:Engine.rank`, never `ktx_index/search/engine.py:…`), anything else from the repository
#: root (`indexers/base.py:safe_read`, `tests/conftest.py:demo_service`).
REFERENCE_ROOTS = (REPO, REPO / "ktx_index")


def defined_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names a module or class body defines: functions, classes, assignments and annotated fields."""
    names: dict[str, ast.AST] = {}
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            names.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return names


def reference_problem(path: str, name: str) -> str | None:
    """Why `path:name` does not name a definition, or None when it does."""
    if path.startswith("ktx_index/"):
        return f"write it from ktx_index/: `{path.removeprefix('ktx_index/')}:{name}`"
    files = [root / path for root in REFERENCE_ROOTS if (root / path).is_file()]
    if not files:
        return f"no file {path} (paths are from the repository root, or from ktx_index/)"
    if len(files) > 1:
        return f"{path} is ambiguous: {', '.join(str(f.relative_to(REPO)) for f in files)}"
    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        return f"{name!r} is not a dotted name (write `{path}:Class.method`, no call parentheses)"
    body = ast.parse(files[0].read_text()).body
    for depth, part in enumerate(name.split(".")):
        node = defined_names(body).get(part)
        if node is None:
            where = ".".join(name.split(".")[:depth]) or files[0].relative_to(REPO).as_posix()
            return f"{where} defines no {part}"
        body = getattr(node, "body", []) if isinstance(node, ast.ClassDef) else []
    return None


def broken_references(docs: dict[Path, str]) -> list[str]:
    return [
        f"{doc.name}: `{path}:{name}`: {problem}"
        for doc, text in docs.items()
        for path, name in CODE_REFERENCE.findall(text)
        if (problem := reference_problem(path, name))
    ]


def test_code_references_in_the_docs_name_real_definitions():
    """Every `file.py:Name` the docs cite is a class, function, method or module-level name that exists."""
    assert sum(len(CODE_REFERENCE.findall(text)) for text in DOCS.values()) >= 40
    assert broken_references(DOCS) == []


def test_a_bogus_code_reference_is_reported():
    doc = REPO / "docs" / "bogus.md"
    text = (
        "`search/engine.py:Engine.rank` `indexers/base.py:safe_read` `search/scoring.py:Params.pool` "
        "`ktx_index/search/engine.py:Engine` "
        "`search/engine.py:Engine.no_such_method` `search/engine.py:Nope` `index/nowhere.py:x` "
        "`search/engine.py:Engine.rank()` `search/engine.py:Engine.rank.inner`"
    )
    assert broken_references({doc: text}) == [
        "bogus.md: `ktx_index/search/engine.py:Engine`: write it from ktx_index/: `search/engine.py:Engine`",
        "bogus.md: `search/engine.py:Engine.no_such_method`: Engine defines no no_such_method",
        "bogus.md: `search/engine.py:Nope`: ktx_index/search/engine.py defines no Nope",
        "bogus.md: `index/nowhere.py:x`: no file index/nowhere.py (paths are from the repository root, or from ktx_index/)",
        "bogus.md: `search/engine.py:Engine.rank()`: 'Engine.rank()' is not a dotted name (write `search/engine.py:Class.method`, no call parentheses)",
        "bogus.md: `search/engine.py:Engine.rank.inner`: Engine.rank defines no inner",
    ]
