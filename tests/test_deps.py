"""Every import is declared where it is used: runtime code in `dependencies`, tests in the [dev] extra (deptry)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def deptry(*args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec("deptry") is None:
        # fails rather than skips: a skipped check reads as a green one
        pytest.fail("deptry is not installed: pip install -e '.[dev]'")
    return subprocess.run(
        [sys.executable, "-m", "deptry", ".", "--no-ansi", *args], cwd=REPO, capture_output=True, text=True
    )


def test_runtime_imports_are_declared_dependencies():
    """ktx_index/ and indexers/: nothing imported only through another package, nothing from [dev]."""
    result = deptry()
    assert result.returncode == 0, result.stdout + result.stderr


def test_test_imports_are_declared():
    """tests/ too (the [dev] extra is allowed there; unused declarations are the first test's business)."""
    result = deptry("--exclude", "venv", "--exclude", r"\.venv", "--exclude", r"\.git", "--ignore", "DEP002,DEP004")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Scanning" in result.stdout + result.stderr
