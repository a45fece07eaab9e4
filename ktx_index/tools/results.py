"""Result shapes of the three searches: upstream KTX's contract, field for field, plus optional fields.

These models are also the MCP tools' outputSchema, so a field added here is a field agents see. A field
upstream requires is required here under its name and type (nullable where upstream's is, and then sent as
null, never dropped); ktx-index's own fields have defaults, so they are optional in the schema, and their
descriptions start with "ktx-index:". tests/mcp/test_contract.py holds this against upstream's shapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

from ktx_index.search.lifts import STAGES

if TYPE_CHECKING:
    from ktx_index.search.candidate import Candidate

#: The most refs discover_data, or pages wiki_search, returns (upstream's limit); the CLI's --limit too.
MAX_RESULTS = 50
#: The most values one dictionary_search looks up (upstream's).
MAX_VALUES = 20

RefKind = Literal["wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column"]
MatchedOn = Literal["name", "display", "description", "comment", "expr", "sample_value", "body"]


#: What a low-confidence answer means, said in the output schema of both searches (and the tools' descriptions).
LOW_CONFIDENCE = (
    'ktx-index: present only as "low": the project may not hold what was asked (the question\'s words and meaning match '
    "it weakly); the refs are its nearest matches. Check them (entity_details, wiki_read) before relying on "
    "them, or ask again in the project's own terms; absent when the answer is confident."
)


#: Why search by meaning did not cover the whole project for a discover_data answer (its output schema).
SEMANTIC_GAP = (
    "ktx-index: present when search by meaning did not cover the whole project for this answer (its texts are still "
    "being embedded after a first start, or the model is unavailable), saying so: what matches only by meaning may "
    "be missing, so ask again once it is absent; absent when it did (or embeddings are switched off in ktx.yaml)."
)


def _absent_if_none(value: Any) -> bool:
    return value is None


def left_out_if_none(description: str) -> Any:
    """An optional field of a result, left out of it (not sent as null) when it has no value."""
    return Field(default=None, exclude_if=_absent_if_none, description=description)


#: An item read from a file that broke after it was indexed, said in the searches' and entity_details' output schemas.
STALE = (
    "ktx-index: present when the file this item comes from no longer parses: the item is its last good version, and "
    "this names the file and why (`ktx-index status` lists it too). Its latest edit is not in the answer."
)

#: Why the answer is, or is not, confident: set only with explain (``ktx-index search --explain``), never over MCP,
#: so (like a ref's ``lanes`` and a page's ``laneScores``) it stays out of the tools' outputSchema.
CONFIDENCE_REASON = "ktx-index: why the answer is confident, low or empty, with the figures read (only with explain)."


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TableRefOut(Strict):
    catalog: str | None = Field(description="Catalog (database) part, null when the warehouse has none.")
    db: str | None = Field(description="Schema/database part, null when absent.")
    name: str = Field(description="Table name.")


class LaneScores(Strict):
    lexical: float = Field(description="BM25 relevance normalised to [0, 1] against this query's best possible match.")
    semantic: float | None = Field(description="Embedding similarity mapped to [0, 1]; null when vectors are missing.")
    exact: bool = Field(description="The query is exactly this item's name or id.")
    fused: float = Field(description="The lanes fused (and weighed by kind), before the structural steps.")
    prior: float | None = left_out_if_none(
        "The weight of its kind in fusion: containers and definitions above single members, a member "
        "holding a key (an id column) below the one carrying the question's concept, unless the question asks for "
        "ids. Absent when no lane found it and a structural step added it."
    )
    steps: dict[str, float] = Field(
        default_factory=dict,
        description=f"What each structural step ({', '.join(STAGES)}) and the learned order (learned) added to the "
        "score, in the order they ran; absent steps changed nothing.",
    )

    @classmethod
    def of(cls, cand: Candidate) -> LaneScores:
        """What ranking recorded of one candidate, rounded as every score is."""
        return cls(
            lexical=round(cand.lexical, 4),
            semantic=None if cand.semantic is None else round(cand.semantic, 4),
            exact=cand.exact,
            fused=round(cand.fused, 4),
            prior=None if cand.prior is None else round(cand.prior, 4),
            steps={stage: round(change, 4) for stage, change in cand.steps.items()},
        )


class DiscoverRef(Strict):
    kind: RefKind = Field(description="What the ref points at.")
    id: str = Field(description="Id to pass to the follow-up read tool (see the tool description).")
    score: float = Field(description="Relevance in [0, 1], comparable across queries and kinds.")
    summary: str | None = Field(description="One-line description of the item, when it has one.")
    snippet: str | None = Field(description="Matched words in context (<mark>…</mark>), at most 200 characters.")
    matchedOn: MatchedOn = Field(
        description="The field that contributed most to the match (a table matched by its column names: `name`; "
        "`body` for wiki pages only)."
    )
    connectionId: str | SkipJsonSchema[None] = left_out_if_none("Connection of semantic-layer and warehouse refs.")
    tableRef: TableRefOut | SkipJsonSchema[None] = left_out_if_none(
        "The physical table: a table's or column's, the one a semantic-layer source (and its dimensions "
        "and measures) reads; send it to entity_details."
    )
    columnName: str | SkipJsonSchema[None] = left_out_if_none("Column name (columns and dimensions).")
    stale: str | SkipJsonSchema[None] = left_out_if_none(STALE)
    lanes: SkipJsonSchema[LaneScores | None] = left_out_if_none("ktx-index: per-lane scores (only with explain).")


class JoinOut(Strict):
    model_config = ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_name=True)

    from_: str = Field(
        alias="from",
        description="Id of the table or source among (or behind) the refs that declares the join: the table holding "
        "the foreign key, the source listing the join.",
    )
    to: str = Field(
        description="Id of the table or source it joins (the same one for a self-join: a row's parent). Two joins "
        "to one table without an `alias` (a semantic layer's) are two roles too: join it once per role, each "
        "under an alias of yours."
    )
    on: str = Field(
        description="The join condition as the project's metadata declares it. A scanned table's is written to paste "
        "into SQL: names quoted as the connection's SQL quotes them where needed, a schema-qualified table as "
        "`schema.table`, the columns of one constraint (as the scan names it) joined with `and`, the `to` table "
        "under its `alias` when it has one."
    )
    alias: str | SkipJsonSchema[None] = left_out_if_none(
        "The name `on` gives the `to` table, to declare in the query (JOIN Person.Address AS "
        "BillToAddress): a role of a table referenced twice, a self-join's `parent`. Absent when `on` names the "
        "table itself."
    )


class DiscoverResult(Strict):
    refs: list[DiscoverRef] = Field(
        description="Best first, up to limit: what matches the question, then (when fewer match) the nearest by "
        "meaning, at score 0; empty when nothing in the project is near the question."
    )
    joins: list[JoinOut] | SkipJsonSchema[None] = left_out_if_none(
        "ktx-index: how the tables and sources behind the refs join (declared foreign keys, semantic-layer "
        "joins and usage commonJoins; never inferred), so the JOIN can be written directly; two of them that join "
        "only through a table the refs leave out come with both joins to it (through two that join each other, the "
        "three joins); a table that references itself (an employee's manager) comes with that join too. Of a table "
        "joined in more than four roles (a match's player slots), the roles whose key column is among the refs come, "
        "or the first two; entity_details lists every foreign key."
    )
    confidence: Literal["low"] | SkipJsonSchema[None] = left_out_if_none(LOW_CONFIDENCE)
    confidenceReason: SkipJsonSchema[str | None] = left_out_if_none(CONFIDENCE_REASON)
    semantic: str | SkipJsonSchema[None] = left_out_if_none(SEMANTIC_GAP)


class WikiLane(Strict):
    lane: str = Field(description="lexical, semantic or exact.")
    status: Literal["available", "skipped", "failed", "partial"] = Field(description="Whether the lane ran.")
    requestedCandidatePoolLimit: int
    effectiveCandidatePoolLimit: int
    returnedCandidateCount: int
    weight: float
    reason: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)


class WikiResult(Strict):
    key: str = Field(description="Page key; pass it to wiki_read.")
    path: str = Field(description="Project-relative path of the page file.")
    scope: Literal["GLOBAL", "USER"] = Field(description="USER pages shadow GLOBAL pages with the same key.")
    summary: str = Field(description="The page's frontmatter summary (empty when it has none).")
    score: float = Field(description="Relevance in [0, 1], comparable across queries.")
    matchReasons: list[str] = Field(default_factory=list, description="Lanes that matched: lexical, semantic, exact.")
    lanes: list[WikiLane] | SkipJsonSchema[None] = left_out_if_none(
        "How each lane ran for this query; on the first result only (ktx-index), since it is the same for all."
    )
    snippet: str | SkipJsonSchema[None] = left_out_if_none("ktx-index: best-matching passage, matched words in <mark>.")
    stale: str | SkipJsonSchema[None] = left_out_if_none(STALE)
    laneScores: SkipJsonSchema[LaneScores | None] = left_out_if_none("ktx-index: per-lane scores (only with explain).")


class WikiSearchResult(Strict):
    results: list[WikiResult]
    totalFound: int = Field(
        description="Every page that matched the question's words or meaning (may exceed the results returned)."
    )
    confidence: Literal["low"] | SkipJsonSchema[None] = left_out_if_none(LOW_CONFIDENCE)
    confidenceReason: SkipJsonSchema[str | None] = left_out_if_none(CONFIDENCE_REASON)


class Coverage(Strict):
    sampledRows: int | None = Field(description="Rows sampled per table when profiling (largest seen).")
    valuesPerColumn: int | None = Field(description="Sample values kept per column.")
    profiledColumns: int = Field(description="Columns whose values are searchable.")
    syncId: str | None = Field(description="Scan sync the profile comes from.")
    profiledAt: str | None = Field(description="When the scan that profiled the values ran; null without a profile.")


class Searched(Strict):
    connectionId: str
    coverage: Coverage
    status: Literal["ready", "no_profile_artifact", "no_candidate_columns"]


class DictionaryMatch(Strict):
    connectionId: str
    sourceName: str = Field(description="Raw table name (KTX's field); see tableRef for the qualified table.")
    columnName: str
    matchedValue: str = Field(description="The stored value, in its original spelling.")
    cardinality: int | None = Field(description="Distinct values in the column's profile sample.")
    tableRef: TableRefOut | SkipJsonSchema[None] = left_out_if_none(
        "ktx-index: the qualified table, unambiguous across schemas."
    )
    matchType: Literal["exact", "folded", "token", "fuzzy", "abbreviation"] | SkipJsonSchema[None] = left_out_if_none(
        "ktx-index: exact > folded (case/accents) > token > fuzzy > abbreviation (a stored code the value's words "
        "abbreviate: 'Asia Pacific' → APAC, 'Canadian dollars' → CAD, 'Vermont' → VT)."
    )
    score: float | SkipJsonSchema[None] = left_out_if_none("ktx-index: match strength in [0, 1].")
    origin: Literal["profile", "dbt_enum"] | SkipJsonSchema[None] = left_out_if_none(
        "ktx-index: profile sample value or dbt enum_values."
    )


class DictionaryMiss(Strict):
    connectionId: str
    reason: Literal["no_profile_artifact", "no_candidate_columns", "value_not_in_sample"]


class ValueResult(Strict):
    value: str = Field(description="The value searched, echoed verbatim.")
    matches: list[DictionaryMatch]
    misses: list[DictionaryMiss]


class DictionarySearchResult(Strict):
    searched: list[Searched]
    results: list[ValueResult]
