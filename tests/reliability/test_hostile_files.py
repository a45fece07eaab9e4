"""Hostile files: what the indexers do with broken, mistyped, deeply nested, explosive, huge and binary files.

Each case writes a project with good files and some hostile ones, then reads it twice: with
``read_project(load_project(root))`` and with a full ``KtxIndex(root, embedder=HashEmbedder()).rebuild()``.
The property, for both:

* no exception escapes;
* each hostile file the case names appears in the diagnostics under its own path (or, where a wrong type is
  tolerated, is accounted for: a diagnostic or at least one document from that file);
* every good document is still there, unchanged (same content hash as the project without the hostile files).

A Hypothesis mutation fuzzer then flips, inserts, deletes and truncates bytes of real source files (a semantic-layer
YAML, a wiki page with frontmatter, a ``_schema`` shard, a table JSON, a relationship profile) and checks that
``read_project`` never raises and either reports the mutated file or reads it.

Each case that once exposed a bug keeps its `bug=` note (file, line, cause) as the regression it guards.
"""

from __future__ import annotations

import json
import resource
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from projects import DEMO, column, profile_entry, scan_files, table_file, write_files

from indexers import Diagnostic, Document, ProjectRead, load_project, read_project
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.mcp import build_server
from ktx_index.service import KtxIndex

SYNC = "2026-01-01-000000-local-a"
WH = f"raw-sources/warehouse/live-database/{SYNC}"
LAKE = f"raw-sources/lake/live-database/{SYNC}"
SL = "semantic-layer/warehouse"
CONFIG = "connections:\n  warehouse:\n    driver: postgres\n  lake:\n    driver: postgres\n"
DEMO_SYNC_DIR = DEMO / "raw-sources/warehouse/live-database/2026-10-02-060000-local-mg9a1b2c"

# ------------------------------------------------------------------ real files used as seeds

SEED_SOURCE = (DEMO / "semantic-layer/dbt/fct_orders.yaml").read_text(encoding="utf-8")
SEED_PAGE = (DEMO / "wiki/global/refund-policy.md").read_text(encoding="utf-8")
SEED_SHARD = (DEMO / "semantic-layer/warehouse/_schema/raw.yaml").read_text(encoding="utf-8")
#: The demo's raw.orders table, renamed so it never collides with a good table.
SEED_TABLE = (
    (DEMO_SYNC_DIR / "tables" / table_file(None, "raw", "orders"))
    .read_text(encoding="utf-8")
    .replace('"name": "orders"', '"name": "seed_orders"')
)
SEED_PROFILE = (DEMO_SYNC_DIR / "enrichment/relationship-profile.json").read_text(encoding="utf-8")

# ------------------------------------------------------------------ the good project


def _table(db: str, name: str, *columns: str) -> dict[str, Any]:
    return {
        "catalog": None, "db": db, "name": name, "kind": "table", "comment": f"{db}.{name} rows", "estimatedRows": 10,
        "columns": [column(c, "integer" if c == "id" else "text") for c in columns], "foreignKeys": [],
    }  # fmt: skip


GOOD: dict[str, Any] = {
    "wiki/global/refund-policy.md": SEED_PAGE,
    "wiki/global/churn.md": "---\nsummary: How churn is defined\ntags: [retention]\nsl_refs: [warehouse.purchases]\n"
    "---\n# Churn\n\nA member lapses after 30 days without purchases; see `raw.purchases`.\n",
    "wiki/user/local/my-notes.md": "---\nsummary: My notes\n---\nPersonal notes about refunds.\n",
    f"{SL}/purchases.yaml": "name: purchases\ntable: raw.purchases\ndescriptions:\n  user: One row per purchase.\n"
    "columns:\n  - name: id\n    type: number\n  - name: status\n    type: string\n"
    "    enum_values: [paid, refunded, cancelled]\n"
    "measures:\n  - name: purchase_count\n    expr: count(*)\n    description: Purchases made.\n",
    f"{SL}/_schema/raw.yaml": "tables:\n  members:\n    table: raw.members\n    descriptions:\n"
    "      ai: One row per member.\n    columns:\n      - name: id\n        pk: true\n"
    "      - name: segment\n        type: string\n",
    f"{SL}/members.yaml": "name: members\nmeasures:\n  - name: member_count\n    expr: count(*)\n",
    **scan_files(
        "warehouse",
        SYNC,
        [_table("raw", "purchases", "id", "status"), _table("raw", "members", "id", "segment")],
        {"columns": {"purchases.status": profile_entry("raw", "purchases", "status", ["paid", "refunded"])}},
    ),
    **scan_files(
        "lake",
        SYNC,
        [_table("raw", "events", "id", "kind")],
        {"columns": {"events.kind": profile_entry("raw", "events", "kind", ["click", "view"])}},
    ),
}
#: The lake connection is where hostile scan artifacts (profile, scan-report, connection.json) go; its table
#: must still be indexed, whatever they contain.
LAKE_REQUIRED = ("table:lake:raw.events", "column:lake:raw.events.id", "column:lake:raw.events.kind")


