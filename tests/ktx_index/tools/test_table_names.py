"""table_names.py alone: the shapes a table reference is sent in."""

import pytest

from ktx_index.errors import InvalidInput
from ktx_index.tools.table_names import TableName, parse_table_input, resolve


def test_a_table_reference_is_read_in_each_of_upstreams_forms():
    assert parse_table_input({"catalog": None, "db": "raw", "name": "orders"}) == (None, "raw", "orders")
    assert parse_table_input({"schema": "raw", "table": "orders"}) == (None, "raw", "orders")
    assert parse_table_input("  raw.orders ") == "raw.orders"
    for bad in ("  ", {"columns": ["id"]}, 5):
        with pytest.raises(InvalidInput) as caught:
            parse_table_input(bad)
        assert "send" in str(caught.value)


def test_a_schema_sent_again_in_the_tables_name_is_read_once():
    """``{schema: "raw", table: "raw.orders"}`` looked for ``raw.raw.orders``; a name under another schema than the
    one sent is not guessed at."""
    tables = [
        TableName("table:w:raw.orders", None, "raw", "orders"),
        TableName("table:w:mart.orders", None, "mart", "orders"),
    ]
    assert [t.display for t in resolve(tables, parse_table_input({"schema": "raw", "table": "raw.orders"}))] == [
        "raw.orders"
    ]
    assert [t.display for t in resolve(tables, (None, None, "mart.orders"))] == ["mart.orders"]
    assert resolve(tables, parse_table_input({"schema": "mart", "table": "raw.orders"})) == []
