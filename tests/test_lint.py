"""The codebase stays ruff-clean and ruff-formatted: checked with the tests, so CI fails on a lint or format error.

A missing ruff fails rather than skips: a skipped check reads as a green one. The installed ruff must be the
minor release pyproject.toml pins, because a newer release adds rules and changes formatting.
"""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PATHS = ["ktx_index", "indexers", "tests"]
INSTALL = "pip install -e '.[dev]'"


def ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail(f"ruff is not installed: {INSTALL} (the [dev] extra pins the release the checks expect)")
    return found


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([ruff(), *args], cwd=REPO, capture_output=True, text=True)


def pinned_range() -> tuple[tuple[int, ...], tuple[int, ...]]:
    pin = re.search(r'"ruff>=([\d.]+),<([\d.]+)"', (REPO / "pyproject.toml").read_text())
    assert pin, "pyproject.toml's [dev] extra pins ruff as ruff>=X.Y,<X.(Y+1)"
    low, high = (tuple(int(p) for p in v.split(".")) for v in pin.groups())
    return low, high


def test_ruff_is_the_pinned_release():
    version = re.search(r"(\d+\.\d+\.\d+)", run("--version").stdout)
    assert version, "ruff --version printed no version"
    installed = tuple(int(p) for p in version.group(1).split("."))
    low, high = pinned_range()
    assert low <= installed < high, f"ruff {version.group(1)} is outside the pinned {low}..{high}: {INSTALL}"


def test_ruff_clean():
    result = run("check", *PATHS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_formatted():
    result = run("format", "--check", *PATHS)
    assert result.returncode == 0, f"run `ruff format {' '.join(PATHS)}`:\n" + result.stdout + result.stderr
