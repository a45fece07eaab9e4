"""Scoring judged questions: MRR@10, nDCG@10, Recall@10 (and Recall@10 of the tables alone).

One implementation for ``ktx-index eval`` (a team's own questions) and the quality benchmark
(``tests/benchmarks/quality.py``, which also scores a KTX-style baseline through the same
``evaluate`` with its own runner), so a figure in docs/benchmarks.md and a user's figure mean
the same thing. Pure functions plus a runner over ``KtxIndex``; returns a typed report, never prints.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field, computed_field

from indexers.models import TableRef, display_name
from ktx_index.evaluation.judged import JudgedQuery
from ktx_index.index.store import DocStore
from ktx_index.service import KtxIndex
from ktx_index.tools.results import DictionaryMatch, DiscoverRef, TableRefOut

K = 10
#: How deep eval looks for a judged id a search missed (the tools' largest ``limit``).
DEEP = 50
#: A run of one question: per result, the ids it stands for, its own id first.
Returned = list[list[str]]


class Answer(NamedTuple):
    """A run of one question by a tool that can flag its answer as unsure (``confidence: "low"``)."""

    returned: Returned
    low: bool

    @classmethod
    def of(cls, run: Returned | Answer) -> Answer:
        """A runner's result as an answer (a tool that cannot flag one is never unsure)."""
        return run if isinstance(run, Answer) else cls(run, False)


Runner = Callable[[JudgedQuery], Returned | Answer]
METRICS = ("mrr", "ndcg", "recall", "table_recall")


class Scores(BaseModel):
    mrr: float
    ndcg: float
    recall: float
    table_recall: float | None = Field(default=None, description="Recall of the judged tables alone; None if none.")


class QueryResult(Scores):
    id: str
    tool: str
    type: str
    tags: list[str]
    text: str
    ms: float = Field(description="Wall time of the search, in-process.")
    relevant: dict[str, int]
    returned: list[str] = Field(description="The top results' ids, best first.")
    missed: list[str] = Field(description="Judged ids absent from the top k, best grade first.")
    missed_ranks: dict[str, int | None] = Field(
        default_factory=dict,
        description=f"Where each missed id of a search came in the top {DEEP} (null: not there), so a near miss "
        "tells from an absent one.",
    )
    low: bool = Field(default=False, description='Answered with confidence "low".')

    @property
    def is_miss(self) -> bool:
        return bool(self.missed) or (not self.relevant and bool(self.returned) and not self.low)


class GroupScore(BaseModel):
    tool: str
    by: Literal["all", "type", "tag"]
    name: str
    n: int
    mrr: float
    ndcg: float
    recall: float
    table_recall: float | None
    p50_ms: float
    empty: float = Field(description="Share of the questions that got nothing back.")
    low: float = Field(description='Share of the questions answered with confidence "low".')


class Answerability(BaseModel):
    """How the searches' questions (not dictionary_search's) were answered: the answerable ones kept an answer,
    the no-answer ones were declined (nothing, or confidence "low")."""

    answerable: int
    emptied: int = Field(description="Answerable questions that got no refs.")
    low: int = Field(description='Answerable questions answered with confidence "low".')
    unanswerable: int
    declined: int = Field(description='No-answer questions that got nothing, or confidence "low".')


class EvalReport(BaseModel):
    k: int
    queries: list[QueryResult]
    groups: list[GroupScore] = Field(description="Per tool (by=all), per tool and type, per tool and tag.")
    unknown_ids: dict[str, list[str]] = Field(
        default_factory=dict, description="Question id → judged ids the index does not hold (a typo scores 0)."
    )

    @computed_field  # type: ignore[prop-decorator]  # in --json too (the CLI counted them itself)
    @property
    def answerability(self) -> Answerability:
        searches = [q for q in self.queries if q.tool != "dictionary_search"]
        answerable = [q for q in searches if q.relevant]
        unanswerable = [q for q in searches if not q.relevant]
        return Answerability(
            answerable=len(answerable),
            emptied=sum(not q.returned for q in answerable),
            low=sum(q.low for q in answerable),
            unanswerable=len(unanswerable),
            declined=sum(not q.returned or q.low for q in unanswerable),
        )

    @property
    def misses(self) -> list[QueryResult]:
        return [q for q in self.queries if q.is_miss]

    def group(self, tool: str, by: str = "all", name: str = "all") -> GroupScore | None:
        return next((g for g in self.groups if (g.tool, g.by, g.name) == (tool, by, name)), None)


