"""How build, index and query costs grow with the number of warehouse columns.

    python tests/benchmarks/scale.py --columns 10000 100000 [--include-1m] \
        [--corpus DIR/scale-stress] [--skip-mcp] [--reuse] [--cprofile DIR] [--markdown FILE]

For each size a synthetic project is generated with synth.py (cached under
/tmp/ktx-scale/<N>; a corpus is copied to /tmp/ktx-scale/<name>), then:

- full rebuild with embeddings from an empty index, in a subprocess (``ktx-index rebuild
  --json``), so its wall time, CPU time and peak RSS (``wait4`` rusage) are its own; the
  report splits it into parse / lexical / embed (embed includes loading the model);
- no-op rebuild and a one-table-file change (its comment edited), both in a subprocess
  (cold CLI: the model is loaded to embed the changed texts), and the same change undone
  in-process with the model already loaded (what a watcher or ``serve --watch`` pays);
- index size on disk (.ktx/index: store, lexical, vectors);
- in-process, warm: discover_data p50/p95/p99 over >= 100 distinct queries (exact column and
  table names, 2-6 word business phrases; each query is embedded once, as a new question would
  be) and dictionary_search p50 over profiled values (some with case changes and typos);
- through MCP stdio (``ktx-index serve --project P --no-build``, SDK client): start to first
  answer, discover_data and dictionary_search percentiles, server RSS and peak (VmRSS/VmHWM);
- edit → searchable under ``ktx-index serve --watch`` (scale_watch.py): ``--edits`` atomic saves
  of one table file each adding a column, polled with discover_data every 20 ms until it is found.

Prints one table (rows = metrics, columns = sizes) with the growth between sizes as a
power of N (cost ∝ N^k) and, when 1M is not measured, a 1M extrapolation along that
power law from the two largest synthetic sizes. Results are kept in
/tmp/ktx-scale/results/<label>.json (``--reuse`` reads them instead of measuring again).
Other processes using the CPU inflate wall times: the load average and the CPU seconds of
each rebuild are recorded to judge that.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import math
import os
import platform
import pstats
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from latency import pct, rss_kb  # noqa: E402
from scale_watch import server_pid, watch_edits  # noqa: E402
from scale_watch import summary as watch_summary  # noqa: E402
from synth import SYNTH_VERSION, generate  # noqa: E402

from ktx_index.service import KtxIndex  # noqa: E402

REPO = HERE.parents[1]
WORK = Path("/tmp/ktx-scale")
CLI = str(Path(sys.executable).parent / "ktx-index")
SEED = 7
PHRASE_TAILS = ["by month", "per region", "trend", "last quarter", "by channel", "for enterprise accounts", "total"]
BUSINESS = [
    "net revenue by channel", "customer churn rate last quarter", "late shipments per carrier",
    "refund rate by reason", "average order value by country", "annual recurring revenue by segment",
    "open tickets by priority", "headcount by department", "gross margin by product category",
    "failed payments by payment method", "days sales outstanding", "trial to paid conversion",
    "inventory turnover by warehouse", "fraud chargebacks this month", "customer lifetime value",
]  # fmt: skip


# --------------------------------------------------------------------------- projects


def ensure_synthetic(columns: int, seed: int) -> Path:
    project = WORK / str(columns)
    marker = project / ".synth.json"
    if marker.is_file():
        meta = json.loads(marker.read_text())
        if meta.get("synthVersion") == SYNTH_VERSION and meta.get("seed") == seed and meta.get("columns") == columns:
            return project
    started = time.perf_counter()
    counts = generate(columns, project, seed)
    print(f"  generated {project}: {counts['tables']:,} tables, {counts['files']:,} files, "
          f"{counts['bytes'] / 1e6:.0f} MB in {time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
    return project


def ensure_corpus(corpus: Path) -> Path:
    project = WORK / corpus.name
    if not (project / "ktx.yaml").is_file():
        shutil.copytree(corpus, project, ignore=shutil.ignore_patterns(".ktx"))
    return project


def index_size(project: Path) -> dict[str, float]:
    base = project / ".ktx" / "index"

    def size(paths: list[Path]) -> float:
        return sum(f.stat().st_size for p in paths for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file())

    store = [p for p in base.glob("store.sqlite*")]
    return {
        "total": size([base]) / 1e6,
        "store": size(store) / 1e6,
        "lexical": size([base / "lexical"]) / 1e6 if (base / "lexical").exists() else 0.0,
        "vectors": size([base / "vectors.f16"]) / 1e6 if (base / "vectors.f16").exists() else 0.0,
    }


# --------------------------------------------------------------------------- stand-in vectors


class WordMeanEmbedder:
    """Stand-in vectors for measuring cost at sizes the real model cannot embed in time.

    A text's vector is the normalised mean of the real MiniLM vectors of its words (each
    distinct word embedded once), under the real model's fingerprint and dimension: the
    index has the real shape and size, the server embeds queries with the real model and
    gets realistic cosine spreads, and no rebuild re-embeds anything. Ranking quality is
    not what these vectors are for."""

    def __init__(self) -> None:
        from ktx_index.embedding.embedder import MiniLMEmbedder

        self.real = MiniLMEmbedder()
        self.fingerprint = self.real.fingerprint
        self.dim = self.real.dim
        self.words: dict[str, Any] = {}
        self.real_texts = 0
        self.real_s = 0.0

    def encode(self, texts: list[str]) -> Any:
        import numpy as np

        tokens = [re.findall(r"[a-z]{2,}", t.lower())[:64] for t in texts]
        new = sorted({w for ws in tokens for w in ws} - self.words.keys())
        if new:
            started = time.perf_counter()
            self.words.update(zip(new, self.real.encode(new), strict=True))
            self.real_s += time.perf_counter() - started
            self.real_texts += len(new)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, ws in enumerate(tokens):
            if ws:
                vec = np.sum([self.words[w] for w in ws], axis=0)
                out[i] = vec / (np.linalg.norm(vec) or 1.0)
        return out


def stub_build(project: Path) -> None:
    """Child entry point: a full rebuild with stand-in vectors, report as JSON on stdout."""
    service = KtxIndex(project, embedder=WordMeanEmbedder())
    report = service.rebuild()
    data = report.model_dump(mode="json")
    data["stub_words"] = service.embedder.real_texts  # type: ignore[union-attr]
    data["stub_words_s"] = service.embedder.real_s  # type: ignore[union-attr]
    service.close()
    print(json.dumps(data))


def real_embed_rate(project: Path, sample_size: int = 512) -> float:
    """Seconds per text of the real model on a sample of this index's own texts, measured now."""
    from ktx_index.embedding.embedder import MiniLMEmbedder
    from ktx_index.index.store import DocStore
    from ktx_index.index.texts import embedding_texts

    store = DocStore(project / ".ktx/index/store.sqlite", readonly=True)
    docs = list(store.docs.iter(["wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column"]))
    store.close()
    rnd = random.Random(SEED)
    texts = [t for doc in rnd.sample(docs, min(sample_size * 2, len(docs))) for t in embedding_texts(doc)]
    texts = texts[:sample_size]
    model = MiniLMEmbedder()
    model.encode(["load"])
    started = time.perf_counter()
    for start in range(0, len(texts), 256):  # the builder's batch size
        model.encode(texts[start : start + 256])
    return (time.perf_counter() - started) / max(1, len(texts))


