"""Embedding a synthetic project locally and on local Ray clusters of 1 and 2 worker nodes (one CPU each).

    python tests/benchmarks/distributed.py [--columns 100000] [--nodes 1 2] [--markdown]

The project (tests/benchmarks/synth.py, seed 7) is parsed and committed once without vectors; each
configuration then embeds every text of a copy of that index, in a child process of its own (so its peak RSS
is its own): ``local`` (``rebuild``: one process, a session call per core), and ``ray ×N``
(``rebuild --ray``'s pool on a ``ray.cluster_utils.Cluster`` whose head has no CPU and whose N worker nodes
have one each, each node its own raylet). Start-up (cluster, workers loading the model) is timed apart from
embedding. Every index is compared with the local one (tests/ray_support.py: counts, stamps, fingerprints,
every vector).

Prints, per configuration: texts embedded, embedding wall time, texts/s, speed-up over one node, start-up,
the writer's peak RSS, each node's worker peak RSS, texts per CPU-second of the workers (locally: of the one
process) and CPU-seconds the writer spends per 1,000 texts (both independent of how busy the machine is: they
say what N free cores would give), the machine's busy cores meanwhile (all processes: on a shared machine the
other engineers' work shows here), and the agreement with the local vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.append(str(HERE.parent))  # tests/ (ray_support), after the repository root:
sys.path.insert(0, str(HERE.parents[1]))  # a tests/indexers namespace must not shadow the indexers package

from scale import CpuWindow, ensure_synthetic, machine  # noqa: E402

from ktx_index.embedding.embedder import MiniLMEmbedder  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

WORK = Path("/tmp/ktx-distributed")
SEED = 7


def parsed_base(columns: int) -> Path:
    """The synthetic project with its documents committed and no vector (parsed once for every configuration)."""
    base = WORK / str(columns) / "base"
    if not (base / ".ktx" / "index" / "store.sqlite").is_file():
        shutil.rmtree(base, ignore_errors=True)
        shutil.copytree(ensure_synthetic(columns, SEED), base, ignore=shutil.ignore_patterns(".ktx"))
        service = KtxIndex(base, embedder=MiniLMEmbedder())
        started = time.perf_counter()
        report = service.rebuild(embed=False)
        service.close()
        print(f"  parsed {base}: {report.added:,} documents in {time.perf_counter() - started:.0f} s", flush=True)
    return base


def run_one(config: str, project: Path) -> dict[str, Any]:
    """In a child: embed every pending text of ``project`` with ``config`` (local, or ray-N)."""
    embedder = MiniLMEmbedder()
    started = time.perf_counter()
    out: dict[str, Any] = {"config": config}
    if config == "local":
        embedder.encode([f"warm-up {i}" for i in range(8)])  # loads the bulk session
        out["startup_s"] = time.perf_counter() - started
        service = KtxIndex(project, embedder=embedder)
        out |= timed_embed(service)
        service.close()
        out["node_rss_mb"] = {}
    else:
        from ray_support import local_cluster

        from ktx_index.index.ray_pool import RayEmbedding

        with local_cluster(workers=int(config.split("-")[1])) as (cluster, _nodes, _temp):
            pool = RayEmbedding(cluster.address, embedder).start()
            out["workers"] = pool.wait_ready()
            out["startup_s"] = time.perf_counter() - started
            loaded = pool.usage()  # CPU spent loading the model is not embedding
            service = KtxIndex(project, embedder=embedder, embed_backend=pool)
            out |= timed_embed(service)
            service.close()
            usage = pool.usage()
            out["node_rss_mb"] = {node: rss for node, (rss, _cpu) in usage.items()}
            out["worker_cpu_s"] = sum(cpu - loaded.get(node, (0, 0))[1] for node, (_rss, cpu) in usage.items())
            out["texts_by_node"] = dict(pool.texts_by_node)
            pool.close()
    out["writer_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


def cpu_s() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def timed_embed(service: KtxIndex) -> dict[str, Any]:
    with CpuWindow() as window:
        started, cpu = time.perf_counter(), cpu_s()
        texts, status = service.embed_pending()
        wall = time.perf_counter() - started
    assert status == "ready", status
    writer_cpu = cpu_s() - cpu
    return {"texts": texts, "embed_s": wall, "texts_per_s": texts / wall, "busy_cores": window.cores(),
            "writer_cpu_s": writer_cpu, "worker_cpu_s": writer_cpu}  # fmt: skip


def child(config: str, base: Path) -> dict[str, Any]:
    project = base.parent / config
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(base, project, symlinks=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), str(HERE.parent), str(HERE)])}
    proc = subprocess.run(
        [sys.executable, __file__, "--one", config, "--project", str(project)],
        capture_output=True,
        text=True,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{config} failed: {proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["project"] = str(project)
    return result


def render(results: list[dict[str, Any]], markdown: bool) -> str:
    one = next((r["texts_per_s"] for r in results if r["config"] == "ray-1"), None)
    header = ["config", "texts", "embed s", "texts/s", "× 1 node", "start-up s", "writer peak RSS MB",
              "worker peak RSS MB per node", "texts per worker CPU-s", "writer CPU-s per 1k texts",
              "busy cores (all processes)", "min cosine vs local"]  # fmt: skip
    rows = []
    for r in results:
        nodes = " / ".join(f"{mb:.0f}" for _, mb in sorted(r["node_rss_mb"].items())) or "(in the writer)"
        rows.append([
            "local (2 cores)" if r["config"] == "local" else f"ray, {r['config'].split('-')[1]} node(s) × 1 CPU",
            f"{r['texts']:,}", f"{r['embed_s']:.1f}", f"{r['texts_per_s']:.0f}",
            f"{r['texts_per_s'] / one:.2f}" if one else "-", f"{r['startup_s']:.1f}", f"{r['writer_rss_mb']:.0f}",
            nodes, f"{r['texts'] / r['worker_cpu_s']:.0f}",
            "-" if r["config"] == "local" else f"{1000 * r['writer_cpu_s'] / r['texts']:.2f}",
            f"{r['busy_cores']:.2f}", r.get("agreement", "reference"),
        ])  # fmt: skip
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True)) for row in [header, *rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--columns", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--no-local", action="store_true", help="Skip the local build (no agreement check).")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--project", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one, args.project)))
        return
    from ray_support import compare_indexes

    print(f"# {machine()}", flush=True)
    base = parsed_base(args.columns)
    configs = ([] if args.no_local else ["local"]) + [f"ray-{n}" for n in args.nodes]
    results = []
    for config in configs:
        print(f"  {config} ...", flush=True)
        results.append(child(config, base))
        print(f"  {config}: {results[-1]['texts_per_s']:.0f} texts/s", flush=True)
    local = next((r for r in results if r["config"] == "local"), None)
    for r in results:
        if local is not None and r is not local:
            figures = compare_indexes(Path(local["project"]), Path(r["project"]))
            r["agreement"] = f"{figures['min_cosine']:.7f} ({figures['identical']:,}/{figures['vectors']:,} identical)"
    print(f"\n{args.columns:,} columns, load average now {os.getloadavg()[0]:.2f}")
    print(render(results, args.markdown))


if __name__ == "__main__":
    main()
