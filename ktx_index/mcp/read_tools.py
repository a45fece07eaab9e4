"""connection_list, wiki_read, entity_details, sl_read_source."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.types import CallToolResult
from pydantic import BaseModel, BeforeValidator, Field
from pydantic.json_schema import SkipJsonSchema

from ktx_index.mcp.common import ToolSet, as_list, call, stripped
from ktx_index.service import KtxIndex
from ktx_index.tools.read_results import MAX_ENTITIES, ConnectionListResult, EntityDetailsResult, SlSource, WikiPage

ConnectionId = Annotated[
    str, Field(description="Connection id (see connection_list).", min_length=1), BeforeValidator(stripped)
]


class TableRefIn(BaseModel):
    """Canonical table reference, as discover_data returns it in tableRef. Upstream requires catalog and db
    (null when absent); here a missing one reads as null, and a null db matches any schema."""

    catalog: str | None = Field(None, description="Catalog part, null when the warehouse has none (may be omitted).")
    db: str | None = Field(None, description="Schema/database part, null when absent (may be omitted).")
    name: str = Field(description="Table name.", min_length=1)


class SchemaTableIn(BaseModel):
    """The {schema, table} shape models often send (upstream rejects it); read as catalog null, db = schema."""

    schema_: str | None = Field(None, alias="schema", description="Schema name.")
    table: str = Field(description="Table name.", min_length=1)


class EntityIn(BaseModel):
    """One table to read. Unknown keys are dropped, here and in the table object, as upstream does."""

    table: Annotated[
        Annotated[str, Field(min_length=1)] | TableRefIn | SchemaTableIn,
        Field(
            description='A table: display string ("public.orders" or "orders"), {catalog, db, name} as in '
            "discover_data's tableRef, or (beyond upstream) {schema, table}."
        ),
    ]
    columns: Annotated[
        list[Annotated[str, Field(min_length=1)]] | SkipJsonSchema[None],
        BeforeValidator(as_list),
        Field(
            description="Optional column names to return (case-insensitive); all columns when omitted. "
            "A single string is read as a list of one, and comma-separated names as a list."
        ),
    ] = None


def entity_shape(value: object) -> object:
    """The shapes models drift into for one entity, read as ``{table, columns}``: the table alone (a display string
    or a table object), a discover_data ref or its ``tableRef`` (``{tableRef: {...}}``), and ``{schema, table}``
    at the entity's own level (``{schema: "raw", table: "orders"}``)."""
    return _shaped(value)[0]


def _shaped(value: object) -> tuple[object, tuple[str, ...]]:
    """``entity_shape``'s reading, and the keys of ``value`` it read beyond ``EntityIn``'s."""
    if isinstance(value, str):
        return {"table": value}, ()
    if not isinstance(value, dict) or isinstance(value.get("table"), dict):
        return value, ()
    if "table" not in value:
        if isinstance(value.get("tableRef"), dict):
            return {**value, "table": value["tableRef"]}, ("tableRef",)
        if "name" in value:  # {catalog, db, name} sent as the entity
            read = tuple(k for k in ("catalog", "db", "name") if k in value)
            return {"table": {k: value[k] for k in read}, **_columns(value)}, read
    elif isinstance(value.get("schema"), str):
        return {"table": {"schema": value["schema"], "table": value["table"]}, **_columns(value)}, ("schema",)
    return value, ()


def read_beyond_schema(tool: str, arguments: dict[str, Any]) -> set[str]:
    """Dotted paths of the keys a call's own validators read beyond the tool's inputSchema (entity_details' entity
    shapes, ``entity_shape``): the call log does not call them ignored. Only the keys actually read: a ``schema``
    beside a table object is still dropped, and said so."""
    entities = arguments.get("entities") if tool == "entity_details" else None
    if not isinstance(entities, list):
        return set()
    return {f"entities.{i}.{key}" for i, entity in enumerate(entities) for key in _shaped(entity)[1]}


def _columns(value: dict[str, Any]) -> dict[str, Any]:
    return {"columns": value["columns"]} if "columns" in value else {}