def dcg(gains: Sequence[float], k: int = K) -> float:
    return sum(gain / math.log2(i + 2) for i, gain in enumerate(gains[:k]))


def metrics(returned: Sequence[Iterable[str]], relevant: dict[str, int], k: int = K, low: bool = False) -> Scores:
    """Scores of one ranked list against graded ids (gain 2^grade - 1).

    A result standing for many ids (a semantic-layer source carrying its scanned table) earns
    the gain of each relevant id not already credited, since de-duplicating twins is asked
    for; nDCG is capped at 1. With nothing relevant, the question expects nothing back: every
    score is 1 for an empty list or an answer flagged ``low`` (the tool said it is unsure), else 0."""
    if not relevant:
        score = 0.0 if returned and not low else 1.0
        return Scores(mrr=score, ndcg=score, recall=score)
    seen: set[str] = set()
    gains = []
    for ids in returned[:k]:
        hit = [i for i in dict.fromkeys(ids) if i in relevant and i not in seen]
        seen.update(hit)
        gains.append(float(sum(2 ** relevant[i] - 1 for i in hit)))
    ideal = dcg([2.0**g - 1 for g in sorted(relevant.values(), reverse=True)], k)
    first = next((rank for rank, gain in enumerate(gains, 1) if gain > 0), None)
    tables = [i for i in relevant if i.startswith("table:")]
    return Scores(
        mrr=1.0 / first if first else 0.0,
        ndcg=min(1.0, dcg(gains, k) / ideal) if ideal else 0.0,
        recall=len(seen) / len(relevant),
        table_recall=sum(t in seen for t in tables) / len(tables) if tables else None,
    )


def table_display(table: TableRefOut) -> str:
    return display_name(table.catalog, table.db, table.name)


def ref_ids(ref: DiscoverRef) -> list[str]:
    """A discover_data ref's own id, then the table/column it carries (its scanned twin)."""
    conn = ref.connectionId or ""
    ids = [f"{ref.kind}:{conn}:{ref.id}"]
    if ref.tableRef is not None:
        display = table_display(ref.tableRef)
        if ref.kind in ("sl_source", "table"):
            ids.append(f"table:{conn}:{display}")
        if ref.columnName:
            ids.append(f"column:{conn}:{display}.{ref.columnName}")
    return list(dict.fromkeys(ids))


def match_id(match: DictionaryMatch) -> str:
    table = table_display(match.tableRef) if match.tableRef else match.sourceName
    return f"{match.connectionId}:{table}.{match.columnName}"


def service_runner(service: KtxIndex, k: int = K) -> Runner:
    """Runs a question through the same service methods the CLI and the MCP tools call."""

    def run(q: JudgedQuery) -> Returned:
        if q.tool == "discover_data":
            found = service.discover_data(q.text, q.connection, q.kinds, k)
            return Answer([ref_ids(r) for r in found.refs], found.confidence == "low")
        if q.tool == "wiki_search":
            pages = service.wiki_search(q.text, k)
            return Answer([[f"wiki::{r.key}"] for r in pages.results], pages.confidence == "low")
        result = service.dictionary_search(list(q.values or []), q.connection)
        return [[match_id(m)] for value in result.results for m in value.matches]

    return run


def score(q: JudgedQuery, answer: Returned | Answer, ms: float, k: int = K) -> QueryResult:
    returned, low = Answer.of(answer)
    scores = metrics(returned, q.relevant, k, low)
    found = {i for ids in returned[:k] for i in ids}
    missed = sorted((i for i in q.relevant if i not in found), key=lambda i: (-q.relevant[i], i))
    return QueryResult(
        **scores.model_dump(),
        id=q.id,
        tool=q.tool,
        type=q.type,
        tags=q.tags,
        text=q.text,
        ms=round(ms, 2),
        relevant=q.relevant,
        returned=[ids[0] for ids in returned[:k]],
        missed=missed,
        low=low,
    )


