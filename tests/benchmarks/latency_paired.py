"""MCP latency of this checkout against another, questions alternated between the two servers.

    python tests/benchmarks/latency_paired.py --against /path/to/other/checkout
        [--project tests/benchmarks/corpora/orbit] [--judged tests/benchmarks/judged/orbit.yaml] [--rounds 4]

On a shared 2-core machine one run's p50 drifts by a millisecond or more from the next (docs/benchmarks.md), as
much as most changes are worth, so two runs one after the other cannot tell a 0.3 ms change from noise. Here
both servers (`ktx-index serve` over stdio, the other checkout's code reached through PYTHONPATH) run at once on
their own copy of the project, and each question is asked of both, in alternating order, so drift hits both
alike; the table gives each one's p50 and the median of the per-question differences.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from latency import judged_queries  # noqa: E402

from ktx_index.service import KtxIndex  # noqa: E402

REPO = HERE.parents[1]
TOOLS = ("discover_data", "wiki_search")


def server(checkout: Path, project: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    script = Path(sys.executable).parent / "ktx-index"
    return StdioServerParameters(command=str(script), args=["serve", "--project", str(project), "--no-build"], env=env)


async def paired(checkouts: dict[str, Path], projects: dict[str, Path], questions: dict[str, list[str]], rounds: int):
    """Per tool and checkout, every call's milliseconds, in question order (so the two lists pair up)."""
    tools = [tool for tool in TOOLS if questions[tool]]  # a scan-only project has no wiki questions
    times: dict[tuple[str, str], list[float]] = {(name, tool): [] for name in checkouts for tool in tools}
    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(Client(server(checkout, projects[name])))
            for name, checkout in checkouts.items()
        }
        for client in clients.values():
            for tool in tools:  # the model loaded and each tool's data derived before timing
                await client.call_tool(tool, {"query": "warm up"})
        names = list(clients)
        for round_ in range(rounds):
            for tool in tools:
                for i, question in enumerate(questions[tool]):
                    order = names if (i + round_) % 2 == 0 else names[::-1]
                    for name in order:
                        started = time.perf_counter()
                        result = await clients[name].call_tool(tool, {"query": f"{question} r{round_}"})
                        times[(name, tool)].append((time.perf_counter() - started) * 1000)
                        assert not result.is_error, result.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, required=True, help="the other checkout (its repository root)")
    parser.add_argument("--project", type=Path, default=HERE / "corpora" / "orbit")
    parser.add_argument("--judged", type=Path, default=HERE / "judged" / "orbit.yaml")
    parser.add_argument("--rounds", type=int, default=4, help="times each question is asked (a word added)")
    args = parser.parse_args()
    checkouts = {"other": args.against.resolve(), "this": REPO}
    projects = {}
    for name in checkouts:
        projects[name] = Path(tempfile.mkdtemp(prefix=f"ktx-paired-{name}-")) / args.project.name
        shutil.copytree(args.project, projects[name], ignore=shutil.ignore_patterns(".ktx"))
        service = KtxIndex(projects[name])  # built by this checkout: same index, only serving differs
        service.rebuild()
        service.ensure_word_table()
        service.close()
    discover, wiki, _ = judged_queries(args.judged)
    times = anyio.run(paired, checkouts, projects, {"discover_data": discover, "wiki_search": wiki}, args.rounds)
    print(f"project: {args.project.name}  this: {REPO}  other: {checkouts['other']}")
    print(f"{'tool':<16} {'calls':>6} {'other p50':>10} {'this p50':>9} {'paired Δ median':>16}")
    for tool in (tool for tool in TOOLS if ("this", tool) in times):
        other, this = times[("other", tool)], times[("this", tool)]
        delta = statistics.median(b - a for a, b in zip(other, this, strict=True))
        print(
            f"{tool:<16} {len(this):>6} {statistics.median(other):>8.2f}ms"
            f" {statistics.median(this):>7.2f}ms {delta:>+14.2f}ms"
        )
    for path in projects.values():
        shutil.rmtree(path.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
