"""connection_list as a pure function of the connections and their policies: upstream's type spellings, the
semantic-layer-only marking, and who joins the federated entry (end to end in tests/mcp/test_contract.py)."""

from ktx_index.reports import ConnectionInfo
from ktx_index.tools.connections import FEDERATED, SL_ONLY, connection_list, connection_type


def info(conn_id: str, driver: str | None, declared: bool = True) -> ConnectionInfo:
    return ConnectionInfo(id=conn_id, driver=driver, declared=declared)


def test_connection_types_are_upstreams_spellings_and_other_drivers_are_echoed():
    assert [connection_type(d) for d in ("postgres", " Postgres ", "sqlserver", "duckdb")] == [
        "POSTGRESQL", "POSTGRESQL", "SQLSERVER", "DUCKDB",
    ]  # fmt: skip
    assert connection_type(" redshift ") == "redshift" and connection_type(None) == connection_type("") == "unknown"


def test_two_attachable_connections_make_a_federated_entry_last():
    result = connection_list([info("a", "postgres"), info("b", "sqlite"), info("c", "snowflake")], {})
    assert [e.id for e in result.connections] == ["a", "b", "c", FEDERATED]
    fed = result.connections[-1]
    assert fed.members == ["a", "b"] and fed.connectionType == "DUCKDB" and fed.queryPolicy is None
    assert "sql_execution" in fed.hint and not fed.declared


def test_one_attachable_connection_or_an_undeclared_folder_makes_no_federation():
    assert [e.id for e in connection_list([info("a", "postgres"), info("b", "bigquery")], {}).connections] == ["a", "b"]
    folders = connection_list([info("a", "postgres"), info("b", "mysql", declared=False)], {})
    assert FEDERATED not in [e.id for e in folders.connections]  # a folder ktx.yaml does not name cannot be attached


def test_semantic_layer_only_marks_the_connection_and_disables_the_federation_naming_each():
    connections = [info("a", "postgres"), info("b", "mysql"), info("c", "duckdb")]
    result = connection_list(connections, {"a": SL_ONLY, "c": SL_ONLY, "b": None})
    by_id = {e.id: e for e in result.connections}
    assert by_id["a"].queryPolicy == SL_ONLY and "sl_query" in by_id["a"].hint
    assert by_id["b"].queryPolicy is None and by_id["b"].hint is None
    assert by_id[FEDERATED].queryPolicy == SL_ONLY
    assert by_id[FEDERATED].hint == "Federated SQL is disabled: a, c have query_policy: semantic-layer-only."
