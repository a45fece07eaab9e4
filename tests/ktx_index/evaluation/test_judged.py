"""Judged-question files: the YAML a team writes, the benchmark's YAML, and BIRD-shaped JSON lines."""

import json
from pathlib import Path

import pytest
from projects import REPO

from ktx_index.errors import InvalidInput
from ktx_index.evaluation.judged import bird_id, load_judged


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_yaml_lists_maps_defaults_and_values(tmp_path):
    path = write(
        tmp_path,
        "q.yaml",
        "queries:\n"
        "  - query: refunds\n    relevant: [wiki::refund-policy, 'table:wh:raw.refunds']\n"
        "  - query: paid\n    tool: dictionary_search\n    tags: finance\n    relevant: {'wh:raw.orders.status': 2}\n"
        "  - query: weather\n    type: no_answer\n"
        "  - query: orders\n    relevant: 'table:wh:raw.orders'\n",
    )
    first, second, third, fourth = load_judged(path).queries
    assert (first.id, first.tool, first.type) == ("q1", "discover_data", "all")
    assert first.relevant == {"wiki::refund-policy": 1, "table:wh:raw.refunds": 1}
    assert second.values == ["paid"] and second.tags == ["finance"] and second.relevant == {"wh:raw.orders.status": 2}
    assert third.relevant == {}
    assert fourth.relevant == {"table:wh:raw.orders": 1}  # one id, as a lone tag


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "queries:\n  - tool: wiki_search\n",
            "question 1: question: a wiki_search question needs `query`",
        ),
        (
            "queries:\n  - {id: blank, query: '   '}\n",
            "question 1 (id 'blank'): question: a discover_data question needs",
        ),
        ("queries:\n  - {id: r, query: x, relevant: 5}\n", "`relevant` is a list of ids or a map id → grade"),
        ("queries:\n  - {id: a, query: x}\n  - {id: a, query: y}\n", "question id 'a' is used twice"),
        ("queries:\n  - {query: x, relevant: {t: 0}}\n", "grades in `relevant` are 1 or more"),
        ("queries:\n  - {query: x, tool: sql}\n", "question 1: tool: Input should be"),
        ("queries:\n  - {query: x, colour: red}\n", "colour: Extra inputs are not permitted"),
        ("project: demo\n", "holds no questions"),
        ("queries: [\n", "is not valid YAML"),
    ],
)
def test_bad_yaml_names_the_question_and_the_fix(tmp_path, text, expected):
    with pytest.raises(InvalidInput, match=r"fix|write|give") as err:
        load_judged(write(tmp_path, "q.yaml", text))
    assert expected in str(err.value)


def test_missing_file():
    with pytest.raises(InvalidInput, match="not found"):
        load_judged("/nonexistent/q.yaml")


def test_bird_ids_and_grades(tmp_path):
    rows = [
        {"tool": "discover_data", "query": "ratio of EUR payers", "kind": "semantic", "note": "BIRD mini-dev db1 q1",
         "relevant": ["db1/main.customers", "db1/main.customers.Currency"]},
        {"tool": "dictionary_search", "query": "EUR", "kind": "lexical", "note": "db1 q1",
         "relevant": ["db1/main.customers.Currency", "db2/main.cards.currency"]},
        {"tool": "dictionary_search", "query": "nothing", "kind": "typo", "note": "db3 q9", "relevant": []},
    ]  # fmt: skip
    path = write(tmp_path, "judged-x.jsonl", "\n".join(json.dumps(r) for r in rows) + "\n\n")
    discover, dictionary, empty = load_judged(path).queries
    assert discover.id == "judged-x:1" and discover.connection is None and discover.tags == ["db1"]
    assert discover.type == "semantic"
    assert discover.relevant == {"table:db1:main.customers": 2, "column:db1:main.customers.Currency": 1}
    # a value whose gold columns span databases is searched everywhere
    assert dictionary.connection is None and dictionary.values == ["EUR"] and dictionary.tags == ["db1"]
    assert dictionary.relevant == {"db1:main.customers.Currency": 1, "db2:main.cards.currency": 1}
    assert empty.connection is None and empty.relevant == {}


def test_bad_bird_lines(tmp_path):
    bird_line = {"query": "q", "kind": "semantic", "relevant": ["customers"]}
    with pytest.raises(InvalidInput, match=r"line 1: id 'customers' is not <db>/<schema>\.<table>"):
        load_judged(write(tmp_path, "a.jsonl", json.dumps(bird_line)))
    with pytest.raises(InvalidInput, match="line 2"):
        load_judged(write(tmp_path, "b.jsonl", json.dumps({"query": "q"}) + "\n{not json\n"))
    assert bird_id("db/main.t.c", "dictionary_search") == ("db:main.t.c", "db", False)


def test_the_repository_question_files_load():
    files = [*sorted((REPO / "tests/benchmarks/judged").glob("*.yaml")), REPO / "data/demo/judged-questions.yaml"]
    for path in files:
        judged = load_judged(path)
        assert judged.queries and all(
            q.tool in ("discover_data", "wiki_search", "dictionary_search") for q in judged.queries
        )


def test_json_lines_in_the_yaml_shape(tmp_path):
    line = {"tool": "wiki_search", "query": "churn", "relevant": {"wiki::lapsed-subscribers": 2}}
    (question,) = load_judged(write(tmp_path, "mine.jsonl", json.dumps(line))).queries
    assert question.tool == "wiki_search" and question.relevant == {"wiki::lapsed-subscribers": 2}
    assert question.id == "mine:1"  # no id of its own: the file and line
    lines = [json.dumps({**line, "id": "churn-page"}), json.dumps({**line, "id": "other"})]
    assert [q.id for q in load_judged(write(tmp_path, "mine.ndjson", "\n".join(lines))).queries] == [
        "churn-page",
        "other",
    ]
    with pytest.raises(InvalidInput, match=r"question id 'churn-page' is used twice"):
        load_judged(write(tmp_path, "twice.jsonl", "\n".join([lines[0], lines[0]])))
    with pytest.raises(InvalidInput, match=r"line 1: .*'customers' is not a discover_data id; write <kind>:"):
        load_judged(write(tmp_path, "bad.jsonl", json.dumps({"query": "q", "relevant": ["customers"]})))


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("queries:\n  - query: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(InvalidInput, match="is not UTF-8 text"):
        load_judged(path)
