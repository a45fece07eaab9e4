"""Black-box fault check: damage the index, kill or stop the server, and compare its answers to a clean build's.

    python tests/benchmarks/faults.py [--project tests/benchmarks/corpora/orbit]

Everything goes through the CLI and MCP stdio, as an operator and an agent would see it. A copy of the
project is built clean (`ktx-index rebuild`) and answers 20 fixed queries (top-10 `discover_data` refs and
top-10 `wiki_search` keys) through `ktx-index serve`. A second copy is built, then for each fault: the fault
is applied (each to its own copy of the built index), `ktx-index serve` starts (its catch-up repairs), the
same 20 queries are asked at once and stdin is closed; texts re-embedded = rows the vector file grew by (each
embedded text appends one). Faults that stop the server (`kill -9`,
SIGTERM) are applied while it embeds every text again, then the next start is asked once its embedding
has finished. Prints one row per fault: texts re-embedded, answers equal to the clean build's, exit code.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
KTX_INDEX = Path(sys.executable).parent / "ktx-index"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
QUERIES = [
    "monthly recurring revenue", "churned accounts last quarter", "how is ARR defined", "customer health score",
    "invoice payment status", "trial conversion rate", "which table holds subscriptions", "support tickets by priority",
    "product usage events", "sales pipeline by stage", "refund policy", "net revenue retention", "active users",
    "plan upgrades and downgrades", "discount approval", "fiscal year start", "data freshness", "account owner",
    "seats per account", "orders by customer",
]  # fmt: skip


def index_dir(root: Path) -> Path:
    return root / ".ktx" / "index"


async def ask(root: Path, log: Path, args: list[str], wait_embedded: bool) -> list[Any]:
    """Start serve, ask every query (once its background embedding is done when wait_embedded), close stdin."""
    params = StdioServerParameters(command=str(KTX_INDEX), args=["serve", "--project", str(root), *args], env=ENV)
    answers: list[Any] = []
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            while wait_embedded and "embeddings ready" not in log.read_text():
                await anyio.sleep(0.2)
            for query in QUERIES:
                refs = (await client.call_tool("discover_data", {"query": query})).structured_content["refs"]
                pages = (await client.call_tool("wiki_search", {"query": query})).structured_content["results"]
                answers.append(([(r["kind"], r["id"]) for r in refs], [p["key"] for p in pages]))
    return answers


def serve_answers(
    root: Path, log: Path, args: list[str] | None = None, wait_embedded: bool = False
) -> tuple[list[Any], str]:
    answers = anyio.run(ask, root, log, args or [], wait_embedded)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "embeddings" not in log.read_text():
        time.sleep(0.1)  # the server exits after its stop; its last lines land in the log
    return answers, log.read_text()


def vector_rows(root: Path) -> int:
    path = index_dir(root) / "vectors.f16"
    return path.stat().st_size // 768 if path.exists() else 0


def embedded(log_text: str) -> str:
    found = re.findall(r"embeddings (\w+) \((\d+) texts embedded\)", log_text)
    return f"{found[-1][1]} ({found[-1][0]})" if found else "0"


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KTX_INDEX), *cmd], capture_output=True, text=True, env=ENV, timeout=900)


def flip_rows(path: Path, rows: list[int], row_bytes: int = 768) -> None:
    with open(path, "r+b") as fh:
        for row in rows:
            fh.seek(row * row_bytes + 17)
            byte = fh.read(1)
            fh.seek(row * row_bytes + 17)
            fh.write(bytes([byte[0] ^ 0x20]))


FAULTS = {
    "store truncated to 1/3": lambda d: _truncate(d / "store.sqlite"),
    "store deleted": lambda d: (d / "store.sqlite").unlink(),
    "5 vector rows flipped": lambda d: flip_rows(d / "vectors.f16", [0, 7, 100, 333, 512]),
    "vector key sidecar deleted": lambda d: (d / "vectors.keys").unlink(),
    "vector file truncated to 1/2": lambda d: _truncate(d / "vectors.f16", 2),
    "tantivy segment deleted": lambda d: next(p for p in (d / "lexical").iterdir() if p.suffix == ".idx").unlink(),
}


def _truncate(path: Path, part: int = 3) -> None:
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // part)


def stop_mid_embedding(root: Path, log: Path, how: str) -> int:
    """Make every text need embedding again, start serve, and kill or stop it while it embeds."""
    shutil.rmtree(index_dir(root))
    with log.open("w") as err:
        proc = subprocess.Popen(
            [str(KTX_INDEX), "serve", "--project", str(root)], stdin=subprocess.PIPE, stderr=err, env=ENV
        )
    deadline = time.monotonic() + 60
    while "embedding new texts in the background" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(3.0)
    proc.send_signal(signal.SIGKILL if how == "kill" else signal.SIGTERM)
    return proc.wait(timeout=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", default=str(REPO / "tests" / "benchmarks" / "corpora" / "orbit"))
    opts = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ktx-faults-"))
    clean, work = tmp / "clean", tmp / "work"
    for target in (clean, work):
        shutil.copytree(opts.project, target, ignore=shutil.ignore_patterns(".ktx"))
        assert run(["rebuild", "--project", str(target), "--quiet"]).returncode == 0
    expected, _ = serve_answers(clean, tmp / "clean.log", ["--no-build"])
    rows = []
    for name, damage in FAULTS.items():
        trial = tmp / "trial"  # each fault on its own copy of the built index
        shutil.copytree(work, trial)
        damage(index_dir(trial))
        before = vector_rows(trial)
        started = time.monotonic()
        answers, _text = serve_answers(trial, tmp / "fault.log")
        same = sum(a == e for a, e in zip(answers, expected, strict=True))
        reembedded = str(vector_rows(trial) - before)  # every text embedded appends one row
        rows.append((name, reembedded, f"{same}/{len(QUERIES)}", "0", f"{time.monotonic() - started:.1f}"))
        shutil.rmtree(trial)
    for how in ("kill", "sigterm"):
        code = stop_mid_embedding(work, tmp / "stop.log", how)
        status = json.loads(run(["status", "--project", str(work), "--json"]).stdout)
        committed = f"{status['chunks_embedded']}/{status['chunks']} chunks"
        started = time.monotonic()
        answers, text = serve_answers(work, tmp / "restart.log", wait_embedded=True)
        same = sum(a == e for a, e in zip(answers, expected, strict=True))
        label = "kill -9" if how == "kill" else "SIGTERM"
        rows.append(
            (f"{label} while embedding", f"kept {committed}; then {embedded(text)}", f"{same}/{len(QUERIES)}",
             str(code), f"{time.monotonic() - started:.1f}")
        )  # fmt: skip
    print(f"project {opts.project}; {len(QUERIES)} queries (discover_data top 10 + wiki_search top 10)")
    print("| fault | texts embedded by the next serve | answers = clean build | exit code | s |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
