"""Result shapes of the read tools that hydrate search refs (KTX reference §3.4–3.5, plus what KTX leaves out)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from ktx_index.search.models import Strict, TableRefOut, _absent_if_none


class WikiPage(Strict):
    key: str = Field(description="Flat page key.")
    summary: str = Field(description="Frontmatter summary (empty when absent).")
    content: str = Field(description="The Markdown body, trimmed.")
    scope: Literal["GLOBAL", "USER"] = Field(description="USER when the caller's own page shadows the global one.")
    tags: list[str] = Field(default_factory=list)
    refs: list[str] = Field(default_factory=list, description="Other wiki keys this page points to.")
    slRefs: list[str] = Field(default_factory=list, description="Semantic-layer sources as 'connection.source'.")
    path: str = Field(description="Project-relative path of the page file.")


class SlSource(Strict):
    sourceName: str
    connectionId: str
    yaml: str = Field(
        description="The raw file for standalone sources; the composed document for manifest/overlay ones."
    )
    path: str = Field(description="Where the source is defined ('<shard>#<name>' for manifest entries).")
    files: list[str] = Field(
        default_factory=list, description="Every file composed into it (base first, then overlays)."
    )


class ColumnDetails(Strict):
    name: str
    nativeType: str | None = None
    normalizedType: str | None = None
    dimensionType: str | None = None
    nullable: bool | None = None
    primaryKey: bool | None = None
    comment: str | None = None
    description: str | None = Field(None, description="Resolved description (user > ai > dbt > db), else null.")
    sampleValues: list[str] = Field(default_factory=list, description="Most frequent values in the profile sample.")
    distinctCount: int | None = Field(None, description="Distinct values in the profile sample.")
    nullRate: float | None = Field(None, description="Share of nulls in the profile sample.")


class Snapshot(Strict):
    syncId: str | None = None
    extractedAt: str | None = None
    scanRunId: str | None = None


class EntityDetails(Strict):
    ok: bool
    connectionId: str
    input: Any = Field(description="The entity as sent.")
    tableRef: TableRefOut | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    display: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    kind: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    comment: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    description: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    estimatedRows: int | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    profiledRows: int | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    columns: list[ColumnDetails] | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    foreignKeys: list[dict[str, Any]] | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    snapshot: Snapshot | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    code: (
        Literal["scan_missing", "table_not_found", "ambiguous_table", "column_not_found", "invalid_table_ref"]
        | SkipJsonSchema[None]
    ) = Field(default=None, exclude_if=_absent_if_none, description="Why ok is false.")
    message: str | SkipJsonSchema[None] = Field(default=None, exclude_if=_absent_if_none)
    candidates: list[str] | SkipJsonSchema[None] = Field(
        default=None, exclude_if=_absent_if_none, description="Tables or columns to pick from when ok is false."
    )


class EntityDetailsResult(Strict):
    entities: list[EntityDetails]


class ConnectionEntry(Strict):
    id: str
    name: str
    connectionType: str = Field(description="Driver in KTX's spelling, e.g. POSTGRESQL, SNOWFLAKE, DBT.")
    driver: str | None = None
    declared: bool = Field(description="Listed in ktx.yaml; false for a folder-only connection.")
    counts: dict[str, int] = Field(default_factory=dict, description="Indexed documents per kind.")


class ConnectionListResult(Strict):
    connections: list[ConnectionEntry]