def good_hashes(docs: list[Document]) -> dict[str, str]:
    """The good project's documents (warehouse and wiki), uid → content hash; the snapshot counts tables."""
    return {d.uid: d.content_hash for d in docs if d.connection_id != "lake" and d.kind != "snapshot"}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = write_files(tmp_path_factory.mktemp("baseline") / "project", {"ktx.yaml": CONFIG, **GOOD})
    read = read_project(load_project(root))
    assert read.diagnostics == [], read.diagnostics
    hashes = good_hashes(read.documents)
    kinds = {uid.split(":", 1)[0] for uid in hashes}
    assert kinds == {"wiki", "sl_source", "sl_measure", "sl_dimension", "dictionary_value", "table", "column"}
    assert set(LAKE_REQUIRED) <= {d.uid for d in read.documents}
    return hashes


# ------------------------------------------------------------------ hostile content


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def alias_bomb(levels: int = 9, width: int = 10) -> tuple[str, str]:
    """Billion laughs: each anchor lists the previous one ``width`` times (width ** levels nodes expanded)."""
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n", f"*l{levels - 1}"


BOMB, LAST = alias_bomb()


def cut(text: str, fraction: float) -> str:
    return text[: int(len(text) * fraction)]


def table_path(name: str, base: str = WH) -> str:
    return f"{base}/tables/{table_file(None, 'raw', name)}"


def table_json(**fields: Any) -> dict[str, Any]:
    return {**_table("raw", "hostile", "id", "status"), **fields}


def profile_with(**entry: Any) -> dict[str, Any]:
    return {"columns": {"events.kind": {**profile_entry("raw", "events", "kind", ["click", "view"]), **entry}}}


@dataclass
class Case:
    id: str
    files: dict[str, Any]
    #: Paths that must appear in the diagnostics.
    diagnosed: tuple[str, ...] = ()
    #: Paths that must be accounted for: a diagnostic, or at least one document read from them.
    accounted: tuple[str, ...] = ()
    bug: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def bad(case_id: str, path: str, content: Any, bug: str | None = None) -> Case:
    return Case(case_id, {path: content}, diagnosed=(path,), bug=bug)


def tolerated(case_id: str, path: str, content: Any, bug: str | None = None) -> Case:
    return Case(case_id, {path: content}, accounted=(path,), bug=bug)


BUG_JSONABLE_CYCLE = (
    "BUG indexers/wiki.py:45-50 (jsonable, called from WikiIndexer.read at indexers/wiki.py:172 outside the "
    "SourceError handling): a self-referencing YAML anchor in a frontmatter field kept in attrs "
    "(tables: &a [*a]) recurses forever; RecursionError escapes read_project and rebuild"
)
BUG_SL_CYCLE = (
    "BUG indexers/semantic_layer.py:98 (+ indexers/models.py:71): a self-referencing anchor in a source's "
    "usage.frequencyTier (usage: &u {frequencyTier: *u}) is copied into Document.attrs; model_post_init's model_dump raises "
    "pydantic ValidationError 'Circular reference detected', which escapes read_project"
)
BUG_DEPTH = (
    "BUG: parse_yaml accepts nesting up to 497 levels and read_json up to the recursion limit, but "
    "Document.model_post_init (indexers/models.py:71, model_dump) fails from 256 levels on (pydantic's serialization "
    "depth limit) and indexers/wiki.py:45-50 jsonable hits RecursionError deeper still; a 300-level nested value kept "
    "in attrs ({where}) raises out of read_project instead of becoming a diagnostic"
)
BUG_OVERLAY = (
    "BUG indexers/sl_records.py:{line} (compose_overlay): {what}; the TypeError escapes load_records and loses every "
    "semantic-layer document of the connection"
)
BUG_NOT_MAPPING = (
    "BUG indexers/scans.py:{line}: {file} is read with read_json and used with (x or {{}}).get(...) without "
    "checking it is an object; valid JSON that is a list raises AttributeError out of read_project"
)