# --------------------------------------------------------------------------- CPU accounting


def busy_cpu_s() -> float:
    """CPU seconds all processes have used (from /proc/stat), to see what others took meanwhile."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class CpuWindow:
    """Average cores busy (all processes) over a block; ``others(own_cpu_s)`` subtracts ours."""

    def __enter__(self) -> CpuWindow:
        self.busy0, self.t0 = busy_cpu_s(), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.busy = busy_cpu_s() - self.busy0
        self.wall = time.perf_counter() - self.t0

    def cores(self) -> float:
        return self.busy / self.wall if self.wall else 0.0

    def others(self, own_cpu_s: float) -> float:
        return max(0.0, self.busy - own_cpu_s) / self.wall if self.wall else 0.0


def proc_cpu_s(pid: int) -> float:
    parts = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- rebuild in a child


def cli_rebuild(project: Path, force: bool = False, stub: bool = False) -> dict[str, Any]:
    """``ktx-index rebuild --json`` in a child: its report, wall time, CPU time and peak RSS."""
    args = [CLI, "rebuild", "--project", str(project), "--json", "--quiet"] + (["--force"] if force else [])
    if stub:
        args = [sys.executable, __file__, "--stub-build", str(project)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        load = os.getloadavg()[0]
        started = time.perf_counter()
        with CpuWindow() as window:
            proc = subprocess.Popen(args, stdout=out, stderr=err)
            _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({proc.returncode}): {err.read()[-2000:]}")
        report = json.loads(out.read())
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "load_before": load,
        "other_cores": window.others(usage.ru_utime + usage.ru_stime),
        "report": {k: v for k, v in report.items() if k not in ("diagnostics", "stale")},
        "diagnostics": len(report.get("diagnostics", [])),
        "diagnostic_sample": [f"{d['path']}: {d['message']}" for d in report.get("diagnostics", [])[:3]],
    }


def pick_table_file(project: Path) -> Path:
    files = sorted(project.glob("raw-sources/*/live-database/*/tables/*.json"))
    return files[len(files) // 2]


def edit_comment(path: Path, comment: str) -> str:
    """Change one table file's comment; returns the original text (to put back byte for byte)."""
    original = path.read_text()
    table = json.loads(original)
    table["comment"] = comment
    path.write_text(json.dumps(table, indent=2, ensure_ascii=False) + "\n")
    return original


