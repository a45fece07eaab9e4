"""Result shapes of the read tools that hydrate search refs (reference/ktx-upstream-contract.md §3, §4 and §5,
plus what KTX leaves out)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from ktx_index.tools.results import STALE, Strict, TableRefOut, left_out_if_none

#: The most tables one entity_details reads (upstream's).
MAX_ENTITIES = 20


class WikiPage(Strict):
    key: str = Field(description="Flat page key.")
    summary: str = Field(description="Frontmatter summary (empty when absent).")
    content: str = Field(description="The Markdown body, trimmed.")
    scope: Literal["GLOBAL", "USER"] = Field(description="USER when the caller's own page shadows the global one.")
    tags: list[str] = Field(default_factory=list, description="Frontmatter tags.")
    refs: list[str] = Field(default_factory=list, description="Other wiki keys this page points to.")
    slRefs: list[str] = Field(default_factory=list, description="Semantic-layer sources as 'connection.source'.")
    path: str = Field("", description="ktx-index: project-relative path of the page file.")
    stale: str | SkipJsonSchema[None] = left_out_if_none(
        "ktx-index: present when the page no longer reads (its frontmatter does not parse, or it was emptied): it names "
        "the file and why. The page is then its last good version, as wiki_search serves it; for a page never read "
        "whole, the whole file with empty fields."
    )


class SlSource(Strict):
    sourceName: str = Field(description="The source's name (no .yaml).")
    yaml: str = Field(
        description="The raw file for standalone sources; the composed document for manifest/overlay ones."
    )
    connectionId: str = Field("", description="ktx-index: the connection the source belongs to.")
    path: str = Field("", description="ktx-index: where it is defined ('<shard>#<name>' for manifest entries).")
    files: list[str] = Field(
        default_factory=list, description="ktx-index: every file composed into it (base first, then overlays)."
    )
    stale: str | SkipJsonSchema[None] = left_out_if_none(
        "ktx-index: present when a file of this source no longer parses: it names the file and why. The document is "
        "then its last good version, as discover_data serves it; for a file never read, composed without it "
        "(`ktx-index status` lists it too)."
    )


DimensionType = Literal["time", "string", "number", "boolean"]
TableKind = Literal["table", "view", "external", "event_stream"]
EntityErrorCode = Literal["scan_missing", "table_not_found", "ambiguous_table", "column_not_found"]


class ColumnDetails(Strict):
    name: str
    nativeType: str = Field(description="The warehouse's own type.")
    normalizedType: str = Field(description="The type in KTX's normalised spelling.")
    dimensionType: DimensionType = Field(description="How the semantic layer treats it.")
    nullable: bool
    primaryKey: bool
    comment: str | None = Field(description="The warehouse comment, null when there is none.")
    description: str | None = Field(None, description="ktx-index: resolved description (user > ai > dbt > db).")
    sampleValues: list[str] = Field(
        default_factory=list, description="ktx-index: most frequent values in the profile sample."
    )
    distinctCount: int | None = Field(None, description="ktx-index: distinct values in the profile sample.")
    nullRate: float | None = Field(None, description="ktx-index: share of nulls in the profile sample.")


class ForeignKey(Strict):
    fromColumn: str
    toCatalog: str | None
    toDb: str | None
    toTable: str
    toColumn: str
    constraintName: str | None


class Snapshot(Strict):
    syncId: str = Field(description="The scan snapshot the table comes from.")
    extractedAt: str = Field(description="When that scan ran (ISO 8601).")
    scanRunId: str | None


class EntityFound(Strict):
    ok: Literal[True]
    connectionId: str
    tableRef: TableRefOut
    display: str = Field(
        description="The table as the scan names it (db.name, e.g. raw.orders): the id discover_data gives it. Quote "
        "its parts as your SQL needs; discover_data's joins write them quoted."
    )
    kind: TableKind
    comment: str | None = Field(description="The warehouse comment, null when there is none.")
    estimatedRows: int | None = Field(description="Row estimate from the scan, null when unknown.")
    columns: list[ColumnDetails] = Field(description="Every column, or those asked for, in the table's order.")
    foreignKeys: list[ForeignKey]
    snapshot: Snapshot
    description: str | None = Field(None, description="ktx-index: resolved table description, else null.")
    profiledRows: int | None = Field(None, description="ktx-index: rows the profile sampled.")
    stale: str | SkipJsonSchema[None] = left_out_if_none(STALE)


class TableCandidate(Strict):
    tableRef: TableRefOut
    display: str


class EntityError(Strict):
    code: EntityErrorCode = Field(description="Why the table could not be read.")
    message: str = Field(description="What went wrong and what to send instead.")
    candidates: list[TableCandidate] | list[str] | SkipJsonSchema[None] = left_out_if_none(
        "Tables to pick from (table codes: those with a column of the name sent, then the nearest "
        "names, closest first), or the table's column names (column_not_found: the nearest to each name sent "
        "first, then the table's order)."
    )


class EntityFailed(Strict):
    ok: Literal[False]
    connectionId: str
    table: str | TableRefOut = Field(description="The table as sent ({schema, table} read as {catalog, db, name}).")
    snapshot: Snapshot | SkipJsonSchema[None] = left_out_if_none("The connection's latest scan, when there is one.")
    error: EntityError


class EntityDetailsResult(Strict):
    results: list[EntityFound | EntityFailed] = Field(description="One item per entity sent, in the same order.")


QueryPolicy = Literal["semantic-layer-only"]


class ConnectionEntry(Strict):
    id: str
    name: str = Field(description="The same as id.")
    connectionType: str = Field(
        description="Upstream's spelling: POSTGRESQL, SQLSERVER, SNOWFLAKE, … for SQL warehouses; the driver as "
        "written for the others (dbt, metabase, mongodb); unknown when there is none."
    )
    members: list[str] | SkipJsonSchema[None] = left_out_if_none("_ktx_federated only: the connections it joins.")
    hint: str | SkipJsonSchema[None] = left_out_if_none("How to query it, when there is something to know.")
    queryPolicy: QueryPolicy | SkipJsonSchema[None] = left_out_if_none("Set when raw SQL is off for it (use sl_query).")
    driver: str | SkipJsonSchema[None] = left_out_if_none("ktx-index: the ktx.yaml driver as written.")
    declared: bool = Field(True, description="ktx-index: listed in ktx.yaml; false for a folder-only connection.")
    counts: dict[str, int] = Field(default_factory=dict, description="ktx-index: indexed documents per kind.")


class ConnectionListResult(Strict):
    connections: list[ConnectionEntry] = Field(description="Sorted by id; _ktx_federated, when there is one, last.")
