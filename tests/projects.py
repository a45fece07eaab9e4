"""Helpers that write small KTX projects (scan snapshots, profiles) for tests, and the raw MCP request tests send
without a client."""

from __future__ import annotations

import base64
import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from ktx_index.cli import cli
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.engine import Engine
from ktx_index.service import KtxIndex

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"
#: Vendored copies of the KTX corpora (tests/benchmarks/corpora/README.md); KTX_CORPORA=DIR reads another copy.
CORPORA = Path(os.environ.get("KTX_CORPORA", REPO / "tests" / "benchmarks" / "corpora"))
#: An MCP initialize request and the headers streamable HTTP wants with it, for tests that speak the wire directly.
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
}


def b64(part: str | None) -> str:
    return base64.urlsafe_b64encode((part or "_").encode()).decode().rstrip("=") if part else "Xw"


def table_file(catalog: str | None, db: str | None, name: str) -> str:
    return f"{b64(catalog)}.{b64(db)}.{b64(name)}.json"


def write_files(root: Path, files: dict[str, Any]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, indent=2) + "\n", encoding="utf-8")
    return root


def scan_files(
    conn: str, sync: str, tables: list[dict[str, Any]], profile: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The files of one complete scan snapshot, in the shape the ktx CLI writes."""
    base = f"raw-sources/{conn}/live-database/{sync}"
    files: dict[str, Any] = {
        f"{base}/connection.json": {"connectionId": conn, "driver": "postgres", "extractedAt": "2026-01-01T00:00:00Z"},
        f"{base}/scan-report.json": {
            "connectionId": conn,
            "syncId": sync,
            "runId": sync.split("-", 4)[-1],
            "mode": "relationships",
            "artifactPaths": {"rawSourcesDir": base},
        },
    }
    for table in tables:
        files[f"{base}/tables/{table_file(table.get('catalog'), table.get('db'), table['name'])}"] = table
    if profile is not None:
        files[f"{base}/enrichment/relationship-profile.json"] = profile
    return files


def column(name: str, native: str = "text", dim: str = "string", comment: str | None = None) -> dict[str, Any]:
    return {
        "name": name, "nativeType": native, "normalizedType": native, "dimensionType": dim,
        "nullable": True, "primaryKey": name == "id", "comment": comment,
    }  # fmt: skip


def scan_table(name: str, columns: list[dict], fks: list[dict] | None = None) -> dict[str, Any]:
    """A scanned table of schema ``main`` (a scan's table file), with its foreign keys."""
    return {"catalog": None, "db": "main", "name": name, "kind": "table", "columns": columns, "foreignKeys": fks or []}


def foreign_key(src: str, to: str, dst: str, constraint: str | None = None) -> dict[str, Any]:
    """A scan's foreign key from column ``src`` to ``to``.``dst`` (schema ``main``)."""
    return {
        "fromColumn": src, "toCatalog": None, "toDb": "main", "toTable": to, "toColumn": dst,
        "constraintName": constraint,
    }  # fmt: skip


def sqlite_indexed(make_project: Any, tables: list[dict[str, Any]], connection: str = "f1") -> tuple[KtxIndex, Any]:
    """A SQLite connection scanned with these tables, indexed with the fake embedder: the service and its snapshot."""
    files = scan_files(connection, "2026-01-01-000000-local-a", tables)
    root = make_project(files, config=f"connections:\n  {connection}:\n    driver: sqlite\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    return service, service.refreshed_engine().snapshot


def profile_entry(db: str, table: str, col: str, values: list[str], distinct: int = 3) -> dict[str, Any]:
    return {
        "table": {"catalog": None, "db": db, "name": table}, "column": col, "nativeType": "text",
        "normalizedType": "text", "rowCount": 100, "nullCount": 5, "distinctCount": distinct,
        "nullRate": 0.05, "sampleValues": values,
    }  # fmt: skip


def corpus(name: str) -> Path:
    """A vendored corpus; missing fails the test (the corpora ship with the repository, so a skip would hide a
    broken checkout or a wrong $KTX_CORPORA)."""
    path = CORPORA / name
    if not (path / "ktx.yaml").is_file():
        pytest.fail(
            f"corpus {name} not present at {CORPORA}: restore tests/benchmarks/corpora/{name} from git, "
            "or point KTX_CORPORA at a copy that has it"
        )
    return path


#: A wiki page with frontmatter (``PAGE.format(summary=..., body=...)``).
PAGE = "---\nsummary: {summary}\ntags: [finance]\n---\n# Title\n\n{body}\n"


def finance_files() -> dict[str, str]:
    """Two wiki pages and a semantic-layer source: the small project the builder's tests write."""
    return {
        "wiki/global/revenue.md": PAGE.format(summary="Revenue definition", body="Revenue is net of refunds."),
        "wiki/global/churn.md": PAGE.format(summary="Churn definition", body="Churn counts cancellations."),
        "semantic-layer/warehouse/orders.yaml": ORDERS_SOURCE,
    }


def assert_sound_judged_set(
    name: str, queries: list[Any], ids: set[str], tool: str | None = None, answerable: int = 10, no_answer: int = 3
) -> None:
    """What a benchmark family's judged set must be (judged-blind, the wiki and warehouse families): questions of
    ``tool``, at least ``answerable`` answerable and ``no_answer`` no-answer ones, typed so, and every judged id
    naming something of its project (``ids``)."""
    assert tool is None or all(q.tool == tool for q in queries)
    graded = [q for q in queries if q.relevant]
    assert len(graded) >= answerable and len(queries) - len(graded) >= no_answer
    assert all((q.type == "no_answer") == (not q.relevant) for q in queries)
    for q in queries:
        missing = sorted(set(q.relevant) - ids)
        assert not missing, f"{name} {q.id}: judged ids name nothing in the project: {missing}"


def service_for(root: Path, embedder: HashEmbedder | None = None) -> KtxIndex:
    """A service on ``root`` with the fake embedder (a fresh one unless given)."""
    return KtxIndex(root, embedder=embedder or HashEmbedder())


#: A standalone semantic-layer source: 5 documents (source, measure, dimension, two enum values).
ORDERS_SOURCE = """name: orders
table: public.orders
descriptions: {user: Customer orders}
columns:
  - {name: status, type: string, enum_values: {dbt: [paid, refunded]}}
measures:
  - {name: order_count, expr: count(*), description: Number of orders}
"""


def run_cli(*args: Any) -> Result:
    """``ktx-index ARGS`` in process (paths and numbers may be passed as they are)."""
    return CliRunner().invoke(cli, [str(a) for a in args])


#: A semantic-layer connection's pieces: a `_schema` manifest shard (orders, customers), an overlay onto its
#: orders source, and a standalone source (tests/indexers/test_semantic_layer.py, test_sl_records.py).
SL_SHARD = """tables:
  orders:
    table: public.orders
    descriptions: {ai: Orders placed by customers, db: raw orders}
    columns:
      - {name: id, type: string, pk: true}
      - {name: status, type: string, descriptions: {ai: Order status}}
      - {name: ordered_at, type: time}
      - {name: legacy_flag, type: boolean}
    joins:
      - {to: customers, "on": orders.customer_id = customers.id, relationship: many_to_one, source: inferred}
  customers:
    table: public.customers
    columns:
      - {name: id, type: string}
"""

SL_OVERLAY = """name: orders
descriptions:
  user: Paid and refunded customer orders
measures:
  - {name: order_count, expr: count(*), description: Number of paid orders}
column_overrides:
  - name: status
    descriptions: {user: Lifecycle status of the order}
columns:
  - {name: is_paid, type: boolean, expr: "status = 'paid'"}
exclude_columns: [legacy_flag]
"""

SL_STANDALONE = """name: subscriptions
descriptions:
  dbt: One row per subscription
table: analytics.subscriptions
grain: [subscription_id]
columns:
  - name: plan
    type: string
    descriptions: {dbt: Plan tier}
    enum_values: {dbt: [basic, family_4]}
measures:
  - {name: active_subscriptions, expr: count(*), filter: "status = 'active'"}
tags: {dbt: [finance]}
usage:
  narrative: Used for the weekly subscriber report
  frequencyTier: high
"""


#: Texts the embedding tests encode: a compact text, prose, accents and symbols, one letter, and a section past
#: the model's 256-token window.
EMBEDDING_TEXTS = [
    "column: customer id — in orders — who placed the order",
    "Refunds are issued to the original payment method within five days.",
    "Ünïcödé, accents: café, naïve — and symbols #42 %",
    "x",
    " ".join(["a long wiki section about delivery windows and courier routes"] * 60),  # past the 256-token window
]


def with_params(engine: Engine, **changes: Any) -> Engine:
    """Another reader over the same index, ranking with some constants changed (search/scoring.py Params)."""
    return Engine(engine.layout, engine.embedder, dataclasses.replace(engine.params, **changes))
