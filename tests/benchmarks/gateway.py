"""What the gateway (``serve --upstream``) costs and how fast it recovers, against calling the upstream directly.

    python tests/benchmarks/gateway.py [--calls 200] [--rounds 5] [--recoveries 3]

Upstream is tests/mcp/fake_upstream.py (the KTX stand-in the tests use), its own process. In one run, rounds
alternate between an SDK client talking to it directly over stdio (as an agent configured with ``ktx mcp
stdio`` does) and the same client talking to ``ktx-index serve --upstream`` over stdio (which talks to its own
copy of the upstream): the added latency of a forwarded call is the difference of the p50s. The same again for
``--upstream URL``: the client calling the fake's streamable-HTTP server itself, against calling the gateway over
stdio, which calls that server. Both clients are handshake-era (``mode="legacy"``), like the agents' SDKs today.
Beside the latencies, the CPU time each path's server process spent per call (Linux): the upstream's when called
directly, the gateway's own when forwarding; on a loaded machine it moves much less than the p50s. ``serve`` logs at its default level (a JSON line
per call) to a file. Also timed: one of ktx-index's own tools with and without ``--upstream`` (nothing should
change), and recovery: after the upstream is killed, how long the first call takes to answer in-band, and once
it can start again, how long until a call is forwarded again (over stdio the gateway restarts the command; over
HTTP the upstream is restarted by this script on the same port).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from ktx_index.index.layout import IndexLayout

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FAKE = REPO / "tests" / "mcp" / "fake_upstream.py"
KTX_INDEX = Path(sys.executable).parent / "ktx-index"
PROJECT = {
    "ktx.yaml": "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n",
    "wiki/global/refund-policy.md": "---\nsummary: When a refund is issued\n---\n# Refunds\nRefunds within 30 days.\n",
}
NOTES = ("sql_dialect_notes", {"connectionId": "warehouse"})
QUERY = ("sl_query", {"measures": ["orders.count"]})


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def fake_command(tmp: Path, tag: str) -> list[str]:
    return [sys.executable, str(FAKE), "--pid-file", str(tmp / f"{tag}.pid"), "--down-file", str(tmp / f"{tag}.down")]


def serve(project: Path, tmp: Path, *extra: str) -> StdioServerParameters:
    args = ["serve", "--project", str(project), "--no-build", "--log-file", str(tmp / "serve.log"), *extra]
    return StdioServerParameters(command=str(KTX_INDEX), args=args, env=env(), cwd=str(tmp))


async def timed_calls(client: Client, call: tuple[str, dict[str, Any]], n: int, progress: bool) -> list[float]:
    async def on_progress(_p: float, _t: float | None, _m: str | None) -> None:
        return None

    out = []
    for _ in range(n):
        started = time.perf_counter()
        result = await client.call_tool(*call, progress_callback=on_progress if progress else None)
        out.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used (Linux /proc; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Timed:
    """Latencies of one path, and the CPU time the process named spent on them: on a loaded machine the p50
    moves with the scheduler, CPU time per call much less."""

    def __init__(self) -> None:
        self.ms: list[float] = []
        self.cpu = 0.0

    async def add(self, client: Client, pid: int, call: tuple[str, dict[str, Any]], n: int, progress: bool) -> None:
        before = cpu_seconds(pid)
        self.ms += await timed_calls(client, call, n, progress)
        self.cpu += cpu_seconds(pid) - before

    def cpu_ms(self) -> float:
        return self.cpu * 1000 / max(1, len(self.ms))


async def latency(project: Path, tmp: Path, calls: int, rounds: int) -> list[tuple[str, Timed, Timed]]:
    """Per case, the direct path (CPU: the upstream's) and the gateway path (CPU: the gateway's own process)."""
    direct_params = StdioServerParameters(command=sys.executable, args=fake_command(tmp, "direct")[1:], env=env())
    gateway_params = serve(project, tmp, "--upstream", " ".join(fake_command(tmp, "gw")))
    cases = [("sql_dialect_notes", NOTES, False), ("sl_query, 4 progress notifications", QUERY, True)]
    direct = {name: Timed() for name, _, _ in cases}
    gateway = {name: Timed() for name, _, _ in cases}
    async with Client(direct_params, mode="legacy") as d, Client(gateway_params, mode="legacy") as g:
        for client in (d, g):  # warm both paths
            for _, call, progress in cases:
                await timed_calls(client, call, 20, progress)
        upstream_pid = int((tmp / "direct.pid").read_text())
        gateway_pid = gateway_pid_of(project)
        for _ in range(rounds):
            for name, call, progress in cases:
                await direct[name].add(d, upstream_pid, call, calls, progress)
                await gateway[name].add(g, gateway_pid, call, calls, progress)
    return [(name, direct[name], gateway[name]) for name, _, _ in cases]


def gateway_pid_of(project: Path) -> int:
    """The PID of the one gateway fronting ``project`` (its upstream file names it)."""
    (path,) = IndexLayout(project).upstreams()
    return json.loads(path.read_text())["pid"]


async def latency_http(project: Path, tmp: Path, calls: int, rounds: int) -> tuple[str, Timed, Timed]:
    """``--upstream URL``: the agent calling upstream's HTTP server itself, against calling the gateway over
    stdio, which calls that same server over HTTP."""
    port = free_port()
    proc = start_http_fake(port, tmp)
    url = f"http://127.0.0.1:{port}/mcp"
    direct, gateway = Timed(), Timed()
    try:
        async with Client(url, mode="legacy") as d, Client(serve(project, tmp, "--upstream", url), mode="legacy") as g:
            for client in (d, g):
                await timed_calls(client, NOTES, 20, False)
            gateway_pid = gateway_pid_of(project)
            for _ in range(rounds):
                await direct.add(d, proc.pid, NOTES, calls, False)
                await gateway.add(g, gateway_pid, NOTES, calls, False)
    finally:
        proc.kill()
        proc.wait()
    return "sql_dialect_notes, upstream over HTTP", direct, gateway


async def own_tool(project: Path, tmp: Path, calls: int, rounds: int) -> tuple[list[float], list[float]]:
    """wiki_read through serve without and with --upstream: our tools must not pay for the gateway."""
    plain, fronting = [], []
    call = ("wiki_read", {"key": "refund-policy"})
    async with (
        Client(serve(project, tmp), mode="legacy") as p,
        Client(serve(project, tmp, "--upstream", " ".join(fake_command(tmp, "own"))), mode="legacy") as f,
    ):
        await timed_calls(p, call, 20, False)
        await timed_calls(f, call, 20, False)
        for _ in range(rounds):
            plain += await timed_calls(p, call, calls, False)
            fronting += await timed_calls(f, call, calls, False)
    return plain, fronting


async def first_answer_and_back(client: Client, kill: Any, bring_back: Any) -> tuple[float, float]:
    """ms until the first call after the kill answers (in-band), then ms from bring_back() returning until a
    call is forwarded again."""
    kill()
    started = time.perf_counter()
    down = await client.call_tool(*NOTES)
    first = (time.perf_counter() - started) * 1000
    assert down.is_error and "is unavailable" in down.content[0].text, down.content
    await bring_back()
    back_from = time.perf_counter()
    while (await client.call_tool(*NOTES)).is_error:
        await anyio.sleep(0.02)
    return first, (time.perf_counter() - back_from) * 1000


def kill_pid_file(path: Path) -> None:
    os.kill(int(path.read_text()), signal.SIGKILL)


async def recovery_stdio(project: Path, tmp: Path, times: int) -> list[tuple[float, float]]:
    command = fake_command(tmp, "rec")
    down = tmp / "rec.down"
    out = []
    async with Client(serve(project, tmp, "--upstream", " ".join(command)), mode="legacy") as client:
        for _ in range(times):

            def kill() -> None:
                down.touch()
                kill_pid_file(tmp / "rec.pid")

            async def bring_back() -> None:
                down.unlink()

            await anyio.sleep(0.5)
            out.append(await first_answer_and_back(client, kill, bring_back))
    return out


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_http_fake(port: int, tmp: Path) -> subprocess.Popen:
    args = [sys.executable, str(FAKE), "--transport", "http", "--port", str(port), "--pid-file", str(tmp / "h.pid")]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.02)
    raise RuntimeError(f"the HTTP fake upstream did not listen on {port}")


async def recovery_http(project: Path, tmp: Path, times: int) -> list[tuple[float, float]]:
    port = free_port()
    procs = [start_http_fake(port, tmp)]
    out = []
    try:
        async with Client(serve(project, tmp, "--upstream", f"http://127.0.0.1:{port}/mcp"), mode="legacy") as client:
            for _ in range(times):

                def kill() -> None:
                    procs[-1].kill()
                    procs[-1].wait()

                async def bring_back() -> None:
                    procs.append(await anyio.to_thread.run_sync(start_http_fake, port, tmp))

                await anyio.sleep(0.5)
                out.append(await first_answer_and_back(client, kill, bring_back))
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    return out


async def upstream_start(tmp: Path, times: int) -> float:
    """ms from spawning the fake upstream to its tools listed: the part of a recovery that is the upstream's."""
    spent = []
    for _ in range(times):
        started = time.perf_counter()
        params = StdioServerParameters(command=sys.executable, args=fake_command(tmp, "start")[1:], env=env())
        async with Client(params, mode="legacy") as client:
            await client.list_tools()
            spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(spent)


