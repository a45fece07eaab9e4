"""The shape of the code: no import cycles between our modules (counting imports under TYPE_CHECKING and inside
functions: a helper that needs two attributes of the service is passed those, not the service), every import
running with the data flow (the layers), and SQL run only by the store (ktx_index/index/store/)."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("ktx_index", "indexers")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from pkg import sub` imports the submodule; `from mod import name` the module
                subs = [f"{node.module}.{a.name}" for a in node.names]
                targets = [t if t in modules else node.module for t in subs]
            edges.update(t for t in targets if t in modules and t != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_no_import_cycles():
    graph = import_graph()
    assert graph.get("ktx_index.service")
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


#: The layers in the order data flows (docs/architecture.md's map); a module imports only from its own layer or
#: one listed before it. The shared vocabulary (errors, reports, logs, tokenising, background threads) sits under
#: everything.
LAYERS = (
    (
        "ktx_index.errors",
        "ktx_index.reports",
        "ktx_index.logs",
        "ktx_index.analysis",
        "ktx_index.background",
        "indexers",
    ),
    ("ktx_index.embedding",),
    ("ktx_index.index",),
    ("ktx_index.snapshot",),
    ("ktx_index.search",),
    ("ktx_index.tools",),
    ("ktx_index.service",),
    ("ktx_index.evaluation", "ktx_index.watcher", "ktx_index.mcp", "ktx_index.cli", "ktx_index"),
)


def layer_of(module: str) -> int:
    best = max((p for layer in LAYERS for p in layer if module == p or module.startswith(p + ".")), key=len)
    return next(i for i, layer in enumerate(LAYERS) if best in layer)


def test_layers_import_only_downwards():
    upward = [
        f"{a} -> {b}"
        for a, targets in import_graph().items()
        for b in targets
        if layer_of(b) > layer_of(a) and not b.startswith(a + ".")
    ]
    assert not upward, "imports against the data flow:\n" + "\n".join(sorted(upward))


#: The modules of the built-in indexers: the write path reads them through ``indexers.Indexer`` alone.
CONCRETE_INDEXERS = frozenset({"indexers.wiki", "indexers.semantic_layer", "indexers.scans"})


def test_the_builder_names_no_concrete_indexer():
    """architecture.md's "How to add an indexer" registers one in ``default_indexers`` alone: the builder imported
    two indexers to name the families the source check reads (a review), which ``index/checks.py`` declares now."""
    assert not import_graph()["ktx_index.index.builder"] & CONCRETE_INDEXERS


#: The one folder whose code runs SQL (ktx_index/index/store/): the rest asks its table families for rows.
STORE = REPO / "ktx_index" / "index" / "store"
SQL_CALLS = frozenset({"execute", "executemany", "executescript"})


def sql_calls(source: str) -> list[int]:
    """Lines that run SQL: a cursor's or connection's execute*, or opening a database with sqlite3.connect."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = node.func.value
            named_sqlite3 = isinstance(target, ast.Name) and target.id == "sqlite3"
            if node.func.attr in SQL_CALLS or (node.func.attr == "connect" and named_sqlite3):
                lines.append(node.lineno)
    return sorted(lines)


def test_only_the_store_runs_sql():
    outside = [
        f"{path.relative_to(REPO)}:{line}"
        for pkg in PACKAGES
        for path in sorted((REPO / pkg).rglob("*.py"))
        if STORE not in path.parents
        for line in sql_calls(path.read_text())
    ]
    assert not outside, "SQL outside ktx_index/index/store/ (add a method to its table family):\n" + "\n".join(outside)
    assert sql_calls((STORE / "sql.py").read_text())  # the scan sees the store's own


def test_the_sql_scan_finds_each_form():
    source = "db = sqlite3.connect(p)\nstore.db.execute('x')\ncur.executemany(q, r)\ndb.executescript(s)\n"
    assert sql_calls(source) == [1, 2, 3, 4]
    assert sql_calls("pool.connect(host)\nrun(sql)\n") == []
