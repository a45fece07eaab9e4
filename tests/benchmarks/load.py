"""Load: concurrent MCP clients over streamable HTTP while the watcher applies edits.

    python tests/benchmarks/load.py [--project data/demo] [--clients 8] [--queries 500] [--edits 100] [--soak 10000]

Starts `ktx-index serve --transport http --watch` on a copy of the project, runs CLIENTS
sessions of QUERIES mixed tool calls each while a writer makes EDITS atomic saves, then a
soak of SOAK further queries; prints latency percentiles, errors and the server's RSS over
time (it should stay flat). Traffic goes to 127.0.0.1 only and every loop is bounded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client

REPO = Path(__file__).resolve().parents[2]
QUERIES = [
    ("discover_data", {"query": "net revenue by week"}),
    ("discover_data", {"query": "late deliveries per courier", "limit": 5}),
    ("discover_data", {"query": "refund reason codes", "kinds": ["column", "sl_dimension"]}),
    ("wiki_search", {"query": "how is churn defined"}),
    ("wiki_search", {"query": "fiscal calendar weeks"}),
    ("dictionary_search", {"values": ["family_4", "Montreal"]}),
    ("entity_details", {"connectionId": "warehouse", "entities": [{"table": "raw.orders"}]}),
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1)))] if ordered else 0.0


async def client_loop(url: str, count: int, offset: int, latencies: list[float], errors: list[str]) -> None:
    async with Client(url) as client:
        for i in range(count):
            name, args = QUERIES[(i + offset) % len(QUERIES)]
            started = time.perf_counter()
            try:
                result = await client.call_tool(name, args)
                if result.is_error:
                    errors.append(f"{name}: {result.content[0].text[:200]}")
            except Exception as exc:  # every failure is counted, none stops the run
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
            latencies.append((time.perf_counter() - started) * 1000)


async def editor(root: Path, edits: int, done: list[int]) -> None:
    pages = sorted((root / "wiki/global").glob("*.md"))
    for i in range(edits):
        page = pages[i % len(pages)]
        tmp = page.with_suffix(".swp")
        tmp.write_text(page.read_text() + f"\nLoad edit {i}.\n")
        os.replace(tmp, page)
        done[0] += 1
        await anyio.sleep(0.1)


async def sampler(pid: int, samples: list[tuple[float, float]], stop: anyio.Event) -> None:
    started = time.perf_counter()
    while not stop.is_set():
        samples.append((time.perf_counter() - started, rss_mb(pid)))
        await anyio.sleep(1.0)


async def run(args: argparse.Namespace, root: Path, url: str, pid: int) -> dict:
    out: dict = {}
    latencies: list[float] = []
    errors: list[str] = []
    edits = [0]
    samples: list[tuple[float, float]] = []
    stop = anyio.Event()
    async with anyio.create_task_group() as tg:
        tg.start_soon(sampler, pid, samples, stop)
        started = time.perf_counter()
        async with anyio.create_task_group() as load:
            load.start_soon(editor, root, args.edits, edits)
            for c in range(args.clients):
                load.start_soon(client_loop, url, args.queries, c, latencies, errors)
        out["phase1"] = (time.perf_counter() - started, list(latencies), list(errors), edits[0])
        soak_lat: list[float] = []
        per_client = max(1, args.soak // args.clients)
        async with anyio.create_task_group() as soak:
            for c in range(args.clients):
                soak.start_soon(client_loop, url, per_client, c, soak_lat, errors)
        out["soak"] = (soak_lat, list(errors))
        stop.set()
    out["rss"] = samples
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=Path, default=REPO / "data" / "demo")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--soak", type=int, default=10000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ktx-load-")) / "project"
    shutil.copytree(args.project, root, ignore=shutil.ignore_patterns(".ktx"))
    port = free_port()
    script = Path(sys.executable).parent / "ktx-index"
    server = subprocess.Popen(
        [str(script), "serve", "--project", str(root), "--transport", "http", "--port", str(port), "--watch"],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.5)
        result = anyio.run(run, args, root, f"http://127.0.0.1:{port}/mcp", server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(root.parent, ignore_errors=True)
    seconds, lat, errors, edits = result["phase1"]
    soak_lat, all_errors = result["soak"]
    rss = [mb for _, mb in result["rss"]]
    print(f"load: {args.clients} clients x {args.queries} queries over HTTP, {edits} edits applied by the watcher")
    print(f"  calls {len(lat)} in {seconds:.1f} s ({len(lat) / seconds:.0f}/s); errors {len(errors)}")
    print(f"  latency p50 {statistics.median(lat):.1f} ms  p95 {pct(lat, 0.95):.1f} ms  p99 {pct(lat, 0.99):.1f} ms")
    print(f"soak: {len(soak_lat)} more calls; errors {len(all_errors) - len(errors)}")
    print(f"  latency p50 {statistics.median(soak_lat):.1f} ms  p99 {pct(soak_lat, 0.99):.1f} ms")
    quarter = max(1, len(rss) // 4)
    print(
        f"server RSS: start {rss[0]:.0f} MB, after load {rss[min(len(rss) - 1, quarter)]:.0f} MB, "
        f"end {rss[-1]:.0f} MB, max {max(rss):.0f} MB ({len(rss)} samples)"
    )
    print(
        "  RSS over time (s: MB): "
        + ", ".join(f"{t:.0f}: {mb:.0f}" for t, mb in result["rss"][:: max(1, len(rss) // 12)])
    )
    for error in (errors + all_errors)[:5]:
        print(f"  error: {error}")


if __name__ == "__main__":
    main()