CASES: list[Case] = [
    # --- truncated files: a real source, page, table JSON and profile cut at several points
    *(tolerated(f"truncated-source-{f}", f"{SL}/cut.yaml", cut(SEED_SOURCE, f)) for f in (0.02, 0.1, 0.3, 0.5, 0.77)),
    *(tolerated(f"truncated-page-{f}", "wiki/global/cut.md", cut(SEED_PAGE, f)) for f in (0.01, 0.05, 0.1, 0.4)),
    *(tolerated(f"truncated-shard-{f}", f"{SL}/_schema/cut.yaml", cut(SEED_SHARD, f)) for f in (0.001, 0.3, 0.6)),
    *(bad(f"truncated-table-{f}", table_path("cut"), cut(SEED_TABLE, f)) for f in (0.0, 0.2, 0.5, 0.99)),
    *(
        bad(f"truncated-profile-{f}", f"{LAKE}/enrichment/relationship-profile.json", cut(SEED_PROFILE, f))
        for f in (0.1, 0.9)
    ),
    # --- wrong types in semantic-layer files
    Case("source-name-int", {f"{SL}/named.yaml": "name: 123\ntable: raw.named\n"}, diagnosed=(f"{SL}/named.yaml",)),
    tolerated("source-columns-string", f"{SL}/t1.yaml", "name: t1\ntable: raw.t1\ncolumns: x\n"),
    tolerated("source-measures-mapping", f"{SL}/t2.yaml", "name: t2\ntable: raw.t2\nmeasures: {a: 1}\n"),
    tolerated("source-descriptions-list", f"{SL}/t3.yaml", "name: t3\ntable: raw.t3\ndescriptions: [1, 2]\n"),
    tolerated("source-column-entries-strings", f"{SL}/t4.yaml", "name: t4\ntable: raw.t4\ncolumns: [a, b, 7]\n"),
    tolerated("source-table-int", f"{SL}/t5.yaml", "name: t5\ntable: 123\nsql: [1]\nusage: 5\ntags: {x: 1}\n"),
    tolerated(
        "source-column-fields-wrong",
        f"{SL}/t6.yaml",
        "name: t6\ntable: raw.t6\ncolumns:\n  - name: {a: 1}\n  - name: c\n    enum_values: {dbt: 5}\n"
        "    descriptions: x\n    type: [1]\nmeasures:\n  - name: [1]\n    expr: {a: 1}\n",
    ),
    bad("source-is-a-list", f"{SL}/list.yaml", "- name: x\n- table: y\n"),
    bad("source-is-a-scalar", f"{SL}/scalar.yaml", "just a string\n"),
    bad("source-python-tag", f"{SL}/tag.yaml", "name: tag\ntable: !!python/object/apply:os.system ['true']\n"),
    bad("shard-tables-list", f"{SL}/_schema/list.yaml", "tables: [raw.a, raw.b]\n"),
    bad("shard-entry-scalar", f"{SL}/_schema/scalar.yaml", "tables:\n  a: 5\n  b: [1]\n"),
    tolerated(
        "shard-entry-wrong-fields",
        f"{SL}/_schema/odd.yaml",
        "tables:\n  odd:\n    table: [1]\n    columns: x\n    descriptions: [1, 2]\n    joins: 5\n",
    ),
    bad("overlay-without-base", f"{SL}/orphan.yaml", "name: orphan\nmeasures: []\n"),
    Case(
        "overlay-exclude-columns-int",
        {f"{SL}/ob1.yaml": "name: ob1\ntable: raw.ob1\n", f"{SL}/ob1_overlay.yaml": "name: ob1\nexclude_columns: 5\n"},
        accounted=(f"{SL}/ob1.yaml",),
        bug=BUG_OVERLAY.format(line=131, what="exclude_columns: 5 is iterated ('int' object is not iterable)"),
    ),
    Case(
        "overlay-disable-joins-int",
        {f"{SL}/ob2.yaml": "name: ob2\ntable: raw.ob2\n", f"{SL}/ob2_overlay.yaml": "name: ob2\ndisable_joins: 5\n"},
        accounted=(f"{SL}/ob2.yaml",),
        bug=BUG_OVERLAY.format(line=140, what="disable_joins: 5 is iterated ('int' object is not iterable)"),
    ),
    Case(
        "overlay-unhashable-column-name",
        {
            f"{SL}/ob3.yaml": "name: ob3\ntable: raw.ob3\ncolumns:\n  - name: [1]\n",
            f"{SL}/ob3_overlay.yaml": "name: ob3\ncolumns:\n  - name: x\n",
        },
        accounted=(f"{SL}/ob3.yaml",),
        bug=BUG_OVERLAY.format(line=112, what="a base column whose name is a list is used as a dict key (unhashable)"),
    ),
    # --- wrong types in wiki frontmatter
    tolerated(
        "frontmatter-tags-mapping", "wiki/global/tags.md", "---\ntags: {a: b}\nsummary: [1]\nrefs: 5\n---\nBody\n"
    ),
    tolerated(
        "frontmatter-odd-scalars",
        "wiki/global/odd.md",
        "---\nsummary: 2026-01-01\nsort_order: .nan\nusage: .inf\nsource: !!binary aGVsbG8=\n---\nBody\n",
    ),
    bad("frontmatter-list", "wiki/global/list.md", "---\n- a\n- b\n---\nBody\n"),
    bad("frontmatter-unclosed", "wiki/global/open.md", "---\nsummary: never closed\nBody\n"),
    bad("frontmatter-invalid-yaml", "wiki/global/broken.md", "---\nsummary: [unclosed\n---\nBody\n"),
    bad("frontmatter-python-tag", "wiki/global/tag.md", "---\nsummary: !!python/name:os.system\n---\nBody\n"),
    # --- scan table files of the wrong shape
    bad("table-array", table_path("array"), [1, 2, 3]),
    bad("table-string", table_path("string"), "orders"),
    bad("table-number", table_path("number"), 42),
    bad(
        "table-null",
        table_path("null"),
        None,
        bug="BUG indexers/scans.py:178: _read_table treats a table file whose JSON is `null` like an unreadable "
        "file (`if table is None: return result`), so it is dropped with no diagnostic at all",
    ),
    bad("table-name-int", table_path("nameint"), table_json(name=5)),
    bad("table-name-blank", table_path("blank"), table_json(name="  ")),
    bad("table-columns-string", table_path("colstr"), table_json(columns="x")),
    bad(
        "table-columns-int",
        table_path("colint"),
        table_json(columns=123),
        bug="BUG indexers/scans.py:200: `for c in table.get('columns') or []` iterates a non-list; columns: 123 raises "
        "TypeError ('int' object is not iterable) out of read_project",
    ),
    bad("table-column-entries-strings", table_path("colentries"), table_json(columns=["id", 5, {"nativeType": "x"}])),
    tolerated(
        "table-odd-fields",
        table_path("odd"),
        table_json(catalog=5, db=["x"], comment={"a": 1}, descriptions=[1], kind=5, estimatedRows="many"),
    ),
    # --- relationship profile and scan metadata of the wrong shape (lake connection)
    bad("profile-array", f"{LAKE}/enrichment/relationship-profile.json", [1, 2]),
    bad("profile-columns-list", f"{LAKE}/enrichment/relationship-profile.json", {"columns": [1, 2]}),
    Case(
        "profile-entry-odd-types",
        {
            f"{LAKE}/enrichment/relationship-profile.json": profile_with(
                sampleValues={"a": 1}, distinctCount="many", nullRate="x", rowCount=[1], table="events"
            )
        },
    ),
    Case(
        "profile-sample-values-int",
        {f"{LAKE}/enrichment/relationship-profile.json": profile_with(sampleValues=5)},
        bug="BUG indexers/scans.py:144: _read_snapshot calls len(entry.get('sampleValues') or []); a profile entry "
        "with sampleValues: 5 raises TypeError out of read_project",
    ),
    bad("scan-report-not-json", f"{LAKE}/scan-report.json", "this is not JSON {"),
    bad(
        "scan-report-array",
        f"{LAKE}/scan-report.json",
        [1],
        bug=BUG_NOT_MAPPING.format(line="149 (_read_snapshot)", file="scan-report.json"),
    ),
    bad(
        "connection-json-array",
        f"{LAKE}/connection.json",
        ["postgres"],
        bug=BUG_NOT_MAPPING.format(line="147-148 (_read_snapshot) and 190/207 (_read_table)", file="connection.json"),
    ),
    bad("connection-json-not-json", f"{LAKE}/connection.json", "{driver: postgres"),
    # --- deep nesting: 10,000 levels (refused by the parsers) and 300 levels (accepted, then used)
    bad("deep-yaml-source", f"{SL}/deep.yaml", f"name: deep\ntable: raw.deep\nusage: {nested(10_000)}\n"),
    bad("deep-yaml-frontmatter", "wiki/global/deep.md", f"---\ntables: {nested(10_000)}\n---\nBody\n"),
    bad("deep-yaml-shard", f"{SL}/_schema/deep.yaml", f"tables: {nested(10_000)}\n"),
    bad("deep-json-table", table_path("deep"), nested(10_000)),
    bad("deep-json-profile", f"{LAKE}/enrichment/relationship-profile.json", '{"columns": ' + nested(10_000) + "}"),
    bad("deep-json-scan-report", f"{LAKE}/scan-report.json", nested(10_000)),
    tolerated(
        "nested-300-json-table",
        table_path("nested"),
        table_json(foreignKeys=json.loads(nested(300))),
        bug=BUG_DEPTH.format(where="a table JSON's foreignKeys"),
    ),
    tolerated(
        "nested-300-frontmatter",
        "wiki/global/nested.md",
        f"---\ntables: {nested(300)}\n---\nBody\n",
        bug=BUG_DEPTH.format(where="a frontmatter 'tables' field"),
    ),
    tolerated(
        "nested-300-source-usage",
        f"{SL}/nested.yaml",
        f"name: nested\ntable: raw.nested\nusage: {{frequencyTier: {nested(300)}}}\n",
        bug=BUG_DEPTH.format(where="a source's usage.frequencyTier"),
    ),
    # --- billion laughs and self-referencing anchors
    bad("alias-bomb-shard", f"{SL}/_schema/bomb.yaml", f"{BOMB}tables:\n  bomb:\n    tags: {LAST}\n"),
    bad("alias-bomb-frontmatter", "wiki/global/bomb.md", f"---\n{BOMB}tables: {LAST}\n---\nBody\n"),
    bad("alias-bomb-source", f"{SL}/bomb.yaml", f"{BOMB}name: bomb\ntable: raw.bomb\nusage: {LAST}\n"),
    tolerated("alias-cycle-shard", f"{SL}/_schema/cycle.yaml", "tables:\n  cycle:\n    tags: &t [*t]\n"),
    tolerated(
        "alias-cycle-frontmatter",
        "wiki/global/cycle.md",
        "---\ntables: &a [x, *a]\n---\nBody\n",
        bug=BUG_JSONABLE_CYCLE,
    ),
    tolerated(
        "alias-cycle-source",
        f"{SL}/cycle.yaml",
        "name: cycle\ntable: raw.cycle\nusage: &u {frequencyTier: *u}\n",
        bug=BUG_SL_CYCLE,
    ),
    # --- NUL bytes and invalid UTF-8
    bad("nul-page", "wiki/global/nul.md", b"---\nsummary: a\x00b\n---\nBody\n"),
    bad("nul-source", f"{SL}/nul.yaml", b"name: nul\ntable: raw.nul\x00\n"),
    bad("nul-shard", f"{SL}/_schema/nul.yaml", b"tables:\n  nul: {}\n\x00"),
    bad("nul-table", table_path("nul"), b'{"name": "nul\x00"}'),
    bad("nul-profile", f"{LAKE}/enrichment/relationship-profile.json", b'{"columns": {}}\x00'),
    bad("nul-scan-report", f"{LAKE}/scan-report.json", b"\x00" * 64),
    bad("latin1-page", "wiki/global/latin1.md", "---\nsummary: café\n---\nCrème brûlée\n".encode("latin-1")),
    bad("latin1-source", f"{SL}/latin1.yaml", "name: latin1\ntable: raw.café\n".encode("latin-1")),
    bad("invalid-utf8-table", table_path("utf8"), b'{"name": "\xff\xfe"}'),
    bad("utf16-page", "wiki/global/utf16.md", "---\nsummary: x\n---\nBody\n".encode("utf-16")),
    bad("binary-page", "wiki/global/binary.md", bytes(range(256)) * 4),
]

