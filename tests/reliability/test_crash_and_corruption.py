"""Kill -9 during rebuilds and watches, and damage the index on disk: it must always open, answer from
one consistent committed state, and the next rebuild must converge to what a clean build produces."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from projects import DEMO, run_cli

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import IndexUnavailable
from ktx_index.index.layout import IndexLayout
from ktx_index.service import KtxIndex

pytestmark = pytest.mark.slow

TRIALS = 20
WORKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from ktx_index.embedding.embedder import HashEmbedder
    from ktx_index.service import KtxIndex
    root, mode = Path(sys.argv[1]), sys.argv[2]
    service = KtxIndex(root, embedder=HashEmbedder())
    if mode == "rebuild":
        for i in range(1000):
            service.rebuild(force=bool(i % 2))
    else:
        from ktx_index.watcher import Watcher
        Watcher(service, step_ms=10, debounce_ms=100).run()
    """
)


def documents(root: Path) -> dict[str, str]:
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    docs = service.refreshed_engine().store.docs.hashes()
    service.close()
    return docs


def copy_demo(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


def edit(root: Path, rng: random.Random, step: int) -> None:
    pages = sorted((root / "wiki/global").glob("*.md"))
    page = pages[rng.randrange(len(pages))]
    tmp = page.with_suffix(".tmp")
    tmp.write_text(page.read_text() + f"\n\nEdit number {step} about quokka{step}.\n")
    os.replace(tmp, page)
    if step % 3 == 0:
        (root / f"wiki/global/new-page-{step}.md").write_text(f"---\nsummary: page {step}\n---\nBody {step}.\n")


@pytest.mark.parametrize("mode", ["rebuild", "watch"])
def test_kill_9_at_random_points_never_loses_a_document(tmp_path, mode):
    rng = random.Random(f"crash-{mode}")
    root = copy_demo(tmp_path, "project")
    documents(root)  # a committed index to start from
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    for trial in range(TRIALS):
        proc = subprocess.Popen([sys.executable, "-c", WORKER, str(root), mode], env=env)
        deadline = time.monotonic() + rng.uniform(0.3, 2.5)
        step = trial * 10
        while time.monotonic() < deadline:
            edit(root, rng, step)
            step += 1
            time.sleep(rng.uniform(0.0, 0.2))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # the index opens and answers from a committed state, without any writer running
        reader = KtxIndex(root, embedder=HashEmbedder())
        assert reader.wiki_search("fiscal calendar").results, f"trial {trial}: no answer after kill"
        reader.close()
    converged = documents(root)
    clean = documents(_fresh_copy(root, tmp_path / "clean"))
    assert converged == clean


def _fresh_copy(root: Path, target: Path) -> Path:
    shutil.copytree(root, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


DAMAGE = {
    "delete a segment file": lambda layout: next(p for p in layout.lexical.iterdir() if p.suffix == ".idx").unlink(),
    "truncate a segment file": lambda layout: _truncate(
        next(p for p in layout.lexical.iterdir() if p.suffix == ".store")
    ),
    "delete tantivy meta.json": lambda layout: (layout.lexical / "meta.json").unlink(),
    "truncate the vector file": lambda layout: _truncate(layout.vectors),
    "garble the document store": lambda layout: _garble(layout.store),
    "delete the document store": lambda layout: layout.store.unlink(),
}


def _truncate(path: Path) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        fh.truncate(size // 3)


def _garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(0, len(data), 97):
        data[i] = (data[i] + 91) % 256
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damaged_index_is_detected_and_repaired_with_a_diagnostic(tmp_path, damage):
    root = copy_demo(tmp_path, "project")
    clean = documents(root)
    layout = IndexLayout(root)
    for suffix in ("-wal", "-shm"):
        Path(str(layout.store) + suffix).unlink(missing_ok=True)
    DAMAGE[damage](layout)
    service = KtxIndex(root, embedder=HashEmbedder())
    result = service.wiki_search("fiscal calendar")  # opening detects the damage and repairs it first
    assert result.results and result.results[0].key == "fiscal-calendar"
    repaired = [d.message for d in service.status().diagnostics if d.code == "repaired"]
    assert repaired, f"{damage}: no repair reported"
    lanes = service.wiki_search("fiscal calendar").results[0].lanes
    assert next(lane for lane in lanes if lane.lane == "semantic").status == "available"
    service.rebuild()
    assert service.refreshed_engine().store.docs.hashes() == clean
    assert not [d for d in service.status().diagnostics if d.code == "repaired"]  # cleared by a clean rebuild
    service.close()


def test_an_index_that_cannot_be_used_is_reported_not_wiped(tmp_path):
    """A folder where the store belongs (as a store without permission, which root cannot simulate) is not damage:
    the index is left as it is and the error names it, rather than wiping it and rebuilding over the user's files."""
    root = copy_demo(tmp_path, "project")
    documents(root)  # built
    layout = IndexLayout(root)
    layout.store.rename(root / "store-aside")
    for suffix in ("-wal", "-shm"):
        Path(str(layout.store) + suffix).unlink(missing_ok=True)
    layout.store.mkdir()
    segments = sorted(p.name for p in layout.lexical.iterdir())
    with pytest.raises(IndexUnavailable, match=r"cannot open the index \(.*store.sqlite: a folder where"):
        KtxIndex(root, embedder=HashEmbedder()).rebuild()
    assert sorted(p.name for p in layout.lexical.iterdir()) == segments  # nothing wiped
    (root / ".ktx").rename(root / "ktx-aside")
    (root / ".ktx").write_text("not a folder")
    out = run_cli("search", "fiscal", "--project", root)  # a build: .ktx must be a folder
    assert out.exit_code == 1 and "check the permissions of the project and its .ktx folder" in out.output
