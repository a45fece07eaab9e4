"""Edit-to-searchable at scale: one table file saved with a new column under ``ktx-index serve --watch``.

    python tests/benchmarks/scale_watch.py --project /tmp/ktx-scale/100000 [--edits 20] [--json OUT]

(also run by scale.py for each size, after its full build, unless ``--skip-watch``). The project
must already be indexed. Starts ``ktx-index serve --project P --watch`` through the MCP SDK's stdio
client, waits for the first answer and for the watcher's start-up work (catch-up commit, parsing
shared scan files ahead), then ``--edits`` times: an atomic save (temp file + rename) of one table
file with a column added under a fresh nonsense name, and ``discover_data`` for that name every
``--poll-ms`` until the column is among the refs. Latency = rename to that answer. Edits go to
different table files spread over the project, a second apart (a person's pace; the watcher embeds
the edit's texts meanwhile). Every file is put back at the end.

Target (issue 13): p95 ≤ 500 ms at 100,000 columns, ≤ 3 s at 1,000,000.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio

CLI = str(Path(sys.executable).parent / "ktx-index")


def nonsense(rng: random.Random) -> str:
    """A fresh identifier no project has (letters only: one token for the analyzer)."""
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiou") for _ in range(5))


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")  # a dotfile: the watcher ignores it, then sees the rename
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def with_column(text: str, name: str) -> str:
    table = json.loads(text)
    table.setdefault("columns", []).append(
        {"name": name, "nativeType": "text", "normalizedType": "text", "dimensionType": "string",
         "nullable": True, "primaryKey": False, "comment": "Added by the scale benchmark's edit loop."}
    )  # fmt: skip
    return json.dumps(table, indent=2, ensure_ascii=False) + "\n"


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def rss_mb(pid: int | None) -> float:
    if pid is None:
        return float("nan")
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def server_pid(project: Path, watching: bool = True) -> int | None:
    """The PID of the `ktx-index serve` process on this project (with `--watch` unless ``watching`` is False)."""
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        watch_ok = not watching or b"--watch" in cmdline
        if b"serve" in cmdline and watch_ok and str(project).encode() in cmdline:
            return pid
    return None


def watcher_state(project: Path) -> dict[str, Any]:
    try:
        return json.loads((project / ".ktx/index/watcher.json").read_text())
    except (OSError, ValueError):
        return {}


async def watch_edits(project: Path, edits: int = 20, poll_ms: int = 20, pause_s: float = 1.0,
                      timeout_s: float = 60.0, seed: int = 13) -> dict[str, Any]:  # fmt: skip
    from mcp import Client, StdioServerParameters

    files = sorted(project.glob("raw-sources/*/live-database/*/tables/*.json"))
    rng = random.Random(seed)
    picked = [files[(i * 7919 + len(files) // 3) % len(files)] for i in range(edits)]
    originals = {path: path.read_text(encoding="utf-8") for path in picked}
    params = StdioServerParameters(
        command=CLI, args=["serve", "--project", str(project), "--watch"], env=dict(os.environ)
    )
    out: dict[str, Any] = {"edits": [], "missed": 0}
    started = time.perf_counter()
    try:
        async with Client(params) as client:
            result = await client.call_tool("discover_data", {"query": "warm up query"})
            assert not result.is_error, result.content
            out["start_to_first_answer_s"] = time.perf_counter() - started
            pid = server_pid(project)
            out["rss_start_mb"] = rss_mb(pid)
            await anyio.sleep(pause_s)
            for path in picked:
                name = nonsense(rng)
                atomic_write(path, with_column(path.read_text(encoding="utf-8"), name))
                saved, polls = time.perf_counter(), 0
                while True:
                    polls += 1
                    result = await client.call_tool("discover_data", {"query": name, "limit": 5})
                    assert not result.is_error, result.content
                    refs = result.structured_content["refs"]
                    elapsed = time.perf_counter() - saved
                    if any(r["kind"] == "column" and r["id"].endswith(name) for r in refs):
                        out["edits"].append({"ms": elapsed * 1000, "polls": polls, "file": path.name})
                        break
                    if elapsed > timeout_s:
                        out["missed"] += 1
                        print(f"  edit of {path.name} ({name}) not found after {timeout_s:.0f} s", file=sys.stderr)
                        break
                    await anyio.sleep(poll_ms / 1000)
                await anyio.sleep(pause_s)
            out["rss_end_mb"] = rss_mb(pid)
            out["watcher"] = watcher_state(project).get("last_report")
    finally:
        for path, text in originals.items():
            atomic_write(path, text)
    return out


def summary(out: dict[str, Any]) -> dict[str, float]:
    times = [e["ms"] for e in out["edits"]]
    return {
        "edits": len(times),
        "missed": out["missed"],
        "p50": statistics.median(times) if times else float("nan"),
        "p95": pct(times, 0.95),
        "max": max(times, default=float("nan")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--poll-ms", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not (args.project / ".ktx/index/store.sqlite").is_file():
        parser.error(f"{args.project} has no index yet: run `ktx-index rebuild --project {args.project}` first")
    out = anyio.run(lambda: watch_edits(args.project.resolve(), args.edits, args.poll_ms))
    s = summary(out)
    print(f"{s['edits']} edits, {s['missed']} never found; edit → searchable p50 {s['p50']:.0f} ms, "
          f"p95 {s['p95']:.0f} ms, max {s['max']:.0f} ms; server RSS {out['rss_end_mb']:.0f} MB")  # fmt: skip
    print("  each (ms): " + ", ".join(f"{e['ms']:.0f}" for e in out["edits"]))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
