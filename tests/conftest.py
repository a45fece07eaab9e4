"""Shared fixtures: small projects written into tmp_path, the demo project, the corpora."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from projects import corpus, write_files


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    def make(files: dict[str, Any], config: str | None = "connections:\n  warehouse:\n    driver: postgres\n") -> Path:
        root = tmp_path / "project"
        root.mkdir(exist_ok=True)
        if config is not None:
            (root / "ktx.yaml").write_text(config)
        return write_files(root, files)

    return make


@pytest.fixture
def orbit_copy(tmp_path: Path) -> Path:
    target = tmp_path / "orbit"
    shutil.copytree(corpus("orbit"), target)
    return target
