"""Careful reading of project files, shared by every indexer and by ``load_project``.

Every helper takes only what it needs (``ProjectFiles``: the root, its resolved form and the
size limit), so this module sits below both the indexer contract (``indexers.base``) and the
project model (``indexers.project``), and neither imports the other to read a file.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Protocol

import yaml

SAFE_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]*$")


class SourceError(Exception):
    """A file that cannot be used; the message is the reason shown to the user."""


class ProjectFiles(Protocol):
    """What reading a file needs to know about the project (``indexers.project.Project`` is one)."""

    @property
    def root(self) -> Path: ...

    @property
    def real_root(self) -> Path: ...

    @property
    def max_file_bytes(self) -> int: ...


def read_text(project: ProjectFiles, rel: str) -> str:
    """Read a project file as UTF-8 text, refusing anything unsafe or unusable."""
    path = project.root / rel
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise SourceError(f"cannot open: {exc.strerror or exc}") from exc
    if not real.is_relative_to(project.real_root):
        raise SourceError("symlink points outside the project; it is not read")
    try:
        size = real.stat().st_size
    except OSError as exc:
        raise SourceError(f"cannot stat: {exc.strerror or exc}") from exc
    limit = project.max_file_bytes
    if size > limit:
        raise SourceError(
            f"file is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit "
            "(raise index.max_file_mb in ktx.yaml to read it)"
        )
    try:
        data = real.read_bytes()
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from exc
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes); expected UTF-8 text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not UTF-8 text (invalid byte at offset {exc.start})") from exc
    return text.removeprefix("\ufeff")


MAX_EXPANDED_NODES = 2_000_000


def _expanded_size(value: Any, memo: dict[int, int]) -> int:
    """Node count with YAML aliases expanded, computed without expanding them (memoised by identity)."""
    if not isinstance(value, (dict, list)):
        return 1
    key = id(value)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards against self-referencing anchors
    children = value.items() if isinstance(value, dict) else enumerate(value)
    total = 1 + sum(_expanded_size(child, memo) for _, child in children)
    memo[key] = total
    return total


def _yaml12_loader() -> type:
    """The safe loader with YAML 1.2 booleans (only true/false), as KTX's own parser reads its files:
    under YAML 1.1 a join's ``on:`` key became ``True`` and ``status: no`` a boolean."""
    base = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    loader = type("Yaml12Loader", (base,), {})
    loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return loader


YAML_LOADER = _yaml12_loader()


def parse_yaml(text: str) -> Any:
    """Safe YAML parse that turns every failure, alias bombs included, into a SourceError."""
    try:
        data = yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(f"invalid YAML{where}: {problem}") from exc
    except RecursionError as exc:
        raise SourceError("YAML nested too deeply") from exc
    try:
        size = _expanded_size(data, {})
    except RecursionError as exc:
        raise SourceError("YAML nested too deeply") from exc
    if size > MAX_EXPANDED_NODES:
        raise SourceError(f"YAML expands to more than {MAX_EXPANDED_NODES:,} nodes (alias bomb?); not read")
    return data


def read_yaml(project: ProjectFiles, rel: str) -> Any:
    return parse_yaml(read_text(project, rel))


def read_json(project: ProjectFiles, rel: str) -> Any:
    text = read_text(project, rel)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SourceError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except RecursionError as exc:
        raise SourceError("JSON nested too deeply") from exc


def list_files(project: ProjectFiles, rel_dir: str, suffixes: tuple[str, ...], recursive: bool = False) -> list[str]:
    """Project-relative POSIX paths under rel_dir with one of the suffixes, sorted; missing dir → []."""
    base = project.root / rel_dir
    if not base.is_dir():
        return []
    found: list[str] = []
    if recursive:
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in filenames:
                if name.endswith(suffixes) and not name.startswith("."):
                    found.append(Path(dirpath, name).relative_to(project.root).as_posix())
    else:
        for entry in os.scandir(base):
            if entry.name.endswith(suffixes) and not entry.name.startswith(".") and not entry.is_dir():
                found.append(f"{rel_dir}/{entry.name}")
    return sorted(found)


def list_dirs(project: ProjectFiles, rel_dir: str) -> list[str]:
    base = project.root / rel_dir
    if not base.is_dir():
        return []
    return sorted(e.name for e in os.scandir(base) if e.is_dir() and not e.name.startswith("."))
