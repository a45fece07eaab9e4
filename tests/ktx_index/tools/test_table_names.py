"""table_names.py alone: the shapes a table reference is sent in."""

import pytest

from ktx_index.errors import InvalidInput
from ktx_index.tools.table_names import parse_table_input


def test_a_table_reference_is_read_in_each_of_upstreams_forms():
    assert parse_table_input({"catalog": None, "db": "raw", "name": "orders"}) == (None, "raw", "orders")
    assert parse_table_input({"schema": "raw", "table": "orders"}) == (None, "raw", "orders")
    assert parse_table_input("  raw.orders ") == "raw.orders"
    for bad in ("  ", {"columns": ["id"]}, 5):
        with pytest.raises(InvalidInput) as caught:
            parse_table_input(bad)
        assert "send" in str(caught.value)
