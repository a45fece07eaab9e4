"""``ktx-index search``: the three searches from the command line."""

from __future__ import annotations

import click

from indexers.models import SEARCH_KINDS, display_name
from ktx_index.cli.common import echo_json, given, json_option, open_service, project_option, user_errors
from ktx_index.errors import has_words
from ktx_index.tools.results import MAX_RESULTS, DictionarySearchResult, DiscoverResult, LaneScores, WikiSearchResult


def render_stale(stale: str | None) -> None:
    """A result read from its file's last good version says so, under its summary (refs and pages alike)."""
    if stale:
        click.echo(f"      stale: the last good version; {stale}")


def render_discover(result: DiscoverResult, explain: bool) -> None:
    render_verdict(
        bool(result.refs),
        result.confidence,
        result.confidenceReason,
        empty="no refs: the project holds nothing for this question",
        low="confidence low: the project may not hold this; these are its nearest matches",
    )
    for i, ref in enumerate(result.refs, 1):
        where = f" [{ref.connectionId}]" if ref.connectionId else ""
        click.echo(f"{i:>2}. {ref.score:.3f}  {ref.kind:<12} {ref.id}{where}  (matched on {ref.matchedOn})")
        if ref.summary:
            click.echo(f"      {ref.summary[:150]}")
        render_stale(ref.stale)
        if explain and ref.lanes:
            click.echo(f"      {render_lanes(ref.lanes)}")
    if explain and any(ref.lanes and "learned" in ref.lanes.steps for ref in result.refs):
        click.echo(LEARNED_NOTE)


#: Why two refs' ``learned`` changes mirror each other: the step keeps the pipeline's scores and hands them out in
#: its own order (search/learned.py), so a ref it moves up takes the score of the one it passes.
LEARNED_NOTE = (
    "learned: the learned order's move; it hands the pipeline's scores out best first, so two refs it swaps "
    "trade their scores"
)


def render_verdict(found: bool, confidence: str | None, reason: str | None, *, empty: str | None, low: str) -> None:
    """The answer's verdict: nothing found, low, or (said only with --explain) high; --explain adds why."""
    head = empty if not found else low if confidence == "low" else "confidence high" if reason else None
    if head:
        click.echo(head)
    if reason:
        click.echo(f"    because {reason}")


def render_lanes(lanes: LaneScores) -> str:
    sem = "-" if lanes.semantic is None else f"{lanes.semantic:.3f}"
    prior = "-" if lanes.prior is None else f"{lanes.prior:.3f}"
    steps = "".join(f"  {stage} {change:+.3f}" for stage, change in lanes.steps.items())
    return f"lexical {lanes.lexical:.3f}  semantic {sem}  exact {lanes.exact}  prior {prior}  fused {lanes.fused:.3f}{steps}"


def render_wiki(result: WikiSearchResult, explain: bool) -> None:
    click.echo(f"{result.totalFound} page(s) found")
    render_verdict(
        bool(result.results),
        result.confidence,
        result.confidenceReason,
        empty=None,  # the count says it
        low="confidence low: no page may answer this; read them before relying on them",
    )
    for i, page in enumerate(result.results, 1):
        click.echo(f"{i:>2}. {page.score:.3f}  {page.key} ({page.scope.lower()})  {', '.join(page.matchReasons)}")
        if page.summary:
            click.echo(f"      {page.summary[:150]}")
        render_stale(page.stale)
        if explain and page.snippet:
            click.echo(f"      {page.snippet}")
        if explain and page.laneScores:
            click.echo(f"      {render_lanes(page.laneScores)}")


def render_dictionary(result: DictionarySearchResult) -> None:
    for value in result.results:
        click.echo(f"{value.value!r}: {len(value.matches)} match(es)")
        for match in value.matches:
            ref = match.tableRef
            table = display_name(ref.catalog, ref.db, ref.name) if ref else match.sourceName
            click.echo(
                f"   {match.matchType:<6} {match.matchedValue!r} in {match.connectionId}:{table}.{match.columnName}"
            )
        for miss in value.misses:
            click.echo(f"   miss   {miss.connectionId}: {miss.reason}")


@click.command("search")
@click.argument("words", nargs=-1, required=True)
@project_option
@click.option(
    "--tool",
    type=click.Choice(["discover_data", "wiki_search", "dictionary_search"]),
    default="discover_data",
    show_default=True,
    help="Which search to run. For dictionary_search each word is a value (quote multi-word values).",
)
@click.option(
    "--kinds",
    "kinds",
    multiple=True,
    type=click.Choice(SEARCH_KINDS, case_sensitive=False),
    help="discover_data kind filter (repeatable).",
)
@click.option(
    "--connection",
    "connection_id",
    default=None,
    help="Connection id to search in (wiki_search: unscoped pages plus pages tagged with it).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_RESULTS),
    default=10,
    show_default=True,
    help="Results to return (not dictionary_search).",
)
@json_option
@click.option(
    "--explain",
    is_flag=True,
    help="Add each result's lane scores and why the answer is (not) confident (not dictionary_search).",
)
@user_errors
def search_command(
    words: tuple[str, ...],
    project_dir: str | None,
    tool: str,
    kinds: tuple[str, ...],
    connection_id: str | None,
    limit: int,
    as_json: bool,
    explain: bool,
) -> None:
    """Search the index. --json prints exactly the object the MCP tool returns."""
    searched = "".join(words)
    if not searched.strip() or (tool != "dictionary_search" and not has_words(searched)):
        example = (
            "--tool dictionary_search PAID 'North America'"
            if tool == "dictionary_search"
            else "monthly orders by customer"
        )
        empty = "is empty" if not searched.strip() else "holds no words"
        raise click.BadParameter(f"the question {empty}; e.g. ktx-index search {example}", param_hint="WORDS")
    if kinds and tool != "discover_data":
        raise click.BadParameter(f"--kinds filters discover_data only; drop it for {tool}", param_hint="--kinds")
    if tool == "dictionary_search" and (explain or given("limit")):
        option = "--explain" if explain else "--limit"
        raise click.BadParameter(
            f"{option} applies to discover_data and wiki_search only; drop it for dictionary_search", param_hint=option
        )
    connection_id = (connection_id or "").strip() or None  # an empty id is no filter, as the MCP tools read it
    service = open_service(project_dir)
    try:
        if tool == "dictionary_search":
            result = service.dictionary_search(list(words), connection_id)
        elif tool == "wiki_search":
            result = service.wiki_search(" ".join(words), limit, connection_id=connection_id, explain=explain)
        else:
            result = service.discover_data(" ".join(words), connection_id, list(kinds) or None, limit, explain)
    finally:
        service.close()
    if as_json:
        echo_json(result)
    elif isinstance(result, DiscoverResult):
        render_discover(result, explain)
    elif isinstance(result, WikiSearchResult):
        render_wiki(result, explain)
    else:
        render_dictionary(result)