for _case in CASES:  # every case is a new file or replaces a lake artifact, never a good warehouse/wiki file
    assert all(p not in GOOD or p.startswith(LAKE) for p in _case.files), _case.id


def case_params() -> list[Any]:
    return [pytest.param(case, id=case.id) for case in CASES]


def check_read(case: Case, documents: list[Document], diagnostics: list[Diagnostic], baseline: dict[str, str]) -> None:
    diag_paths = {d.path for d in diagnostics}
    doc_paths = {d.path.split("#", 1)[0] for d in documents} | {f for d in documents for f in d.attrs.get("files", [])}
    for path in case.diagnosed:
        assert path in diag_paths, f"{path} not reported; diagnostics: {sorted(diag_paths)}"
    for path in case.accounted:
        assert path in diag_paths or path in doc_paths, f"{path} neither reported nor read"
    got = {d.uid: d.content_hash for d in documents}
    missing = sorted(uid for uid in baseline if uid not in got)
    changed = sorted(uid for uid, h in baseline.items() if uid in got and got[uid] != h)
    assert not missing and not changed, f"good documents lost: {missing[:10]}, changed: {changed[:10]}"
    assert set(LAKE_REQUIRED) <= set(got), f"lake table lost: {sorted(set(LAKE_REQUIRED) - set(got))}"


