"""connection_list in upstream KTX's shape: its connectionType spellings, the semantic-layer-only policy and the
``_ktx_federated`` entry its sql_execution accepts (so an agent sees the same list through ktx-index)."""

from __future__ import annotations

from ktx_index.reports import ConnectionInfo
from ktx_index.tools.read_results import ConnectionEntry, ConnectionListResult

#: Upstream's connectionType for the SQL warehouses it maps; any other driver is echoed as written (trimmed).
CONNECTION_TYPES = {
    "postgres": "POSTGRESQL", "sqlserver": "SQLSERVER",
    **{d: d.upper() for d in ("sqlite", "duckdb", "mysql", "clickhouse", "snowflake", "databricks", "bigquery", "athena")},
}  # fmt: skip
#: Drivers DuckDB can attach, so upstream offers a federated connection over two or more of them.
FEDERABLE = {"postgres", "mysql", "sqlite", "duckdb"}
FEDERATED = "_ktx_federated"
SL_ONLY = "semantic-layer-only"


def connection_type(driver: str | None) -> str:
    raw = (driver or "").strip()
    return CONNECTION_TYPES.get(raw.lower(), raw or "unknown")


def connection_list(connections: list[ConnectionInfo], policies: dict[str, str | None]) -> ConnectionListResult:
    """Upstream's list: every connection in the order given (status.connection_infos sorts them by id; ktx-index adds
    the folder-only ones, ``declared: false``), a semantic-layer-only one marked, and ``_ktx_federated`` last when
    two or more can be attached together."""
    entries = []
    for c in connections:
        restricted = policies.get(c.id) == SL_ONLY
        entries.append(
            ConnectionEntry(
                id=c.id,
                name=c.id,
                connectionType=connection_type(c.driver),
                hint="Raw SQL is off for this connection (query_policy: semantic-layer-only); query it with sl_query."
                if restricted
                else None,
                queryPolicy=SL_ONLY if restricted else None,
                driver=c.driver,
                declared=c.declared,
                counts=c.counts,
            )
        )
    members = [c.id for c in connections if c.declared and (c.driver or "").strip().lower() in FEDERABLE]
    if len(members) >= 2:
        restricted = [m for m in members if policies.get(m) == SL_ONLY]
        hint = (
            f"Federated SQL is disabled: {', '.join(restricted)} {'has' if len(restricted) == 1 else 'have'} "
            "query_policy: semantic-layer-only."
            if restricted
            else "Cross-database SQL runs here (sql_execution): name tables connectionId.schema.table, or "
            'connectionId.table for sqlite, and double-quote an id that is not a bare identifier ("my-db".public.t).'
        )
        entries.append(
            ConnectionEntry(
                id=FEDERATED,
                name=FEDERATED,
                connectionType="DUCKDB",
                members=members,
                hint=hint,
                queryPolicy=SL_ONLY if restricted else None,
                declared=False,
            )
        )
    return ConnectionListResult(connections=entries)
