"""Build and query speed on one project, in-process and through a real MCP stdio client.

    python tests/benchmarks/latency.py [--project tests/benchmarks/corpora/orbit] [--queries 40] [--skip-mcp]
        [--judged tests/benchmarks/judged/orbit.yaml] [--gap-ms 0]

Measures: full rebuild with embeddings from an empty vector cache, no-op rebuild, re-indexing
one changed file; warm p50/p95 of discover_data, wiki_search and dictionary_search with
distinct queries (each query embedded once, as a new agent question would be; with --judged, the judged
questions written in users' words instead, whose unknown words the bridge embeds one by one); the same
through `ktx-index serve` over stdio, server start to first answer, and server RSS. For
comparison it times, in the same run, what a KTX-style call costs: re-reading the project
files and ranking by substring counts (reference §2.5), as KTX does on every call.

Calls follow each other at once by default, the best case. ``--gap-ms`` waits that long before each timed call, as
an agent's calls, seconds apart, do: on a shared virtual machine the caches go cold while the CPU idles, and a call
after a pause takes longer (docs/benchmarks.md, forty-second session).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from ktx_baseline import KtxBaseline  # noqa: E402

from indexers import load_project, read_project  # noqa: E402
from ktx_index.evaluation.judged import load_judged  # noqa: E402
from ktx_index.service import KtxIndex  # noqa: E402

REPO = HERE.parents[1]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def queries_for(project: Path, count: int) -> tuple[list[str], list[str], list[list[str]]]:
    """Distinct discover/wiki queries and dictionary values drawn from the project's own documents."""
    read = read_project(load_project(project))
    names = [d.name.replace("_", " ") for d in read.documents if d.kind in ("sl_source", "table", "sl_measure")]
    summaries = [d.summary for d in read.documents if d.kind == "wiki" and d.summary]
    discover = []
    for i in range(count):
        pool = summaries if i % 2 and summaries else names
        text = pool[(i * 7) % len(pool)] if pool else f"query {i}"
        discover.append(" ".join(text.split()[:8]) + f" {['by month', 'per customer', 'trend', 'total'][i % 4]}")
    wiki = [" ".join(s.split()[:6]) + " policy" for s in summaries[:count]] or discover[:count]
    values = [d.id for d in read.documents if d.kind == "dictionary_value"][:count] or ["x"]
    return list(dict.fromkeys(discover)), list(dict.fromkeys(wiki)), [[v] for v in values]


def judged_queries(path: Path) -> tuple[list[str], list[str], list[list[str]]]:
    """The discover, wiki and dictionary questions of a judged set (judged/*.yaml)."""
    questions = load_judged(path).queries
    asked = {tool: [q for q in questions if q.tool == tool] for tool in ("discover_data", "wiki_search")}
    values = [q.values or [] for q in questions if q.tool == "dictionary_search"]
    return [q.text for q in asked["discover_data"]], [q.text for q in asked["wiki_search"]], values


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


