"""``ktx-index eval``: score a team's own judged questions against its project's index."""

from __future__ import annotations

import click

from ktx_index.cli.common import echo_json, json_option, open_service, project_option, user_errors
from ktx_index.evaluation.judged import load_judged
from ktx_index.evaluation.metrics import DEEP, EvalReport, GroupScore, evaluate_index, locate_misses


def _cell(value: float | None) -> str:
    return f"{'-':>9}" if value is None else f"{value:>9.3f}"


def _row(g: GroupScore, tables: bool) -> str:
    label = "all" if g.by == "all" else f"{g.by} {g.name}"
    cells = "".join(_cell(v) for v in (g.mrr, g.ndcg, g.recall, *([g.table_recall] if tables else [])))
    return f"{g.tool:<18} {label:<28} {g.n:>4}{cells}"


def render(report: EvalReport, max_misses: int) -> None:
    tables = any(g.table_recall is not None for g in report.groups)
    click.echo(f"{len(report.queries)} question(s), k = {report.k}")
    header = f"{'tool':<18} {'group':<28} {'n':>4}{'MRR@10':>9}{'nDCG@10':>9}{'Rec@10':>9}"
    click.echo(header + (f"{'TblRec@10':>10}" if tables else ""))
    for g in report.groups:
        click.echo(_row(g, tables))
    a = report.answerability
    click.echo(
        f"\nanswerable questions with no refs: {a.emptied}/{a.answerable}; answered with confidence low: "
        f"{a.low}/{a.answerable}; no-answer questions declined (nothing, or low): {a.declined}/{a.unanswerable}"
    )
    misses = report.misses
    click.echo(f"\n{len(misses)} miss(es): a judged id outside the top {report.k}, or results for a no-answer question")
    for q in misses[:max_misses]:
        click.echo(f"  {q.id} [{q.tool}] {q.text!r}  MRR {q.mrr:.2f}  nDCG {q.ndcg:.2f}")
        if q.missed:
            click.echo(f"      missing:  {', '.join(_where(i, q.missed_ranks) for i in q.missed)}")
        came = ", ".join(f"{i}. {ref}" for i, ref in enumerate(q.returned[:5], 1)) or "nothing"
        click.echo(f"      came:     {came}")
    if len(misses) > max_misses:
        click.echo(f"  ... {len(misses) - max_misses} more (--max-misses, or --json for all)")
    for qid, ids in report.unknown_ids.items():
        click.echo(f"warning: {qid}: not in the index (check the spelling): {', '.join(ids)}", err=True)


@click.command("eval")
@click.argument("queries_file", metavar="QUERIES", type=click.Path(dir_okay=False))
@project_option
@json_option
@click.option("--max-misses", type=click.IntRange(0), default=20, show_default=True, help="Misses to print.")
@user_errors
def eval_command(queries_file: str, project_dir: str | None, as_json: bool, max_misses: int) -> None:
    """Score judged questions (YAML or JSON lines) against the index: MRR@10, nDCG@10, Recall@10 per tool, type and tag.

    Each question names the tool that should answer it and the ids that do (see
    data/demo/judged-questions.yaml). A JSON-lines file holds one question per line, in the YAML's
    shape or in BIRD's (ids <db>/<schema>.<table>[.<column>]). The index is built first when the
    project has none.
    """
    queries = load_judged(queries_file).queries
    service = open_service(project_dir)
    try:
        report = evaluate_index(service, queries)
        locate_misses(service, queries, report)
    finally:
        service.close()
    if as_json:
        echo_json(report)
    else:
        render(report, max_misses)


def _where(uid: str, ranks: dict[str, int | None]) -> str:
    """A missed id and where it came, when that was looked for (metrics.DEEP)."""
    if uid not in ranks:
        return uid
    rank = ranks[uid]
    return f"{uid} (rank {rank})" if rank is not None else f"{uid} (not in the top {DEEP})"
