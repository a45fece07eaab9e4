"""``search``: --json is exactly the MCP tool's object for each of the three searches, the human output and
--explain, and user errors exit 1 with their next step."""

import json

from projects import run_cli

from ktx_index.cli.search_cmd import LEARNED_NOTE, render_discover
from ktx_index.service import KtxIndex
from ktx_index.tools.results import DiscoverRef, DiscoverResult, LaneScores


def test_search_json_is_exactly_the_tool_object(project):
    run_cli("rebuild", "--project", project)
    out = run_cli("search", "order_count", "--project", project, "--json", "--limit", "3")
    assert out.exit_code == 0
    service = KtxIndex(project)
    assert json.loads(out.output) == service.discover_data("order_count", limit=3).model_dump(mode="json")
    wiki = json.loads(run_cli("search", "refunds", "--tool", "wiki_search", "--project", project, "--json").output)
    assert wiki["results"][0]["key"] == "revenue"
    scoped = run_cli("search", "refunds", "--tool", "wiki_search", "--connection", "warehouse", "--project", project)
    assert scoped.exit_code == 0 and "revenue" in scoped.output
    unknown = run_cli("search", "refunds", "--tool", "wiki_search", "--connection", "nope", "--project", project)
    assert unknown.exit_code == 1 and 'Unknown connection "nope"' in unknown.output
    values = json.loads(run_cli("search", "PAID", "--tool", "dictionary_search", "--project", project, "--json").output)
    assert values["results"][0]["matches"][0]["matchedValue"] == "paid"
    service.close()


def test_human_output_and_explain(project):
    run_cli("rebuild", "--project", project)
    out = run_cli("search", "order", "count", "--project", project, "--explain")
    assert "orders.order_count" in out.output and "lexical" in out.output and "\n    because " in out.output
    wiki = run_cli("search", "refunds", "--tool", "wiki_search", "--project", project, "--explain")
    assert "revenue" in wiki.output and "fused" in wiki.output and "\n    because " in wiki.output
    assert "\n    because " not in run_cli("search", "refunds", "--tool", "wiki_search", "--project", project).output
    status = run_cli("status", "--project", project)
    assert "semantic     skipped" in status.output and "changed      0 file(s)" in status.output


def test_user_errors_exit_1_with_the_next_step(project, tmp_path):
    run_cli("rebuild", "--project", project)
    out = run_cli("search", "x", "--connection", "nope", "--project", project)
    assert out.exit_code == 1 and "Configured connections: warehouse." in out.output
    missing = run_cli("search", "x", "--project", tmp_path / "empty")
    assert missing.exit_code == 1 and "does not exist; pass --project DIR" in missing.output
    (tmp_path / "file").write_text("not a folder")
    a_file = run_cli("search", "x", "--project", tmp_path / "file")  # click's own check said so with exit 2
    assert a_file.exit_code == 1 and "is a file, not a folder; pass --project DIR" in a_file.output
    (tmp_path / "empty").mkdir()
    stray = run_cli("search", "x", "--project", tmp_path / "empty")  # no index of nothing is built there
    assert stray.exit_code == 1 and "is not a KTX project" in stray.output and "pass --project DIR" in stray.output
    assert not (tmp_path / "empty/.ktx").exists()
    (tmp_path / "empty/wiki").mkdir()
    first_search = run_cli("search", "x", "--project", tmp_path / "empty")  # no index yet: built on first use
    assert first_search.exit_code == 0 and "no refs: the project holds nothing" in first_search.output
    assert run_cli("search", "--project", project).exit_code == 2  # usage error: no words
    blank = run_cli("search", "  ", "--project", project)
    assert blank.exit_code == 2 and "the question is empty" in blank.output
    punctuation = run_cli("search", "?!?", "--project", project)  # answered with "no refs" until the 46th session
    assert punctuation.exit_code == 2 and "the question holds no words; e.g. ktx-index search" in punctuation.output


def test_options_are_read_as_the_mcp_tools_read_them_and_stale_results_say_so(project):
    run_cli("rebuild", "--project", project)
    capitals = run_cli("search", "order", "count", "--kinds", "SL_Measure", "--project", project)
    assert capitals.exit_code == 0 and "orders.order_count" in capitals.output
    assert run_cli("search", "order", "--connection", " ", "--project", project).exit_code == 0  # no filter
    misplaced = run_cli("search", "refunds", "--tool", "wiki_search", "--kinds", "table", "--project", project)
    assert misplaced.exit_code == 2 and "--kinds filters discover_data only" in misplaced.output
    blank = run_cli("search", " ", "--tool", "dictionary_search", "--project", project)
    assert blank.exit_code == 2 and "search --tool dictionary_search PAID" in blank.output
    for option in (["--limit", "3"], ["--explain"]):
        ignored = run_cli("search", "paid", "--tool", "dictionary_search", *option, "--project", project)
        assert ignored.exit_code == 2 and f"{option[0]} applies to discover_data and wiki_search only" in ignored.output
    (project / "wiki/global/revenue.md").write_text("---\nsummary: [broken\n---\nRevenue is net of refunds.\n")
    run_cli("rebuild", "--project", project)
    wiki = run_cli("search", "refunds", "--tool", "wiki_search", "--project", project)
    assert "stale: the last good version; wiki/global/revenue.md: frontmatter" in wiki.output
    assert "stale: the last good version" in run_cli("search", "revenue", "--project", project).output


def test_explain_says_why_learned_moves_mirror_each_other(capsys):
    """Two refs the learned order swaps trade their scores (+x on one, -x on the other), which reads as if the
    rows were mixed up unless the output says so; without a learned step the note stays out."""

    def ref(name: str, score: float, steps: dict[str, float]) -> DiscoverRef:
        lanes = LaneScores(lexical=0.1, semantic=0.5, exact=False, fused=score, prior=1.0, steps=steps)
        return DiscoverRef(
            kind="table", id=name, score=score, summary=None, snippet=None, matchedOn="name", lanes=lanes
        )

    render_discover(
        DiscoverResult(refs=[ref("a", 0.265, {"learned": 0.007}), ref("b", 0.258, {"learned": -0.007})]), True
    )
    assert "learned +0.007" in (out := capsys.readouterr().out) and LEARNED_NOTE in out
    render_discover(DiscoverResult(refs=[ref("a", 0.265, {"propagate": 0.01})]), True)
    assert LEARNED_NOTE not in capsys.readouterr().out
