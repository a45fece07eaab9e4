"""Judged queries: a question, the tool that should answer it, and the ids that do.

Two file shapes load into the same ``JudgedQuery`` list, so one scorer
(``ktx_index.evaluation.metrics``) serves ``ktx-index eval`` and the quality benchmark:

* YAML (``tests/benchmarks/judged/*.yaml``, a user's own questions): a ``queries`` list (or a
  bare list). ``relevant`` is a map id → grade (2 = answers it, 1 = also useful) or a plain list
  (grade 1 each; one id alone is a list of one); an empty or absent ``relevant`` means nothing should come back.
* JSON lines, one question per line, in the YAML's shape or in BIRD's (``bird-dev/judged-*.jsonl``):
  ids ``<db>/<schema>.<table>[.<column>]``, ``relevant`` ordered most central first. Tables get grade 2
  and columns grade 1: the table is what an agent must find first, and a column is worth less alone
  than its table. The order inside each group is not graded (the gold set is one correct SQL, not a
  ranking).

Ids are the ones the tools return (see ``ref_ids`` in ``ktx_index.evaluation.metrics``):
``wiki::<key>``, ``<kind>:<connection>:<id>`` for discover_data refs
(``table:warehouse:analytics.orders``, ``column:warehouse:analytics.orders.status``,
``sl_measure:dbt:orders.order_count``), and ``<connection>:<table>.<column>`` for
dictionary_search matches.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ktx_index.errors import InvalidInput

Tool = Literal["discover_data", "wiki_search", "dictionary_search"]
TOOLS: tuple[str, ...] = ("discover_data", "wiki_search", "dictionary_search")
TABLE_GRADE = 2
COLUMN_GRADE = 1


#: What each tool's ids look like (``ref_ids`` in ``ktx_index.evaluation.metrics``), to name a mistyped one.
ID_SHAPES = {
    "discover_data": (
        "<kind>:<connection>:<id> (e.g. table:warehouse:analytics.orders) or wiki::<key>",
        re.compile(r"^(?:wiki::|\w+:[^:]+:).+"),
    ),
    "wiki_search": ("wiki::<key>, e.g. wiki::revenue", re.compile(r"^wiki::.+")),
    "dictionary_search": ("<connection>:<table>.<column>, e.g. warehouse:orders.status", re.compile(r"^[^:]+:.+\..+")),
}


class JudgedQuery(BaseModel):
    """One judged question. ``values`` is what dictionary_search receives (defaults to [query])."""

    model_config = ConfigDict(extra="forbid")

    id: str
    tool: Tool = "discover_data"
    query: str | None = None
    values: list[str] | None = None
    connection: str | None = None
    kinds: list[str] | None = None
    type: str = Field(default="all", description="One query type per question (exact, paraphrase, ...).")
    tags: list[str] = Field(default_factory=list, description="Free labels; the report groups by each.")
    relevant: dict[str, int] = Field(default_factory=dict)
    note: str | None = None

    @field_validator("relevant", mode="before")
    @classmethod
    def _grades(cls, value: Any) -> Any:
        if value is None:
            return {}
        if isinstance(value, str):  # one id, as a lone tag is read
            value = [value]
        if isinstance(value, list):
            return {str(item): 1 for item in value}
        if not isinstance(value, dict):
            raise ValueError(f"`relevant` is a list of ids or a map id → grade (2 answers it, 1 helps), got {value!r}")
        return value

    @field_validator("tags", mode="before")
    @classmethod
    def _tags(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _text(self) -> JudgedQuery:
        if self.tool == "dictionary_search":
            if not any(v.strip() for v in self.values or []):
                if not (self.query or "").strip():
                    raise ValueError("a dictionary_search question needs `values` (or `query`), not blank")
                self.values = [self.query]
        elif not (self.query or "").strip():
            raise ValueError(f"a {self.tool} question needs `query`, words not blank (the tools refuse a blank one)")
        if any(grade < 1 for grade in self.relevant.values()):
            raise ValueError("grades in `relevant` are 1 or more (leave an id out instead of grading it 0)")
        shape, pattern = ID_SHAPES[self.tool]
        wrong = next((uid for uid in self.relevant if not pattern.match(uid)), None)
        if wrong is not None:
            raise ValueError(f"relevant id '{wrong}' is not a {self.tool} id; write {shape}")
        return self

    @property
    def text(self) -> str:
        return self.query if self.query is not None else ", ".join(self.values or [])


class JudgedSet(BaseModel):
    """The questions of one file; ``project`` names the corpus they were written for, if the file says."""

    project: str | None = None
    source: str
    queries: list[JudgedQuery]


def load_judged(path: str | Path) -> JudgedSet:
    """Read a YAML or JSON-lines file of judged questions; a bad file names the question and the fix."""
    path = Path(path)
    if not path.exists():
        raise InvalidInput(f"judged questions file {path} not found", "pass a .yaml or .jsonl file")
    if not path.is_file():
        raise InvalidInput(f"{path} is not a regular file", "pass a .yaml or .jsonl file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{path} is not UTF-8 text (invalid byte at offset {exc.start})", "save the file as UTF-8 and run again"
        ) from exc
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}", "check the file's permissions") from exc
    if path.suffix in (".jsonl", ".ndjson"):
        return JudgedSet(source=str(path), queries=_jsonl_queries(path, text))
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{path} is not valid YAML: {exc}", "fix the file and run again") from exc
    project = None
    if isinstance(data, dict):
        project = data.get("project")
        data = data.get("queries")
    if not isinstance(data, list) or not data:
        raise InvalidInput(
            f"{path} holds no questions", "write a `queries:` list (see data/demo/judged-questions.yaml)"
        )
    queries = []
    for n, item in enumerate(data, 1):
        where = f"{path} question {n}"
        if isinstance(item, dict):
            where += f" (id '{item['id']}')" if "id" in item else ""
            item = {"id": f"q{n}", **item}
        queries.append(_parse(item, where))
    _check_unique(queries, path)
    return JudgedSet(project=project, source=str(path), queries=queries)


def _parse(item: Any, where: str) -> JudgedQuery:
    try:
        return JudgedQuery.model_validate(item)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'question'}: {e['msg'].removeprefix('Value error, ')}"
            for e in exc.errors()
        )
        raise InvalidInput(f"{where}: {problems}", "fix that question and run again") from exc


def _check_unique(queries: list[JudgedQuery], path: Path) -> None:
    seen: set[str] = set()
    for q in queries:
        if q.id in seen:
            raise InvalidInput(f"{path}: question id '{q.id}' is used twice", "give each question its own id")
        seen.add(q.id)


BIRD_ID = re.compile(r"^[^/:]+/[^/:]+\.[^/:]+$")


def bird_id(raw: str, tool: str) -> tuple[str, str, bool]:
    """``<db>/<schema>.<table>[.<column>]`` → (tool id, connection, is_table).

    The connection is the database name; a display of two parts is a table, more is a column
    (BIRD tables live in one schema, ``main``, and their names hold no dot)."""
    conn, sep, display = raw.partition("/")
    if not sep or display.count(".") < 1:
        raise ValueError(f"id '{raw}' is not <db>/<schema>.<table>[.<column>]")
    is_table = display.count(".") == 1
    if tool == "dictionary_search":
        return f"{conn}:{display}", conn, is_table
    return f"{'table' if is_table else 'column'}:{conn}:{display}", conn, is_table


def bird_query(data: dict[str, Any], n: int) -> dict[str, Any]:
    """One BIRD-shaped JSON object as a ``JudgedQuery`` dict.

    The question is asked of the whole project, without a ``connection``: an agent asking it does not
    say which database holds the answer, so another database's look-alike tables compete, as they do
    for real. The tag is the database of the first (most central) id, or the note's first word when
    there are none."""
    tool = data.get("tool", "discover_data")
    relevant: dict[str, int] = {}
    conns = []
    for raw in data.get("relevant") or []:
        uid, conn, is_table = bird_id(str(raw), tool)
        relevant.setdefault(uid, TABLE_GRADE if is_table else COLUMN_GRADE)
        conns.append(conn)
    note = data.get("note") or ""
    conn = conns[0] if conns else (note.split(maxsplit=1) or [None])[0]
    return {
        "id": f"q{n}",
        "tool": tool,
        "query": data.get("query"),
        "values": data.get("values"),
        "connection": None,
        "type": data.get("kind") or "all",
        "tags": [conn] if conn else [],
        "relevant": relevant,
        "note": note or None,
    }


def _bird_shaped(data: Any) -> bool:
    """A BIRD line lists ``<db>/<schema>.<table>[.<column>]`` ids (or says its ``kind``); any other line is a
    question in the YAML's shape."""
    if not isinstance(data, dict):
        return False
    relevant = data.get("relevant")
    listed = isinstance(relevant, list) and any(isinstance(r, str) and BIRD_ID.match(r) for r in relevant)
    return listed or "kind" in data


def _jsonl_queries(path: Path, text: str) -> list[JudgedQuery]:
    queries = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path} line {n}"
        try:
            data = json.loads(line)
            bird = _bird_shaped(data)
            item = bird_query(data, n) if bird else data
        except (json.JSONDecodeError, ValueError) as exc:
            raise InvalidInput(f"{where}: {exc}", "fix that line and run again") from exc
        if isinstance(item, dict) and (bird or "id" not in item):  # a question in the YAML's shape keeps its id
            item["id"] = f"{path.stem}:{n}"
        queries.append(_parse(item, where))
    if not queries:
        raise InvalidInput(f"{path} holds no questions", "write one JSON object per line")
    _check_unique(queries, path)
    return queries