def aggregate(results: Sequence[QueryResult]) -> list[GroupScore]:
    """Means per tool, per (tool, type) and per (tool, tag); types and tags with one value are kept."""
    buckets: dict[tuple[str, str, str], list[QueryResult]] = defaultdict(list)
    for r in results:
        buckets[(r.tool, "all", "all")].append(r)
        buckets[(r.tool, "type", r.type)].append(r)
        for tag in r.tags:
            buckets[(r.tool, "tag", tag)].append(r)
    order = {"all": 0, "type": 1, "tag": 2}
    groups = []
    for (tool, by, name), rows in sorted(buckets.items(), key=lambda kv: (kv[0][0], order[kv[0][1]], kv[0][2])):
        if by == "type" and name == "all":
            continue
        tables = [r.table_recall for r in rows if r.table_recall is not None]
        groups.append(
            GroupScore(
                tool=tool,
                by=by,  # type: ignore[arg-type]
                name=name,
                n=len(rows),
                mrr=round(statistics.mean(r.mrr for r in rows), 4),
                ndcg=round(statistics.mean(r.ndcg for r in rows), 4),
                recall=round(statistics.mean(r.recall for r in rows), 4),
                table_recall=round(statistics.mean(tables), 4) if tables else None,
                p50_ms=round(statistics.median(r.ms for r in rows), 2),
                empty=round(statistics.mean(not r.returned for r in rows), 4),
                low=round(statistics.mean(r.low for r in rows), 4),
            )
        )
    return groups


def evaluate(
    queries: Sequence[JudgedQuery],
    run: Runner,
    k: int = K,
    clock: Callable[[], float] = time.perf_counter,
) -> EvalReport:
    results = []
    for q in queries:
        started = clock()
        returned = run(q)
        results.append(score(q, returned, (clock() - started) * 1000, k))
    return EvalReport(k=k, queries=results, groups=aggregate(results))


def unknown_ids(store: DocStore, queries: Sequence[JudgedQuery]) -> dict[str, list[str]]:
    """Judged ids that name nothing in the index: a typo there would silently score as a miss."""
    known = set(store.docs.hashes())
    known |= {f"wiki::{uid.split(':', 2)[2]}" for uid in known if uid.startswith("wiki:")}
    if any(q.tool == "dictionary_search" for q in queries):
        known |= set(dictionary_ids(store))
    out: dict[str, list[str]] = {}
    for q in queries:
        bad = [rid for rid in q.relevant if rid not in known]
        if bad:
            out[q.id] = bad
    return out


def dictionary_ids(store: DocStore) -> Iterable[str]:
    """The ids dictionary_search can return: one per column holding searchable values."""
    for _uid, conn, fields in store.docs.fields("dictionary_value"):
        table = fields.get("table_ref")
        name = TableRef.model_validate(table).display if table else (fields.get("attrs") or {}).get("sourceName")
        yield f"{conn}:{name}.{fields.get('column_name')}"


def evaluate_index(service: KtxIndex, queries: Sequence[JudgedQuery], k: int = K) -> EvalReport:
    """Score the questions against a project's index (built first when there is none)."""
    engine = service.ensure_index()
    report = evaluate(queries, service_runner(service, k), k)
    report.unknown_ids = unknown_ids(engine.store, queries)
    return report


def locate_misses(service: KtxIndex, queries: Sequence[JudgedQuery], report: EvalReport) -> None:
    """Where each judged id a search missed came in the top DEEP (``missed_ranks``): each such question asked
    again, neither timed nor scored, so a near miss tells from an absent one."""
    deep = service_runner(service, DEEP)
    for q, result in zip(queries, report.queries, strict=True):
        if result.missed and q.tool != "dictionary_search":
            rank = {i: n for n, ids in reversed(list(enumerate(Answer.of(deep(q)).returned, 1))) for i in ids}
            result.missed_ranks = {i: rank.get(i) for i in result.missed}
