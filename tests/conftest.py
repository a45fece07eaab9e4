"""Shared fixtures (small projects written into tmp_path, the demo project, the corpora) and the `ray` marker's check."""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from projects import DEMO, corpus, write_files

from ktx_index.embedding.embedder import HashEmbedder, MiniLMEmbedder
from ktx_index.service import KtxIndex


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A `ray` test fails without Ray instead of skipping: the [ray] extra is part of the install the README and
    CI run, so a missing Ray is a broken environment, not a platform the test does not apply to."""
    if item.get_closest_marker("ray") is not None and importlib.util.find_spec("ray") is None:
        pytest.fail("Ray is not installed: pip install -e '.[ray]' (or deselect these tests with -m 'not ray')")


@pytest.fixture(scope="session", autouse=True)
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The exported ONNX model goes to a per-run directory, never the user's cache (CLI subprocesses inherit it)."""
    path = tmp_path_factory.mktemp("model-cache")
    previous = os.environ.get("KTX_INDEX_MODEL_CACHE")
    os.environ["KTX_INDEX_MODEL_CACHE"] = str(path)
    yield path
    if previous is None:
        os.environ.pop("KTX_INDEX_MODEL_CACHE", None)
    else:
        os.environ["KTX_INDEX_MODEL_CACHE"] = previous


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


@pytest.fixture(scope="session")
def demo_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of data/demo (tests never write into the repository)."""
    target = tmp_path_factory.mktemp("demo") / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


@pytest.fixture(scope="session")
def demo_service(demo_copy: Path) -> Iterator[KtxIndex]:
    """The demo project indexed once per session with the deterministic fake embedder."""
    service = KtxIndex(demo_copy, embedder=HashEmbedder())
    service.rebuild()
    yield service
    service.close()


@pytest.fixture(scope="session")
def real_demo_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KtxIndex]:
    """The demo project indexed with the real all-MiniLM-L6-v2 model (tests using it are marked `model`)."""
    target = tmp_path_factory.mktemp("real-demo") / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    service = KtxIndex(target, embedder=MiniLMEmbedder())
    service.rebuild()
    yield service
    service.close()