# --------------------------------------------------------------------------- queries


def sample(rnd: random.Random, items: list[str], k: int) -> list[str]:
    items = sorted(set(i for i in items if i))
    return rnd.sample(items, min(k, len(items)))


def make_queries(project: Path, count: int, seed: int) -> tuple[list[str], list[str]]:
    """Distinct discover queries and dictionary values drawn from the built index's own documents."""
    rnd = random.Random(f"{seed}:queries")
    from ktx_index.index.store import DocStore

    store = DocStore(project / ".ktx/index/store.sqlite", readonly=True)

    def names(kind: str, field: str = "name") -> list[str]:
        return [fields.get(field) for _uid, _conn, fields in store.docs.fields(kind)]

    columns = names("column")
    tables = names("table")
    comments = [c for c in names("column", "comment") if c]
    values = names("dictionary_value", "id")
    wiki = [s for s in names("wiki", "summary") if s]
    store.close()
    out: list[str] = []
    n_exact = count // 4
    out += sample(rnd, columns, n_exact)  # exact column names
    out += sample(rnd, tables, count // 6)  # exact table names
    for name in sample(rnd, columns, count // 4):  # 2-6 word phrases from names
        words = name.lower().replace("_", " ").split()[:4]
        tail = rnd.choice(PHRASE_TAILS).split() if rnd.random() < 0.6 else []
        out.append(" ".join((words + tail)[:6]))
    for text in sample(rnd, comments, count // 6):  # 2-6 words of a column comment
        words = re.findall(r"[A-Za-z][A-Za-z0-9_\-]*", text)
        k = rnd.randint(2, 6)
        start = rnd.randint(0, max(0, len(words) - k))
        out.append(" ".join(words[start : start + k]).lower())
    out += [" ".join(s.split()[1:7]).lower() for s in sample(rnd, wiki, 5)]
    out += BUSINESS
    queries = list(dict.fromkeys(q for q in out if q.strip()))
    for _ in range(count * 20):  # repetitive schemas (scale-stress) give few distinct names: pair them up
        if len(queries) >= count or not columns or not tables:
            break
        phrase = f"{rnd.choice(columns)} {rnd.choice(tables)}".lower().replace("_", " ")
        if phrase not in queries:
            queries.append(" ".join(phrase.split()[:6]))
    rnd.shuffle(queries)
    dict_values = sample(rnd, values, 30)
    variants = []
    for v in dict_values[:10]:
        variants.append(v.upper() if v.islower() else v.lower())
        if len(v) > 4:
            i = rnd.randint(1, len(v) - 3)
            variants.append(v[:i] + v[i + 1] + v[i] + v[i + 2 :])  # swap two letters
    return queries, list(dict.fromkeys(dict_values + variants))


# --------------------------------------------------------------------------- in-process


def timed_ms(fn, *args, **kwargs) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return (time.perf_counter() - started) * 1000, result


def in_process(project: Path, queries: list[str], values: list[str], table_file: Path, original: str,
               profile_dir: Path | None, label: str) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    service = KtxIndex(project)
    if service.embedder is not None:
        out["model_load_s"] = timed_ms(service.embedder.encode, ["load the model before timing"])[0] / 1000
    # the one-file change made by the CLI step is undone here, with the model loaded (watcher-like)
    table_file.write_text(original)
    ms, report = timed_ms(service.rebuild)
    out["incremental_warm"] = {"ms": ms, "updated": report.updated, "embedded": report.embedded}
    out["engine_open_s"] = timed_ms(service.refreshed_engine)[0] / 1000
    out["first_query_ms"] = timed_ms(service.discover_data, "warm up query")[0]
    times: list[float] = []
    empty = 0
    profiler = cProfile.Profile() if profile_dir else None
    own0 = proc_cpu_s(os.getpid())
    window = CpuWindow().__enter__()
    for q in queries:
        if profiler:
            profiler.enable()
        ms, result = timed_ms(service.discover_data, q)
        if profiler:
            profiler.disable()
        times.append(ms)
        empty += not result.refs
    window.__exit__()
    out["discover"] = times
    out["discover_empty"] = empty
    out["discover_other_cores"] = window.others(proc_cpu_s(os.getpid()) - own0)
    # the same queries again: their vectors are cached, so this is the ranking alone
    out["discover_ranking"] = [timed_ms(service.discover_data, q)[0] for q in queries]
    engine = service.refreshed_engine()
    out["query_embedding"] = [timed_ms(engine.query_vector, f"{q} (fresh)")[0] for q in queries[:40]]
    out["dictionary_first_ms"] = timed_ms(service.dictionary_search, [values[0] if values else "x"])[0]
    dict_times = []
    for v in values:
        if profiler:
            profiler.enable()
        ms, _ = timed_ms(service.dictionary_search, [v])
        if profiler:
            profiler.disable()
        dict_times.append(ms)
    out["dictionary"] = dict_times
    out["process_rss_mb"] = rss_kb(os.getpid())[0] / 1024
    if profiler and profile_dir:
        profile_dir.mkdir(parents=True, exist_ok=True)
        path = profile_dir / f"{label}-queries.pstats"
        profiler.dump_stats(path)
        print(f"  cProfile of the query loop: {path}")
        pstats.Stats(str(path)).sort_stats("cumulative").print_stats(18)
    service.close()
    return out


# --------------------------------------------------------------------------- MCP


async def through_mcp(project: Path, queries: list[str], values: list[str]) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=CLI, args=["serve", "--project", str(project), "--no-build"], env=dict(os.environ)
    )
    out: dict[str, Any] = {}
    started = time.perf_counter()
    async with Client(params) as client:
        result = await client.call_tool("discover_data", {"query": "warm up query"})
        assert not result.is_error, result.content
        out["start_to_first_answer_s"] = time.perf_counter() - started
        pid = server_pid(project, watching=False)
        if pid is not None:
            out["rss_after_start_mb"] = rss_kb(pid)[0] / 1024
        for tool, inputs in (
            ("discover_data", [{"query": q} for q in queries]),
            ("dictionary_search", [{"values": [v]} for v in values]),
        ):
            times = []
            window = CpuWindow().__enter__()
            server_cpu0 = proc_cpu_s(pid) if pid else 0.0
            own0 = proc_cpu_s(os.getpid())
            for arguments in inputs:
                t0 = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                times.append((time.perf_counter() - t0) * 1000)
                assert not result.is_error, result.content
            window.__exit__()
            out[tool] = times
            own = proc_cpu_s(os.getpid()) - own0 + ((proc_cpu_s(pid) - server_cpu0) if pid else 0.0)
            out[f"{tool}_other_cores"] = window.others(own)
        if pid is not None:
            rss, hwm = rss_kb(pid)
            out["server_rss_mb"], out["server_peak_mb"] = rss / 1024, hwm / 1024
    return out


# --------------------------------------------------------------------------- one size


def measure(label: str, project: Path, columns: int, stub: bool, args: argparse.Namespace) -> dict[str, Any]:
    print(f"[{label}] {project}", flush=True)
    result: dict[str, Any] = {"label": label, "columns": columns, "project": str(project)}
    result["synthetic"] = project.parent == WORK and project.name.isdigit()
    result["stub"] = stub
    shutil.rmtree(project / ".ktx", ignore_errors=True)
    result["full"] = cli_rebuild(project, stub=stub)
    r = result["full"]["report"]
    if stub:
        rate = real_embed_rate(project)
        result["full"]["stub"] = {"real_s_per_text": rate, "embed_estimate_s": rate * r["embedded"]}
        print(f"  stand-in vectors; the real model embeds {1 / rate:.0f} texts/s now, so embedding "
              f"{r['embedded']:,} texts would take ~{rate * r['embedded']:.0f} s", flush=True)  # fmt: skip
    print(f"  full rebuild {result['full']['wall_s']:.1f} s (parse {r['parse_ms'] / 1000:.1f} / lexical "
          f"{r['lexical_ms'] / 1000:.1f} / embed {r['embed_ms'] / 1000:.1f}), {r['added']:,} docs, "
          f"{r['embedded']:,} embedded, peak RSS {result['full']['peak_rss_mb']:.0f} MB", flush=True)  # fmt: skip
    result["noop"] = cli_rebuild(project)
    table_file = pick_table_file(project)
    original = edit_comment(table_file, "Edited by the scale benchmark: one changed table comment.")
    result["incremental"] = cli_rebuild(project)
    result["incremental"]["file"] = str(table_file.relative_to(project))
    result["size_mb"] = index_size(project)
    db = sqlite3.connect(f"file:{project / '.ktx/index/store.sqlite'}?mode=ro", uri=True)
    result["doc_counts"] = dict(db.execute("SELECT kind, COUNT(*) FROM docs GROUP BY kind").fetchall())
    db.close()
    queries, values = make_queries(project, args.queries, SEED)
    result["queries"], result["values"] = len(queries), len(values)
    print(f"  {len(queries)} distinct queries, {len(values)} dictionary values; in-process ...", flush=True)
    result["inproc"] = in_process(project, queries, values, table_file, original, args.cprofile, label)
    if not args.skip_mcp:
        print("  through MCP stdio ...", flush=True)
        result["mcp"] = anyio.run(through_mcp, project, queries, values)
    if not args.skip_watch:
        print(f"  {args.edits} table edits under serve --watch ...", flush=True)
        result["watch"] = anyio.run(watch_edits, project, args.edits)
        w = watch_summary(result["watch"])
        print(f"  edit → searchable p50 {w['p50']:.0f} ms, p95 {w['p95']:.0f} ms, max {w['max']:.0f} ms", flush=True)
    return result


# --------------------------------------------------------------------------- table


def p(values: list[float], q: float) -> float:
    return pct(values, q) if values else float("nan")


ROWS: list[tuple[str, str, str]] = [  # key, label, target at 100k columns
    ("docs", "searchable documents", ""),
    ("dict_docs", "dictionary values", ""),
    ("embedded", "texts embedded", ""),
    ("full_wall", "full rebuild wall (s)", "≤ 400"),
    ("full_wall_stub", "  wall with stand-in vectors (s)", ""),
    ("full_parse", "  parse (s)", ""),
    ("full_lexical", "  lexical + store (s)", ""),
    ("full_embed", "  embed incl. model load (s)", ""),
    ("full_cpu", "  CPU user+sys (s)", ""),
    ("full_rss", "full rebuild peak RSS (MB)", "≤ 1536"),
    ("noop_ms", "no-op rebuild, in report (ms)", "≤ 5000"),
    ("noop_wall", "no-op rebuild, CLI wall (s)", ""),
    ("inc_ms", "1 table file, CLI report (ms)", ""),
    ("inc_wall", "1 table file, CLI wall (s)", ""),
    ("inc_warm", "1 table file, warm in-process (ms)", ""),
    ("size", "index on disk (MB)", "≤ 500"),
    ("size_store", "  store.sqlite (MB)", ""),
    ("size_lexical", "  lexical (MB)", ""),
    ("size_vectors", "  vectors.f16 (MB)", ""),
    ("engine_open", "engine open, cold (s)", ""),
    ("ip_p50", "discover in-process p50 (ms)", ""),
    ("ip_p95", "discover in-process p95 (ms)", ""),
    ("ip_p99", "discover in-process p99 (ms)", ""),
    ("ip_rank_p50", "  ranking only p50, query vector cached (ms)", ""),
    ("ip_embed_p50", "  query embedding p50 (ms)", ""),
    ("dict_first", "dictionary first call (ms)", ""),
    ("dict_p50", "dictionary_search in-process p50 (ms)", ""),
    ("ip_rss", "benchmark process RSS after queries (MB)", ""),
    ("mcp_start", "MCP start to first answer (s)", ""),
    ("mcp_p50", "discover via MCP p50 (ms)", "≤ 25"),
    ("mcp_p95", "discover via MCP p95 (ms)", ""),
    ("mcp_p99", "discover via MCP p99 (ms)", "≤ 80"),
    ("mcp_dict_p50", "dictionary_search via MCP p50 (ms)", ""),
    ("mcp_rss", "MCP server RSS (MB)", "≤ 1200"),
    ("mcp_peak", "MCP server peak RSS (MB)", ""),
    ("watch_p50", "table edit → searchable, serve --watch, p50 (ms)", ""),
    ("watch_p95", "table edit → searchable, serve --watch, p95 (ms)", "≤ 500"),
    ("watch_max", "table edit → searchable, serve --watch, max (ms)", ""),
    ("watch_missed", "  edits never found", "0"),
    ("watch_rss", "  serve --watch RSS after the edits (MB)", ""),
    ("others_full", "other processes' cores during full rebuild", ""),
    ("others_ip", "other processes' cores during in-process queries", ""),
    ("others_mcp", "other processes' cores during MCP queries", ""),
]
EXTRAPOLATE = {"docs", "embedded", "full_wall", "full_parse", "full_lexical", "full_embed", "full_rss", "noop_ms",
               "size", "size_store", "size_vectors", "ip_p99", "ip_rank_p50", "mcp_p99", "mcp_rss", "dict_p50",
               "engine_open", "mcp_start", "inc_warm", "watch_p95"}  # fmt: skip


#: Not comparable between a real build and one with stand-in vectors (the model's work differs).
STUB_SENSITIVE = {"full_cpu", "full_rss", "full_wall_stub"}


def flatten(res: dict[str, Any]) -> dict[str, float]:
    full, rep = res["full"], res["full"]["report"]
    counts = res.get("doc_counts", {})
    ip = res["inproc"]
    stub = res.get("full", {}).get("stub")
    row: dict[str, Any] = {
        "docs": sum(n for k, n in counts.items() if k not in ("dictionary_value", "snapshot")),
        "dict_docs": counts.get("dictionary_value", 0),
        "embedded": rep["embedded"],
        "full_wall": full["wall_s"],
        "full_parse": rep["parse_ms"] / 1000,
        "full_lexical": rep["lexical_ms"] / 1000,
        "full_embed": rep["embed_ms"] / 1000,
        "full_cpu": full["cpu_s"],
        "full_rss": full["peak_rss_mb"],
        "noop_ms": res["noop"]["report"]["duration_ms"],
        "noop_wall": res["noop"]["wall_s"],
        "inc_ms": res["incremental"]["report"]["duration_ms"],
        "inc_wall": res["incremental"]["wall_s"],
        "inc_warm": ip["incremental_warm"]["ms"],
        "size": res["size_mb"]["total"],
        "size_store": res["size_mb"]["store"],
        "size_lexical": res["size_mb"]["lexical"],
        "size_vectors": res["size_mb"]["vectors"],
        "engine_open": ip["engine_open_s"],
        "ip_p50": statistics.median(ip["discover"]),
        "ip_p95": p(ip["discover"], 0.95),
        "ip_p99": p(ip["discover"], 0.99),
        "dict_first": ip["dictionary_first_ms"],
        "dict_p50": statistics.median(ip["dictionary"]) if ip["dictionary"] else float("nan"),
        "ip_rss": ip["process_rss_mb"],
        "others_full": full.get("other_cores"),
        "_stub": bool(stub),
        "others_ip": ip.get("discover_other_cores"),
    }
    if "discover_ranking" in ip:
        row["ip_rank_p50"] = statistics.median(ip["discover_ranking"])
        row["ip_embed_p50"] = statistics.median(ip["query_embedding"])
    if stub:  # embed time estimated from the real model's measured rate: marked '~'
        row["full_wall_stub"] = full["wall_s"]
        row["full_embed"] = Estimate(stub["embed_estimate_s"])
        row["full_wall"] = Estimate(full["wall_s"] - rep["embed_ms"] / 1000 + stub["embed_estimate_s"])
    mcp = res.get("mcp")
    if mcp:
        row |= {
            "mcp_start": mcp["start_to_first_answer_s"],
            "mcp_p50": statistics.median(mcp["discover_data"]),
            "mcp_p95": p(mcp["discover_data"], 0.95),
            "mcp_p99": p(mcp["discover_data"], 0.99),
            "mcp_dict_p50": statistics.median(mcp["dictionary_search"]) if mcp["dictionary_search"] else math.nan,
            "mcp_rss": mcp.get("server_rss_mb", math.nan),
            "mcp_peak": mcp.get("server_peak_mb", math.nan),
            "others_mcp": mcp.get("discover_data_other_cores"),
        }
    watch = res.get("watch")
    if watch:
        w = watch_summary(watch)
        row |= {"watch_p50": w["p50"], "watch_p95": w["p95"], "watch_max": w["max"], "watch_missed": w["missed"],
                "watch_rss": watch.get("rss_end_mb", math.nan)}  # fmt: skip
    return row


class Estimate(float):
    """A value computed, not measured (shown with '~')."""


def fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, Estimate):
        return "~" + fmt(float(value))
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def exponent(a: float, b: float, na: int, nb: int) -> float | None:
    if not a or not b or a <= 0 or b <= 0 or math.isnan(a) or math.isnan(b) or na == nb:
        return None
    return math.log(b / a) / math.log(nb / na)


def project_to(va: float | None, vb: float | None, na: int, nb: int, n: int) -> float | None:
    """Value at n on the line through two sizes (cost = a + b*N: a fixed part plus work linear in N;
    a power law through the same points would underestimate it when the fixed part is large)."""
    if va is None or vb is None or math.isnan(va) or math.isnan(vb) or na == nb:
        return None
    slope = (vb - va) / (nb - na)
    return vb + max(slope, 0.0) * (n - nb)


def extrapolated(key: str, ra: dict[str, Any], rb: dict[str, Any], na: int, nb: int, n: int = 1_000_000) -> str:
    """1M from the two largest sizes (see project_to); a discover p50 as query embedding (constant)
    plus ranking (projected), plus for MCP the transport overhead measured at the larger size."""
    if key in ("ip_p50", "mcp_p50") and rb.get("ip_rank_p50") is not None and rb.get("ip_embed_p50") is not None:
        ranking = project_to(ra.get("ip_rank_p50"), rb.get("ip_rank_p50"), na, nb, n)
        if ranking is None:
            return "-"
        value = rb["ip_embed_p50"] + ranking
        if key == "mcp_p50":
            value += max(0.0, (rb.get("mcp_p50") or 0.0) - (rb.get("ip_p50") or 0.0))
        return "~" + fmt(value)
    if key not in EXTRAPOLATE or (key in STUB_SENSITIVE and ra.get("_stub") != rb.get("_stub")):
        return "-"
    value = project_to(ra.get(key), rb.get(key), na, nb, n)
    if value is None:
        return "-"
    k = exponent(ra.get(key) or 0.0, rb.get(key) or 0.0, na, nb)
    return "~" + fmt(value) + (" ↑" if k is not None and k > 1.1 else "")


METHOD = (
    "growth: ratio between consecutive synthetic sizes and k = log(ratio) / log(N ratio) (cost ∝ N^k). "
    "1M extrapolated: the line through the two largest synthetic sizes (cost = a + b·N; '↑' where growth "
    "was faster than linear, k > 1.1, so the line may underestimate); discover p50 = query embedding (constant) + ranking with the query vector cached "
    "(projected) + MCP transport overhead at the larger size. '~' marks computed values; with stand-in "
    "vectors the embed time is texts × the real model's seconds per text measured on that index's texts."
)


def render(results: list[dict[str, Any]], markdown: bool) -> str:
    synthetic = sorted((r for r in results if r.get("synthetic")), key=lambda r: r["columns"])
    extra = [r for r in results if not r.get("synthetic")]
    ordered = synthetic + extra
    rows = {r["label"]: flatten(r) for r in ordered}
    heads = [
        f"{r['columns']:,} cols"
        + ("" if r.get("synthetic") else f" {r['label'].removesuffix('-stub')}")
        + (" (stand-in vectors)" if r.get("stub") else "")
        for r in ordered
    ]
    extrapolate = len(synthetic) >= 2 and not any(r["columns"] >= 1_000_000 for r in synthetic)
    header = ["metric", *heads]
    if len(synthetic) >= 2:
        header.append("growth (cost ∝ N^k)")
    if extrapolate:
        header.append("1M extrapolated")
    header.append("target @100k")
    table = []
    for key, label, target in ROWS:
        values = [rows[r["label"]].get(key) for r in ordered]
        if all(v is None for v in values):
            continue
        line = [label, *(fmt(v) for v in values)]
        if len(synthetic) >= 2:
            ks = []
            for a, b in itertools.pairwise(synthetic):
                if key.startswith("others") or (key in STUB_SENSITIVE and a.get("stub") != b.get("stub")):
                    ks.append("-")
                    continue
                k = exponent(rows[a["label"]].get(key), rows[b["label"]].get(key), a["columns"], b["columns"])
                ratio = (rows[b["label"]].get(key) or 0) / (rows[a["label"]].get(key) or math.nan)
                ks.append("-" if k is None else f"×{ratio:.1f} (k={k:.2f})")
            line.append(", ".join(ks))
        if extrapolate:
            line.append(extrapolated(key, rows[synthetic[-2]["label"]], rows[synthetic[-1]["label"]],
                                     synthetic[-2]["columns"], synthetic[-1]["columns"]))  # fmt: skip
        line.append(target)
        table.append(line)
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in table]
        return "\n".join(lines)
    widths = [max(len(str(row[i])) for row in [header, *table]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))) for row in [header, *table]]  # fmt: skip
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def pin_code() -> None:
    """Re-run this script against a copy of the committed ktx_index/ and indexers/ (git archive HEAD), so
    edits others make to the working tree cannot change the code under measurement mid-run."""
    if os.environ.get("KTX_SCALE_PINNED"):
        return
    sha = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True,
                         check=True).stdout.strip()[:12]  # fmt: skip
    dest = WORK / "code" / sha
    if not (dest / "ktx_index").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", "HEAD", "ktx_index", "indexers"],
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    env = {**os.environ, "KTX_SCALE_PINNED": sha}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(dest), os.environ.get("PYTHONPATH", "")) if p)
    os.execve(sys.executable, [sys.executable, __file__, *sys.argv[1:]], env)


