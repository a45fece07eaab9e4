"""Ray clusters on this machine for the tests and tests/benchmarks/distributed.py, and the comparison of two
indexes built from the same project (locally and through a cluster).

Every cluster lives under its own short temp directory (Ray's socket paths must stay under ~100 bytes), binds
to 127.0.0.1, sends no usage statistics and starts no dashboard UI; ``ray_processes`` finds what is left of
it by that directory, so a test can check that nothing outlived it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ktx_index.index.layout import IndexLayout
from ktx_index.index.ray_pool import import_ray
from ktx_index.index.store import DocStore
from ktx_index.index.vectors import VectorFile


def ray_processes(temp_dir: str) -> list[str]:
    """Processes whose command line names the cluster's temp directory (raylets, GCS, workers, agents)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [line.strip() for line in out.splitlines()[1:] if temp_dir in line and "ps -eo" not in line]


def wait_gone(temp_dir: str, timeout: float = 30.0) -> list[str]:
    """What is still running of the cluster after ``timeout`` seconds (Ray stops its processes asynchronously)."""
    deadline = time.monotonic() + timeout
    while (left := ray_processes(temp_dir)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


@contextlib.contextmanager
def local_cluster(workers: int, cpus_per_worker: int = 1) -> Iterator[tuple[Any, list[Any], str]]:
    """A head with no CPU (it schedules; the driver attaches to it) and ``workers`` nodes of one CPU each:
    (cluster, worker nodes, temp dir). Everything is stopped on exit, and checked gone."""
    ray = import_ray(loopback=True)
    from ray.cluster_utils import Cluster

    temp = tempfile.mkdtemp(prefix="ktxray-", dir="/tmp")
    # Cluster() writes the head's address to <system temp>/ray/ray_current_cluster whatever temp_dir says,
    # without creating that folder: on a machine where Ray never ran, the first cluster fails to start.
    os.makedirs(os.path.join(os.environ.get("RAY_TMPDIR") or os.environ.get("TMPDIR") or "/tmp", "ray"), exist_ok=True)
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, "temp_dir": temp}
    )
    try:
        nodes = [cluster.add_node(num_cpus=cpus_per_worker, temp_dir=temp) for _ in range(workers)]
        cluster.wait_for_nodes()
        yield cluster, nodes, temp
    finally:
        ray.shutdown()
        with contextlib.suppress(Exception):  # a head a test killed is already gone
            cluster.shutdown()
        left = wait_gone(temp)
        shutil.rmtree(temp, ignore_errors=True)
        assert not left, f"Ray processes outlived the cluster: {left}"


def index_summary(project: Path) -> dict[str, Any]:
    """What must be identical between two builds of one project: counts, stamps, fingerprints, vector keys."""
    store = DocStore(IndexLayout(project).store, readonly=True)
    try:
        meta = store.meta.all()
        rows = {key: row for row, key in store.vectors.keys_by_row().items()}
        return {
            "counts": sorted(store.docs.counts(), key=str),
            "format": meta.get("format"),
            "embed_fingerprint": meta.get("embed_fingerprint"),
            "embed_model": meta.get("embed_model"),
            "chunks": store.chunks.stats(),
            "rows": rows,
            "missing": store.missing_vector_keys(),
        }
    finally:
        store.close()


def compare_indexes(local: Path, other: Path, dim: int = 384) -> dict[str, Any]:
    """Compare ``other`` with ``local``: everything in ``index_summary`` but the rows equal, each key's vector
    within cosine 0.9999, no text stored twice. Returns the figures (min cosine, max |Δ|, rows)."""
    a, b = index_summary(local), index_summary(other)
    for field in ("counts", "format", "embed_fingerprint", "embed_model", "chunks"):
        assert a[field] == b[field], (field, a[field], b[field])
    assert a["missing"] == [] and b["missing"] == [], "a text has no vector"
    assert a["rows"].keys() == b["rows"].keys(), "the two builds embedded different texts"
    file_rows = VectorFile(IndexLayout(other).vectors, dim).rows()
    assert file_rows == len(b["rows"]) == len(set(b["rows"].values())), "a text was stored twice (or a row lost)"
    keys = sorted(a["rows"])
    va = VectorFile(IndexLayout(local).vectors, dim).read_rows(np.array([a["rows"][k] for k in keys]))
    vb = VectorFile(IndexLayout(other).vectors, dim).read_rows(np.array([b["rows"][k] for k in keys]))
    va /= np.linalg.norm(va, axis=1, keepdims=True)
    vb /= np.linalg.norm(vb, axis=1, keepdims=True)
    cosines = (va * vb).sum(axis=1)
    figures = {
        "vectors": len(keys),
        "min_cosine": float(cosines.min()),
        "max_abs_diff": float(np.abs(va - vb).max()),
        "identical": int((va == vb).all(axis=1).sum()),
    }
    assert figures["min_cosine"] >= 0.9999, figures
    return figures