@pytest.mark.parametrize("case", case_params())
def test_read_project_reports_hostile_files_and_keeps_the_rest(
    case: Case, make_project: Callable[..., Path], baseline: dict[str, str]
) -> None:
    root = make_project({**GOOD, **case.files}, config=CONFIG)
    read = read_project(load_project(root))
    check_read(case, read.documents, read.diagnostics, baseline)


@pytest.mark.parametrize("case", case_params())
def test_rebuild_reports_hostile_files_and_keeps_the_rest(
    case: Case, make_project: Callable[..., Path], baseline: dict[str, str]
) -> None:
    root = make_project({**GOOD, **case.files}, config=CONFIG)
    service = KtxIndex(root, embedder=HashEmbedder())
    try:
        report = service.rebuild()
        documents = list(service.refreshed_engine().store.docs.iter())
    finally:
        service.close()
    check_read(case, documents, report.diagnostics, baseline)


# ------------------------------------------------------------------ diagnostics of files added to an indexed project


@pytest.mark.parametrize(
    ("path", "content"),
    [
        ("wiki/global/nul.md", b"\x00"),
        (f"{SL}/_schema/bomb.yaml", f"{BOMB}tables: {LAST}\n"),
        (f"{SL}/broken.yaml", "name: broken\ntable: [unclosed\n"),
    ],
    ids=["nul-page", "bomb-shard", "invalid-source"],
)
def test_broken_file_added_later_is_reported_by_rebuild(
    make_project: Callable[..., Path], path: str, content: Any
) -> None:
    root = make_project(GOOD, config=CONFIG)
    service = KtxIndex(root, embedder=HashEmbedder())
    try:
        service.rebuild()
        write_files(root, {path: content})
        report = service.rebuild()
    finally:
        service.close()
    assert path in {d.path for d in report.diagnostics}


