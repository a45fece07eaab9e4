"""``rebuild --ray``: the same index as a local build, through real Ray clusters on this machine, with faults.

The reference is ``real_demo_service`` (the demo built locally with the real model). Clusters are real:
a head and worker nodes, each its own raylet (``tests/ray_support.py``); every test checks that no Ray
process outlives it. Tests that start a cluster are marked ``ray``: they need the [ray] extra (CI installs
it) and fail without it (tests/conftest.py), rather than skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from projects import DEMO, REPO

from ktx_index.cli import cli
from ktx_index.embedding.embedder import HashEmbedder, MiniLMEmbedder
from ktx_index.errors import ClusterUnavailable
from ktx_index.evaluation.judged import load_judged
from ktx_index.evaluation.metrics import service_runner
from ktx_index.index.ray_pool import RayEmbedding
from ktx_index.service import KtxIndex

JUDGED = REPO / "tests" / "benchmarks" / "judged" / "demo.yaml"


def demo_project(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


def same_answers(local: KtxIndex, other: KtxIndex) -> None:
    run_local, run_other = service_runner(local), service_runner(other)
    for q in load_judged(JUDGED).queries:
        assert run_local(q) == run_other(q), q.id


def test_batches_are_cut_by_padded_tokens_and_cover_every_text_once():
    words = [" ".join(["word"] * n) for n in range(1, 60)]
    group = sorted(((f"k{i}", text) for i, text in enumerate(words)), key=lambda kt: len(kt[1]))
    pool = RayEmbedding("auto", HashEmbedder(), batch_tokens=64)
    batches = list(pool._batches([group[:30], group[30:]]))
    assert [k for keys, _ in batches for k in keys] == [k for k, _ in group]
    for keys, texts in batches:
        width = max(len(t.split()) + 2 for t in texts)  # the test embedder's token count
        assert len(keys) == 1 or width * len(keys) <= 64


@pytest.mark.slow
def test_importing_ktx_index_and_a_plain_rebuild_never_import_ray(make_project):
    root = make_project({"wiki/global/orders.md": "# Orders\nHow orders are counted.\n"})
    (root / "ktx.yaml").write_text("connections: {}\nindex:\n  embeddings: false\n")
    code = (
        "import sys; import ktx_index, ktx_index.service, ktx_index.cli\n"
        "from click.testing import CliRunner\n"
        f"result = CliRunner().invoke(ktx_index.cli.cli, ['rebuild', '--project', {str(root)!r}])\n"
        "assert result.exit_code == 0, result.output\n"
        "print('ray' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_ray_missing_says_how_to_install_it(make_project, monkeypatch):
    root = make_project({"wiki/global/orders.md": "# Orders\n"})
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError, as without the extra
    result = CliRunner().invoke(cli, ["rebuild", "--project", str(root), "--ray", "auto"])
    assert result.exit_code == 1
    assert "pip install -e '.[ray]'" in result.output


@pytest.mark.ray
def test_an_unreachable_head_is_named_before_anything_is_read(make_project):
    root = make_project({"wiki/global/orders.md": "# Orders\n"})
    result = CliRunner().invoke(cli, ["rebuild", "--project", str(root), "--ray", "127.0.0.1:9"])
    assert result.exit_code == 1
    assert "cannot reach the Ray head at 127.0.0.1:9" in result.output
    assert "plain `ktx-index rebuild`" in result.output
    assert not (root / ".ktx" / "index" / "store.sqlite").exists()


@pytest.mark.ray
@pytest.mark.model
def test_two_nodes_build_the_local_index_and_survive_losing_one(real_demo_service, tmp_path):
    from ray_support import compare_indexes, local_cluster

    project = demo_project(tmp_path)
    with local_cluster(workers=2) as (cluster, nodes, _temp):
        embedder = MiniLMEmbedder()
        pool = RayEmbedding(cluster.address, embedder, batch_tokens=256).start()  # ~60 batches
        service = KtxIndex(project, embedder=embedder, embed_backend=pool)
        killed: list[object] = []

        def kill_a_node_once(stage: str, done: int, total: int) -> None:
            if stage == "embed" and not killed and done < total:
                killed.append(nodes[0])
                cluster.remove_node(nodes[0], allow_graceful=False)

        try:
            report = service.rebuild(on_progress=kill_a_node_once)
        finally:
            service.close()
            pool.close()
    assert killed and pool.lost >= 1, "the node was not lost mid-build"
    assert pool.retried >= 1, "the lost worker had no batch in flight"
    assert report.embedding_status == "ready"
    assert report.embedded == sum(pool.texts_by_node.values())  # every text once, none twice
    figures = compare_indexes(real_demo_service.root, project)
    assert figures["vectors"] == report.embedded
    reopened = KtxIndex(project, embedder=MiniLMEmbedder())
    try:
        same_answers(real_demo_service, reopened)
    finally:
        reopened.close()


@pytest.mark.ray
@pytest.mark.model
def test_a_lost_cluster_stops_the_build_and_a_plain_rebuild_resumes(real_demo_service, tmp_path):
    from ray_support import compare_indexes, local_cluster

    project = demo_project(tmp_path)
    with local_cluster(workers=1) as (cluster, nodes, _temp):
        address = cluster.address
        embedder = MiniLMEmbedder()
        pool = RayEmbedding(address, embedder, batch_tokens=256).start()
        service = KtxIndex(project, embedder=embedder, embed_backend=pool)

        def lose_the_cluster(stage: str, done: int, total: int) -> None:
            if stage == "embed" and cluster.head_node is not None:
                cluster.remove_node(nodes[0], allow_graceful=False)
                cluster.head_node.kill_all_processes(check_alive=False, allow_graceful=False, wait=True)
                cluster.head_node = None

        try:
            with pytest.raises(ClusterUnavailable) as lost:
                service.rebuild(on_progress=lose_the_cluster)
        finally:
            service.close()
            pool.close()
    assert f"lost the Ray cluster at {address}" in str(lost.value)
    committed = sum(pool.texts_by_node.values())
    resumed = KtxIndex(project, embedder=MiniLMEmbedder())
    try:
        report = resumed.rebuild()
    finally:
        resumed.close()
    assert report.added == report.updated == 0  # the documents were committed before embedding began
    assert report.embedding_status == "ready"
    figures = compare_indexes(real_demo_service.root, project)
    assert report.embedded == figures["vectors"] - committed  # only what the cluster had not embedded


@pytest.mark.ray
@pytest.mark.model
@pytest.mark.slow
def test_the_cli_starts_a_local_cluster_reports_progress_and_leaves_nothing_running(real_demo_service, tmp_path):
    from ray_support import compare_indexes, ray_processes, wait_gone

    project = demo_project(tmp_path)
    temp = tempfile.mkdtemp(prefix="ktxray-", dir="/tmp")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "RAY_TMPDIR": temp}
    try:
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                "from ktx_index.cli import main; main()",
                *("rebuild", "--project", str(project)),
                *("--ray", "auto"),
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert out.returncode == 0, out.stderr
        assert "ray: 2 workers starting" in out.stderr or "workers starting" in out.stderr
        assert "texts embedded across the cluster" in out.stderr
        assert wait_gone(temp) == [], ray_processes(temp)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    compare_indexes(real_demo_service.root, project)