def rss_kb(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


async def through_mcp(
    project: Path, discover: list[str], wiki: list[str], values: list[list[str]], gap_s: float = 0.0
) -> dict:
    from mcp import Client, StdioServerParameters

    script = Path(sys.executable).parent / "ktx-index"
    params = StdioServerParameters(
        command=str(script), args=["serve", "--project", str(project), "--no-build"], env=dict(os.environ)
    )  # the environment passed on: a PYTHONPATH naming another checkout reaches the server too
    started = time.perf_counter()
    out: dict[str, object] = {}
    async with Client(params) as client:
        await client.call_tool("discover_data", {"query": "warm up"})
        out["start_to_first_answer_ms"] = (time.perf_counter() - started) * 1000
        for tool, inputs in (
            ("discover_data", [{"query": q} for q in discover]),
            ("wiki_search", [{"query": q} for q in wiki]),
            ("dictionary_search", [{"values": v} for v in values]),
        ):
            times = []
            for args in inputs:
                await anyio.sleep(gap_s)
                t0 = time.perf_counter()
                result = await client.call_tool(tool, args)
                times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content
            out[tool] = times
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
        for pid in pids:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if any(c == b"serve" for c in cmdline) and str(project).encode() in cmdline:
                out["server_rss_kb"], out["server_peak_kb"] = rss_kb(pid)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--project", type=Path, default=HERE / "corpora" / "orbit", help="copied to a temp folder first"
    )
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--skip-mcp", action="store_true")
    parser.add_argument("--judged", type=Path, help="time these judged questions instead of generated ones")
    parser.add_argument("--gap-ms", type=float, default=0.0, help="wait this long before each timed call")
    args = parser.parse_args()
    if args.gap_ms < 0:
        parser.error("--gap-ms: send a wait of 0 ms or more")
    gap_s = args.gap_ms / 1000
    work = Path(tempfile.mkdtemp(prefix="ktx-latency-")) / args.project.name
    shutil.copytree(args.project, work, ignore=shutil.ignore_patterns(".ktx"))
    rows: list[tuple[str, str]] = []

    service = KtxIndex(work)
    service.embedder.encode(["load the model before timing"])  # model load is not index build time
    full_ms, report = timed(service.rebuild)
    service.ensure_word_table()  # as the `rebuild` command does; once per machine, not timed
    rows.append(
        (
            "full rebuild (parse / lexical / embed)",
            f"{full_ms / 1000:.2f} s ({report.parse_ms / 1000:.2f} / {report.lexical_ms / 1000:.2f} / {report.embed_ms / 1000:.2f}); {report.added} docs, {report.embedded} texts embedded",
        )
    )
    noop_ms, _ = timed(service.rebuild)
    rows.append(("no-op rebuild", f"{noop_ms:.0f} ms"))
    target = next((p for p in sorted((work / "wiki/global").glob("*.md"))), None) or next(work.rglob("*.yaml"))
    target.write_text(target.read_text() + "\nOne more sentence about quarterly targets.\n")
    one_ms, one = timed(service.rebuild)
    rows.append(("one changed file", f"{one_ms:.0f} ms ({one.updated} updated, {one.embedded} embedded)"))
    size = sum(f.stat().st_size for f in (work / ".ktx/index").rglob("*") if f.is_file())
    rows.append(("index size on disk", f"{size / 1e6:.1f} MB"))

    discover, wiki, values = judged_queries(args.judged) if args.judged else queries_for(work, args.queries)
    service.discover_data("warm up")
    for tool, fn, inputs in (
        ("discover_data", service.discover_data, discover),
        ("wiki_search", service.wiki_search, wiki),
        ("dictionary_search", service.dictionary_search, values),
    ):
        if not inputs:  # a judged file without questions for this tool (judged/blind has no values)
            continue
        times = []
        for q in inputs:
            time.sleep(gap_s)
            times.append(timed(fn, q)[0])
        rows.append(
            (
                f"{tool} in-process p50 / p95",
                f"{statistics.median(times):.1f} / {pct(times, 0.95):.1f} ms ({len(times)} distinct)",
            )
        )
    baseline_times = []
    for q in discover[:10]:
        t0 = time.perf_counter()
        KtxBaseline(read_project(load_project(work)).documents).discover(q)
        baseline_times.append((time.perf_counter() - t0) * 1000)
    rows.append(("KTX-style discover (re-read + substring rank)", f"{statistics.median(baseline_times):.1f} ms p50"))
    service.close()

    if not args.skip_mcp:
        mcp = anyio.run(through_mcp, work, discover, wiki, values, gap_s)
        rows.append(("MCP server start to first answer", f"{mcp['start_to_first_answer_ms'] / 1000:.2f} s"))
        for tool in ("discover_data", "wiki_search", "dictionary_search"):
            times = mcp[tool]
            if not times:
                continue
            rows.append(
                (f"{tool} via MCP stdio p50 / p95", f"{statistics.median(times):.1f} / {pct(times, 0.95):.1f} ms")
            )
        if "server_rss_kb" in mcp:
            rows.append(
                (
                    "MCP server RSS (peak)",
                    f"{mcp['server_rss_kb'] / 1024:.0f} MB ({mcp['server_peak_kb'] / 1024:.0f} MB)",
                )
            )

    width = max(len(k) for k, _ in rows)
    gap = f", {args.gap_ms:g} ms before each call" if args.gap_ms else ""
    print(f"project: {args.project}  ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores{gap})")
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    shutil.rmtree(work.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