# ------------------------------------------------------------------ ktx.yaml itself


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(b"connections:\n  warehouse: {driver: postgres}\n\x00", id="nul"),
        pytest.param(b"connections:\n  warehouse: {driver: pos", id="truncated"),
        pytest.param("connections: {café: {}}\n".encode("latin-1"), id="latin1"),
        pytest.param(f"{BOMB}connections: {LAST}\n", id="alias-bomb"),
        pytest.param(f"connections: {nested(10_000)}\n", id="deep"),
        pytest.param("- just\n- a list\n", id="list"),
        pytest.param("connections: [warehouse, lake]\n", id="connections-list"),
        pytest.param("connections:\n  warehouse: [1]\n  lake: 5\n  ../x: {}\n", id="connection-bodies"),
        pytest.param("index: 5\n", id="index-scalar"),
        pytest.param(
            "index:\n  max_file_mb: lots\n  user: ../../etc\n  embeddings: maybe\n  bogus: 1\n", id="index-types"
        ),
        pytest.param("index:\n  model: gpt\n  precision: int4\n", id="index-choices"),
        pytest.param(
            "index:\n  max_file_mb: .nan\n",
            id="max-file-mb-nan",
        ),
        pytest.param(
            "index:\n  max_file_mb: .inf\n",
            id="max-file-mb-inf",
        ),
    ],
)
def test_hostile_ktx_yaml_is_reported_and_folders_are_still_indexed(
    make_project: Callable[..., Path], baseline: dict[str, str], config: str | bytes
) -> None:
    root = make_project(GOOD, config=None)
    write_files(root, {"ktx.yaml": config})
    project = load_project(root)
    read = read_project(project)
    assert "ktx.yaml" in {d.path for d in read.diagnostics}
    assert {"warehouse", "lake"} <= set(project.connections)  # found from their folders
    check_read(Case("ktx", {}), read.documents, read.diagnostics, baseline)


# ------------------------------------------------------------------ 100 MB files and alias expansion: bounded memory


def _measure(fn: Callable[[], Any]) -> tuple[Any, int, int]:
    """(result, Python peak bytes while running fn, growth of the process's max RSS in bytes)."""
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        result = fn()
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before


HUGE = [
    "wiki/global/huge.md",
    f"{SL}/huge.yaml",
    f"{SL}/_schema/huge.yaml",
    table_path("huge"),
    f"{LAKE}/enrichment/relationship-profile.json",
]


def test_100mb_files_are_reported_over_the_limit_and_never_loaded(
    make_project: Callable[..., Path], baseline: dict[str, str]
) -> None:
    root = make_project(GOOD, config=CONFIG)
    for rel in HUGE:
        with open(root / rel, "wb") as handle:  # sparse: 100 MB on paper, no time to write
            handle.truncate(100_000_000)
    read, peak, rss_growth = _measure(lambda: read_project(load_project(root)))
    for rel in HUGE:
        (diag,) = [d for d in read.diagnostics if d.path == rel]
        assert "100.0 MB, over the 64 MB limit" in diag.message
    check_read(Case("huge", {}), read.documents, read.diagnostics, baseline)
    assert peak < 20_000_000, f"read_project allocated {peak / 1e6:.0f} MB"
    assert rss_growth < 200_000_000, f"max RSS grew {rss_growth / 1e6:.0f} MB"

    def rebuild() -> tuple[Any, list[Document]]:
        service = KtxIndex(root, embedder=HashEmbedder())
        try:
            return service.rebuild(), list(service.refreshed_engine().store.docs.iter())
        finally:
            service.close()

    (report, documents), peak, rss_growth = _measure(rebuild)
    assert set(HUGE) <= {d.path for d in report.diagnostics}
    check_read(Case("huge", {}), documents, report.diagnostics, baseline)
    assert peak < 50_000_000, f"rebuild allocated {peak / 1e6:.0f} MB"
    assert rss_growth < 200_000_000, f"max RSS grew {rss_growth / 1e6:.0f} MB"


