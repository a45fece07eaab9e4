"""The CLI renders what the service returns: --json is the tool's object, errors exit 1 with their next step."""

import json

import pytest
from click.testing import CliRunner

from ktx_index.cli import cli
from ktx_index.service import KtxIndex

CONFIG = "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n"
FILES = {
    "wiki/global/revenue.md": "---\nsummary: Revenue definition\ntags: [finance]\n---\n# Revenue\n\nRevenue is net of refunds.\n",
    "semantic-layer/warehouse/orders.yaml": (
        "name: orders\ntable: public.orders\ndescriptions: {user: Customer orders}\n"
        "columns:\n  - {name: status, type: string, enum_values: {dbt: [paid, refunded]}}\n"
        "measures:\n  - {name: order_count, expr: count(*), description: Number of orders}\n"
    ),
}


@pytest.fixture
def project(make_project):
    return make_project(FILES, config=CONFIG)


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def test_rebuild_json_then_noop(project):
    first = json.loads(run("rebuild", "--project", project, "--json").output)
    assert first["added"] == 6 and first["embedding_status"] == "disabled"
    second = json.loads(run("rebuild", "--project", project, "--json").output)
    assert (second["added"], second["updated"], second["scopes_read"]) == (0, 0, 0)


def test_search_json_is_exactly_the_tool_object(project):
    run("rebuild", "--project", project)
    out = run("search", "order_count", "--project", project, "--json", "--limit", "3")
    assert out.exit_code == 0
    service = KtxIndex(project)
    assert json.loads(out.output) == service.discover_data("order_count", limit=3).model_dump(mode="json")
    wiki = json.loads(run("search", "refunds", "--tool", "wiki_search", "--project", project, "--json").output)
    assert wiki["results"][0]["key"] == "revenue"
    scoped = run("search", "refunds", "--tool", "wiki_search", "--connection", "warehouse", "--project", project)
    assert scoped.exit_code == 0 and "revenue" in scoped.output
    unknown = run("search", "refunds", "--tool", "wiki_search", "--connection", "nope", "--project", project)
    assert unknown.exit_code == 1 and 'Unknown connection "nope"' in unknown.output
    values = json.loads(run("search", "PAID", "--tool", "dictionary_search", "--project", project, "--json").output)
    assert values["results"][0]["matches"][0]["matchedValue"] == "paid"
    service.close()


def test_human_output_and_explain(project):
    run("rebuild", "--project", project)
    out = run("search", "order", "count", "--project", project, "--explain")
    assert "orders.order_count" in out.output and "lexical" in out.output
    status = run("status", "--project", project)
    assert "semantic     skipped" in status.output and "changed      0 file(s)" in status.output


def test_user_errors_exit_1_with_the_next_step(project, tmp_path):
    run("rebuild", "--project", project)
    out = run("search", "x", "--connection", "nope", "--project", project)
    assert out.exit_code == 1 and "Configured connections: warehouse." in out.output
    missing = run("search", "x", "--project", tmp_path / "empty")
    assert missing.exit_code == 1
    (tmp_path / "empty").mkdir()
    first_search = run("search", "x", "--project", tmp_path / "empty")  # no index yet: built on first use
    assert first_search.exit_code == 0 and "no refs above the relevance floor" in first_search.output
    assert run("search", "--project", project).exit_code == 2  # usage error: no words


def test_status_reports_changed_files(project):
    run("rebuild", "--project", project)
    (project / "wiki/global/new-page.md").write_text("---\nsummary: new\n---\nbody\n")
    report = json.loads(run("status", "--project", project, "--json").output)
    assert report["changed_files"] == 1 and report["changed_paths"] == ["wiki/global/new-page.md"]
