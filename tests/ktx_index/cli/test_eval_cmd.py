"""``ktx-index eval`` on the demo project: the scorer's report, rendered; bad ids and files reported."""

import json
import re
import shutil

import pytest
from projects import DEMO, run_cli

from ktx_index import service as service_module
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.evaluation.judged import load_judged
from ktx_index.evaluation.metrics import evaluate_index

QUESTIONS = DEMO / "judged-questions.yaml"


@pytest.fixture
def demo(tmp_path, monkeypatch):
    """A fresh demo copy; the CLI's default embedder becomes the deterministic HashEmbedder."""
    monkeypatch.setattr(service_module, "MiniLMEmbedder", lambda **_settings: HashEmbedder())
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


def test_json_is_the_scorers_report(demo, demo_service):
    out = run_cli("eval", QUESTIONS, "--project", demo, "--json")
    assert out.exit_code == 0, out.output
    report = json.loads(out.output)
    assert report["unknown_ids"] == {}  # every id in the example names a real item
    expected = evaluate_index(demo_service, load_judged(QUESTIONS).queries)
    drop = ("p50_ms",)
    assert [{k: v for k, v in g.items() if k not in drop} for g in report["groups"]] == [
        g.model_dump(exclude=set(drop)) for g in expected.groups
    ]
    tools = {g["tool"] for g in report["groups"] if g["by"] == "all"}
    assert tools == {"discover_data", "wiki_search", "dictionary_search"}
    assert {g["name"] for g in report["groups"] if g["by"] == "tag"} >= {"finance", "operations"}
    # what the human output sums up is in the JSON too (the CLI counted it itself)
    searches = [q for q in report["queries"] if q["tool"] != "dictionary_search"]
    answerable = [q for q in searches if q["relevant"]]
    assert report["answerability"]["answerable"] == len(answerable) > 0
    assert report["answerability"]["unanswerable"] == len(searches) - len(answerable) > 0
    assert report["answerability"]["emptied"] == sum(not q["returned"] for q in answerable)


def test_human_output_lists_misses_with_what_came_instead(demo, tmp_path):
    questions = tmp_path / "q.yaml"
    questions.write_text(
        "queries:\n"
        "  - {id: hit, query: refund reason code, relevant: ['column:warehouse:raw.refunds.reason_code']}\n"
        "  - {id: typo, query: refund reason code, relevant: ['column:warehouse:raw.refunds.reasoncode']}\n"
        "  - {id: deep, query: refund reason code, relevant: ['column:warehouse:raw.refunds.reason_code', "
        "'wiki::company-overview']}\n"
    )
    out = run_cli("eval", questions, "--project", demo)
    assert out.exit_code == 0
    assert "MRR@10" in out.stdout and "TblRec@10" not in out.stdout
    assert "answerable questions with no refs: 0/3; answered with confidence low: " in out.stdout
    assert "2 miss(es)" in out.stdout
    assert re.search(r"missing:  wiki::company-overview \((rank \d+|not in the top 50)\)", out.stdout)
    assert "typo [discover_data] 'refund reason code'" in out.stdout
    assert "missing:  column:warehouse:raw.refunds.reasoncode (not in the top 50)" in out.stdout
    assert "came:     1. " in out.stdout
    assert "warning: typo: not in the index (check the spelling): column:warehouse:raw.refunds.reasoncode" in out.stderr
    quiet = run_cli("eval", questions, "--project", demo, "--max-misses", "0")
    assert "... 2 more" in quiet.stdout


def test_bad_file_exits_1_with_the_fix(demo, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("queries:\n  - {tool: wiki_search}\n")
    out = run_cli("eval", bad, "--project", demo)
    assert out.exit_code == 1 and "needs `query`" in out.output and "fix that question" in out.output
    assert run_cli("eval", tmp_path / "none.yaml", "--project", demo).exit_code == 1