def test_file_over_a_lowered_limit_is_reported_not_read(make_project: Callable[..., Path]) -> None:
    root = make_project({"wiki/global/big.md": "---\nsummary: big\n---\n" + "word " * 400_000}, config=None)
    write_files(root, {"ktx.yaml": "index:\n  max_file_mb: 1\n"})
    read = read_project(load_project(root))
    assert read.documents == []
    ((path, message),) = [(d.path, d.message) for d in read.diagnostics]
    assert path == "wiki/global/big.md" and "2.0 MB, over the 1 MB limit" in message


def test_alias_expansion_just_under_the_limit_stays_bounded(make_project: Callable[..., Path]) -> None:
    """1.4 million expanded nodes (under the 2 million refusal threshold): read in bounded time and memory."""
    anchors = "l0: &l0 [" + ", ".join(["x"] * 600) + "]\nl1: &l1 [" + ", ".join(["*l0"] * 600) + "]\n"
    files = {
        "wiki/global/wide.md": f"---\n{anchors}tables: [*l1, *l1, *l1]\nsummary: wide\n---\nBody\n",
        f"{SL}/wide.yaml": f"{anchors}name: wide\ntable: raw.wide\nusage: {{frequencyTier: [*l1, *l1, *l1]}}\n",
    }
    root = make_project(files, config=CONFIG)
    started = time.perf_counter()
    read, peak, _rss = _measure(lambda: read_project(load_project(root)))
    assert {d.path for d in read.documents} == set(files)
    ((path, message),) = [(d.path, d.message) for d in read.diagnostics if d.path.endswith(".md")]  # not names
    assert path == "wiki/global/wide.md" and message.startswith("tables: expected text") and len(message) < 200
    assert [d.message for d in read.diagnostics if d.path.endswith(".yaml")] == [  # the anchors' own keys
        "unknown source key 'l0' ignored",
        "unknown source key 'l1' ignored",
    ]
    assert time.perf_counter() - started < 30
    assert peak < 200_000_000, f"read_project allocated {peak / 1e6:.0f} MB"


# ------------------------------------------------------------------ read tools over hostile scan values

EVENTS = {"catalog": None, "db": "raw", "name": "events"}


@pytest.mark.parametrize(
    "files",
    [
        pytest.param({}, id="good"),
        pytest.param(
            {f"{LAKE}/enrichment/relationship-profile.json": profile_with(distinctCount="many")},
            id="profile-distinctCount-string",
        ),
        pytest.param(
            {f"{LAKE}/enrichment/relationship-profile.json": profile_with(distinctCount=2.5, nullRate="x")},
            id="profile-distinctCount-float-nullRate-string",
        ),
        pytest.param(
            {
                table_path("events", LAKE): {
                    **_table("raw", "events", "id"),
                    "columns": [{"name": "kind", "nativeType": 5, "comment": 7}],
                }
            },
            id="column-nativeType-int",
        ),
        pytest.param(
            {table_path("events", LAKE): {**_table("raw", "events", "id", "kind"), "estimatedRows": "lots", "kind": 5}},
            id="table-estimatedRows-string",
        ),
        pytest.param(
            {table_path("events", LAKE): {**_table("raw", "events", "id", "kind"), "foreignKeys": "x"}},
            id="table-foreignKeys-string",
        ),
        pytest.param(
            {f"{LAKE}/connection.json": {"connectionId": "lake", "driver": "postgres", "extractedAt": 5}},
            id="connection-extractedAt-int",
        ),
    ],
)
def test_read_tools_over_hostile_scan_values_never_crash(make_project: Callable[..., Path], files: dict) -> None:
    """Values of the wrong type inside otherwise valid scan files: entity_details and the searches still answer."""
    root = make_project({**GOOD, **files}, config=CONFIG)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    calls = [
        (
            "entity_details",
            {"connectionId": "lake", "entities": [{"table": EVENTS}, {"table": "events", "columns": "kind"}]},
        ),
        ("discover_data", {"query": "events kind click", "connectionId": "lake"}),
        ("dictionary_search", {"values": ["click", "view"], "connectionId": "lake"}),
        ("connection_list", {}),
    ]
    try:
        with (
            start_blocking_portal(backend="asyncio") as portal,
            portal.wrap_async_context_manager(Client(build_server(service))) as client,
        ):
            tools = {t.name: t for t in portal.call(client.list_tools).tools}
            for name, args in calls:
                result = portal.call(client.call_tool, name, args)
                text = result.content[0].text
                assert not result.is_error, f"{name}: {text}"
                jsonschema.validate(result.structured_content, tools[name].output_schema)
                if name == "entity_details":
                    assert [e["ok"] for e in result.structured_content["results"]] == [True, True]
    finally:
        service.close()