def git_state() -> str:
    if os.environ.get("KTX_SCALE_PINNED"):
        return f"code pinned at {os.environ['KTX_SCALE_PINNED']} (git archive HEAD)"
    try:
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "git ?"
    return f"git {head}{' + uncommitted changes' if dirty else ''}"


def machine() -> str:
    cpu = next(
        (
            ln.split(":", 1)[1].strip()
            for ln in Path("/proc/cpuinfo").read_text().splitlines()
            if ln.startswith("model name")
        ),
        "?",
    )
    mem = (
        next(
            (int(ln.split()[1]) for ln in Path("/proc/meminfo").read_text().splitlines() if ln.startswith("MemTotal")),
            0,
        )
        / 1024
        / 1024
    )
    return (f"{time.strftime('%Y-%m-%d %H:%M %Z')}; {cpu}, {os.cpu_count()} cores, {mem:.0f} GB RAM; "
            f"Python {platform.python_version()}; {git_state()}; load average at start {os.getloadavg()[0]:.2f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--columns", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--include-1m", action="store_true", help="Also run 1,000,000 columns (slow).")
    parser.add_argument("--corpus", type=Path, action="append", default=[], help="Extra project (e.g. scale-stress).")
    parser.add_argument("--queries", type=int, default=120, help="Target number of distinct discover queries.")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--skip-mcp", action="store_true")
    parser.add_argument("--skip-watch", action="store_true", help="Skip the edit-to-searchable loop (serve --watch).")
    parser.add_argument("--edits", type=int, default=20, help="Table edits timed under serve --watch.")
    parser.add_argument("--reuse", action="store_true", help="Reuse stored results of a size instead of measuring.")
    parser.add_argument("--cprofile", type=Path, help="cProfile the in-process query loop into this folder.")
    parser.add_argument("--markdown", type=Path, help="Also write the table (with machine and date) as Markdown.")
    parser.add_argument(
        "--stub-embeddings",
        action="store_true",
        help="Full rebuild with stand-in vectors (real shape, mean of real word vectors); the embed time is "
        "estimated from the real model's rate measured on the index's own texts. Labels results '<N>-stub'.",
    )
    parser.add_argument(
        "--stub-from", type=int, metavar="N", help="Use stand-in vectors only for sizes of N columns and more."
    )
    parser.add_argument(
        "--pin", action="store_true", help="Measure a copy of the committed code (HEAD), not the working tree."
    )
    parser.add_argument("--stub-build", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.pin:
        pin_code()
    if args.stub_build:
        stub_build(args.stub_build)
        return
    sizes = sorted(set(args.columns + ([1_000_000] if args.include_1m else [])))
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "results").mkdir(exist_ok=True)
    header = machine()
    print(header, flush=True)

    def stubbed(n: int) -> bool:
        return args.stub_embeddings or (args.stub_from is not None and n >= args.stub_from)

    jobs = [(f"{n}{'-stub' if stubbed(n) else ''}", n, None) for n in sizes]
    suffix = "-stub" if args.stub_embeddings else ""
    jobs += [(c.name + suffix, 0, c) for c in args.corpus if (c / "ktx.yaml").is_file()]
    results = []
    for label, columns, corpus in jobs:
        stored = WORK / "results" / f"{label}.json"
        if args.reuse and stored.is_file():
            results.append(json.loads(stored.read_text()))
            print(f"[{label}] reusing {stored}")
            continue
        project = ensure_synthetic(columns, args.seed) if corpus is None else ensure_corpus(corpus)
        if corpus is not None:
            db_columns = sum(len(json.loads(f.read_text()).get("columns") or []) for f in project.glob("raw-sources/*/live-database/*/tables/*.json"))  # fmt: skip
            columns = db_columns
        res = measure(label, project, columns, label.endswith("-stub"), args)
        res["machine"] = header
        stored.write_text(json.dumps(res, indent=1))
        results.append(res)
    text = render(results, markdown=False)
    print()
    print(text)
    print("\n" + METHOD)
    if args.markdown:
        notes = [f"- {r['label']}: measured {r.get('machine', header)}; full rebuild load average before "
                 f"{r['full']['load_before']:.2f}" for r in results]  # fmt: skip
        args.markdown.write_text(
            f"Machine: {header}\n\n{render(results, markdown=True)}\n\n{METHOD}\n\n" + "\n".join(notes) + "\n"
        )
        print(f"\nwritten {args.markdown}")


if __name__ == "__main__":
    main()