def _entity_dict(entity: EntityIn) -> dict[str, Any]:
    table = entity.table
    if isinstance(table, TableRefIn):
        ref: Any = table.model_dump()
    elif isinstance(table, SchemaTableIn):  # table_names.parse_table_input reads it as catalog null, db schema
        ref = table.model_dump(by_alias=True)
    else:
        ref = table
    out: dict[str, Any] = {"table": ref}
    if entity.columns:
        out["columns"] = entity.columns
    return out


def tools(service: KtxIndex) -> ToolSet:
    tools = ToolSet()

    @tools.tool(
        name="connection_list",
        title="Connection List",
        description="List the project's connections (those ktx.yaml declares and the folders present), sorted by id, "
        "with their connectionType; "
        "a semantic-layer-only one carries queryPolicy and a hint, and _ktx_federated (last, with its members) is "
        "the cross-database SQL connection when two or more can be joined. Example: connection_list({}).",
        idempotent=True,
    )
    async def connection_list() -> Annotated[CallToolResult, ConnectionListResult]:
        return await call(None, service.connection_list)

    @tools.tool(
        name="wiki_read",
        title="Wiki Read",
        description="Read a ktx wiki page by the key wiki_search or discover_data returned (your user page first, "
        'then the global one; "global/<key>" or "user/<key>" picks a scope). Example: wiki_read({ key: "revenue" }).',
        idempotent=True,
    )
    async def wiki_read(
        key: Annotated[
            str,
            Field(
                description='Wiki page key returned by wiki_search, e.g. "revenue" or "global/revenue".', min_length=1
            ),
        ],
    ) -> Annotated[CallToolResult, WikiPage]:
        return await call(None, service.wiki_read, key)

    @tools.tool(
        name="entity_details",
        title="Entity Details",
        description="Read table and column metadata from the latest scan snapshot of each table, with each "
        "column's sample values, distinct count and null rate from the profile, and the table's description. "
        "One result per entity, in order: ok true with the table, or ok false with error.code (scan_missing, "
        "table_not_found, ambiguous_table, column_not_found) and candidates to send instead. "
        'Example: entity_details({ connectionId: "warehouse", entities: [{ table: { catalog: null, db: "public", '
        'name: "orders" }, columns: ["id"] }] }).',
        idempotent=True,
    )
    async def entity_details(
        connectionId: ConnectionId,
        entities: Annotated[
            list[Annotated[EntityIn, BeforeValidator(entity_shape)]],
            Field(
                description=f"Tables to read (1 to {MAX_ENTITIES}). Beyond upstream, an entity may also be sent as its "
                "table "
                'alone ("public.orders"), as a discover_data ref (its tableRef is read) or as {schema, table}.',
                min_length=1,
                max_length=MAX_ENTITIES,
            ),
        ],
    ) -> Annotated[CallToolResult, EntityDetailsResult]:
        return await call(None, service.entity_details, connectionId, [_entity_dict(e) for e in entities])

    @tools.tool(
        name="sl_read_source",
        title="Semantic Layer Read Source",
        description="Read a semantic-layer YAML source by connection id and source name (the raw file for a "
        "standalone source, the composed document for manifest and overlay sources). "
        'Example: sl_read_source({ connectionId: "warehouse", sourceName: "orders" }).',
        idempotent=True,
    )
    async def sl_read_source(
        connectionId: Annotated[ConnectionId, Field(description="Connection id that owns the semantic-layer source.")],
        sourceName: Annotated[
            str,
            Field(
                description='Semantic-layer source name without ".yaml", e.g. "orders" (in any case when only one '
                "source has it; a source named as its table may be sent as that table, as a ref's tableRef shows "
                'it: "analytics.orders"; or after its connection, as a wiki page\'s sl_refs list it: '
                '"warehouse.orders").',
                min_length=1,
            ),
            BeforeValidator(stripped),
        ],
    ) -> Annotated[CallToolResult, SlSource]:
        return await call(None, service.sl_read_source, connectionId, sourceName)

    return tools