# ------------------------------------------------------------------ the mutation fuzzer

INTERESTING = [
    b"\x00", b"\xff", b"\xc3", b"\xe2\x80", b"\xef\xbb\xbf", b":", b": ", b"- ", b"-", b"&a ", b"*a", b"&a [*a]",
    b"[", b"]", b"{", b"}", b",", b"\n", b"\r\n", b"  ", b"\t", b"'", b'"', b"#", b"|", b">", b"? ", b"!!binary ",
    b"!!python/object/apply:os.system ['true'] ", b"!!set ", b"!!omap ", b"---\n", b"...\n", b"%YAML 1.1\n", b"null",
    b"true", b"1e999", b"-0", b".nan", b"\\u0000", b"\\ud800", b"[[[[[[[[", b"]]]]", b"{{{{", b"<<: *a",
]  # fmt: skip

MUTATION = st.one_of(
    st.tuples(
        st.just("insert"), st.floats(0, 1), st.one_of(st.sampled_from(INTERESTING), st.binary(min_size=1, max_size=8))
    ),
    st.tuples(st.just("delete"), st.floats(0, 1), st.integers(1, 64)),
    st.tuples(st.just("replace"), st.floats(0, 1), st.binary(min_size=1, max_size=4)),
    st.tuples(st.just("duplicate"), st.floats(0, 1), st.integers(1, 200)),
    st.tuples(st.just("truncate"), st.floats(0, 1), st.none()),
)


def mutate(data: bytes, mutations: list[tuple[str, float, Any]]) -> bytes:
    for op, where, arg in mutations:
        pos = int(where * len(data))
        if op == "insert":
            data = data[:pos] + arg + data[pos:]
        elif op == "delete":
            data = data[:pos] + data[pos + arg :]
        elif op == "replace":
            data = data[:pos] + arg + data[pos + len(arg) :]
        elif op == "duplicate":
            data = data[:pos] + data[pos : pos + arg] + data[pos:]
        else:
            data = data[:pos]
    return data


@dataclass(frozen=True)
class Target:
    path: str
    seed: str
    #: Whether a clean read yields documents from this very path (a profile feeds other files' documents).
    has_documents: bool = True


TARGETS = {
    # over a table the warehouse's scan holds: a source over one it does not is warned of (unscanned_sources), and a
    # warning counts as reported
    "source-yaml": Target(
        f"{SL}/fuzz.yaml", SEED_SOURCE.replace("table: analytics.fct_orders", "table: raw.purchases")
    ),
    "wiki-page": Target("wiki/global/fuzz.md", SEED_PAGE),
    "schema-shard": Target(f"{SL}/_schema/fuzz.yaml", SEED_SHARD[:6000]),
    "table-json": Target(table_path("fuzz"), SEED_TABLE),
    "profile-json": Target(f"{LAKE}/enrichment/relationship-profile.json", SEED_PROFILE, has_documents=False),
}


@pytest.fixture(scope="module")
def fuzz_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield write_files(tmp_path_factory.mktemp("fuzz") / "project", {"ktx.yaml": CONFIG, **GOOD})


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_mutated_files_never_break_read_project(name: str, fuzz_root: Path, baseline: dict[str, str]) -> None:
    target = TARGETS[name]
    seed = target.seed.encode("utf-8")
    outcomes = {"reported": 0, "read": 0}

    @settings(
        max_examples=150,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutations=st.lists(MUTATION, min_size=1, max_size=6))
    def prop(mutations: list[tuple[str, float, Any]]) -> None:
        data = mutate(seed, mutations)
        (fuzz_root / target.path).write_bytes(data)
        read: ProjectRead = read_project(load_project(fuzz_root))
        reported = [d for d in read.diagnostics if d.path == target.path]
        documents = [d for d in read.documents if d.path.split("#", 1)[0] == target.path]
        if reported:
            outcomes["reported"] += 1
        else:
            assert b"\x00" not in data, "a NUL byte was not reported"
            if target.has_documents:
                assert documents, f"{target.path} was neither reported nor read"
            outcomes["read"] += 1
        got = {d.uid: d.content_hash for d in read.documents}
        assert all(got.get(uid) == h for uid, h in baseline.items()), "a good document was lost or changed"
        assert set(LAKE_REQUIRED) <= set(got)

    prop()
    assert outcomes["reported"] and outcomes["read"], outcomes