def write_project(root: Path) -> Path:
    for rel, text in PROJECT.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    sys.path.insert(0, str(REPO))
    from ktx_index.service import KtxIndex

    service = KtxIndex(root)
    try:
        service.rebuild()
    finally:
        service.close()
    return root


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        project = write_project(tmp / "project")
        rows = await latency(project, tmp, args.calls, args.rounds)
        rows.append(await latency_http(project, tmp, args.calls, args.rounds))
        plain, fronting = await own_tool(project, tmp, args.calls, args.rounds)
        stdio = await recovery_stdio(project, tmp, args.recoveries)
        http = await recovery_http(project, tmp, args.recoveries)
        start = await upstream_start(tmp, args.recoveries)
    print(f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, {args.rounds}×{args.calls} calls per path")
    print()
    print(
        "| call | direct p50 ms | through the gateway p50 ms | added p50 ms | direct p95 | gateway p95 | "
        "upstream CPU ms/call | gateway CPU ms/call |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, direct, gateway in rows:
        added = statistics.median(gateway.ms) - statistics.median(direct.ms)
        print(
            f"| {name} | {statistics.median(direct.ms):.2f} | {statistics.median(gateway.ms):.2f} | **{added:.2f}** | "
            f"{pct(direct.ms, 0.95):.2f} | {pct(gateway.ms, 0.95):.2f} | {direct.cpu_ms():.2f} | "
            f"{gateway.cpu_ms():.2f} |"
        )
    print(
        f"| ktx-index's wiki_read: serve / serve --upstream | {statistics.median(plain):.2f} | "
        f"{statistics.median(fronting):.2f} | {statistics.median(fronting) - statistics.median(plain):.2f} | "
        f"{pct(plain, 0.95):.2f} | {pct(fronting, 0.95):.2f} | – | – |"
    )
    print()
    print("| upstream killed | first call answers in-band, ms | forwarding again after it can start, ms |")
    print("|---|---|---|")
    for name, figures in (("stdio command (the gateway restarts it)", stdio), ("HTTP server (restarted)", http)):
        firsts = ", ".join(f"{first:.1f}" for first, _ in figures)
        backs = ", ".join(f"{back:.0f}" for _, back in figures)
        print(f"| {name} | {firsts} | {backs} |")
    print()
    print(f"The fake upstream's own start (spawn to tools listed, over stdio): {start:.0f} ms (median).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per path and round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--recoveries", type=int, default=3, help="kills per upstream transport")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
