"""discover_data, wiki_search, dictionary_search."""

from __future__ import annotations

import functools
from typing import Annotated

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from ktx_index.mcp.common import ToolSet, as_list, call, stripped
from ktx_index.search.query import MAX_QUESTION_CHARS
from ktx_index.service import KtxIndex
from ktx_index.tools.results import (
    MAX_RESULTS,
    MAX_VALUES,
    DictionarySearchResult,
    DiscoverResult,
    RefKind,
    WikiSearchResult,
)


def _kinds(value: object) -> object:
    """Kinds as a list (``as_list``), each in the enum's lower case (models write ``"Table"``), a string of
    comma-separated kinds as each of them (``"table,column"``, as entity_details reads ``columns``)."""
    items = as_list(value)
    if not isinstance(items, list):
        return items
    split = [part for item in items for part in (item.split(",") if isinstance(item, str) else [item])]
    return [part.strip().lower() if isinstance(part, str) else part for part in split if part != ""]


#: The results a search returns when its ``limit`` is not sent (or sent as null).
DEFAULT_LIMIT = 10


def _integral(value: object) -> object:
    """A whole number sent as a float (``5.0``) is the integer JSON Schema's ``integer`` admits, and null is the
    limit not sent (as null is for ``connectionId``: agents send null for an option they leave unset); strings and
    fractions still fail (the limit stays strict: ``"5"`` is not a number)."""
    if value is None:
        return DEFAULT_LIMIT
    return int(value) if isinstance(value, float) and value.is_integer() else value


RefLimit = Annotated[
    int, Field(description="Maximum refs to return.", ge=1, le=MAX_RESULTS, strict=True), BeforeValidator(_integral)
]
PageLimit = Annotated[
    int,
    Field(description="Maximum wiki pages to return.", ge=1, le=MAX_RESULTS, strict=True),
    BeforeValidator(_integral),
]


def _none_if_blank(value: object) -> object:
    """An id without the spaces around it; a blank one reads as omitted."""
    return (value.strip() or None) if isinstance(value, str) else value


#: An optional connection id: a blank string reads as omitted (each tool's argument says what it scopes).
OptionalConnection = Annotated[
    Annotated[str, Field(min_length=1)] | SkipJsonSchema[None], BeforeValidator(_none_if_blank)
]
ConnectionArg = Annotated[
    OptionalConnection,
    Field(
        description="Optional connection id. Pass it when user intent pins a specific warehouse "
        "(an empty string or null reads as omitted)."
    ),
]
WikiConnectionArg = Annotated[
    OptionalConnection,
    Field(
        description="Optional connection id: unscoped pages plus pages whose `connections` frontmatter lists it "
        "(an empty string or null reads as omitted)."
    ),
]

DISCOVER = """Search across ktx wiki pages, semantic-layer sources, measures, dimensions, raw tables, and columns, \
ranked on one relevance scale (hybrid BM25 + embeddings; exact names rank first; an empty list when nothing in the \
project is near the question; past what matches, the list goes on with the nearest items by meaning at score 0: \
leads, not matches). `confidence: "low"` means the project may not hold what was asked: the refs are its nearest \
matches, so verify them (entity_details, wiki_read) or rephrase in the project's terms before relying on them. \
Follow up with wiki_read (kind wiki), sl_read_source (sl_*: the source is the part of id before the first '.'), \
entity_details (table/column: pass tableRef). \
Example: discover_data({ query: "monthly orders by customer", connectionId: "warehouse", kinds: ["sl_source", "table"] })."""

WIKI = """Search ktx wiki pages for reusable business context (definitions, policies, gotchas). Results carry the page \
key for wiki_read; a user page shadows the global page with the same key. `confidence: "low"` means no page may \
answer the question: read the pages before relying on them. \
Example: wiki_search({ query: "revenue recognition", limit: 5 })."""

DICTIONARY = """Search profile-sampled warehouse values (and dbt enum values) to locate likely source columns for \
business values. Tolerates case, accents, spacing/separators and typos; each match names its qualified table. \
Example: dictionary_search({ values: ["Acme Corp"], connectionId: "warehouse" })."""


def tools(service: KtxIndex) -> ToolSet:
    tools = ToolSet()
    discover_at_once = functools.partial(service.answers_at_once, "discover_data")
    wiki_at_once = functools.partial(service.answers_at_once, "wiki_search")

    @tools.tool(name="discover_data", title="Discover Data", description=DISCOVER)
    async def discover_data(
        query: Annotated[
            str,
            Field(
                description='Natural-language discovery query, e.g. "monthly orders by customer" (read up to its '
                f"first {MAX_QUESTION_CHARS:,} characters).",
                min_length=1,
            ),
            BeforeValidator(stripped),
        ],
        ctx: Context,
        connectionId: ConnectionArg = None,
        kinds: Annotated[
            list[Annotated[RefKind, Field(description="Reference kind to include.")]] | SkipJsonSchema[None],
            BeforeValidator(_kinds),
            Field(
                description="Optional kind filter (a single kind string is read as a list of one, comma-separated "
                "kinds as a list, an empty list as every kind). With both kinds "
                "asked (or none), a table and the semantic-layer source over it are one ref, the source's (its "
                "tableRef names the table); so are a column and its dimension."
            ),
        ] = None,
        limit: RefLimit = DEFAULT_LIMIT,
    ) -> Annotated[CallToolResult, DiscoverResult]:
        return await call(ctx, service.discover_data, query, connectionId, kinds, limit, at_once=discover_at_once)

    @tools.tool(name="wiki_search", title="Wiki Search", description=WIKI)
    async def wiki_search(
        query: Annotated[
            str,
            Field(
                description='Natural-language wiki search query, e.g. "revenue recognition policy" (read up to its '
                f"first {MAX_QUESTION_CHARS:,} characters).",
                min_length=1,
            ),
            BeforeValidator(stripped),
        ],
        ctx: Context,
        limit: PageLimit = DEFAULT_LIMIT,
        connectionId: WikiConnectionArg = None,
    ) -> Annotated[CallToolResult, WikiSearchResult]:
        return await call(ctx, service.wiki_search, query, limit, connection_id=connectionId, at_once=wiki_at_once)

    @tools.tool(name="dictionary_search", title="Dictionary Search", description=DICTIONARY)
    async def dictionary_search(
        values: Annotated[
            list[
                Annotated[
                    str, Field(description='Business value to locate, e.g. "Acme Corp" or "enterprise".', min_length=1)
                ]
            ],
            BeforeValidator(as_list),
            Field(
                description="Values to search for in sampled warehouse dictionaries (a single string is read as "
                "a list of one).",
                min_length=1,
                max_length=MAX_VALUES,
            ),
        ],
        ctx: Context,
        connectionId: ConnectionArg = None,
    ) -> Annotated[CallToolResult, DictionarySearchResult]:
        return await call(ctx, service.dictionary_search, values, connectionId)

    return tools
