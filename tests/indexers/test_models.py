"""Typed documents (indexers/models.py): uids, display names, and the content hash that decides whether a
document changed."""

from typing import get_args

import pytest
from pydantic import ValidationError

from indexers.models import (
    ALL_KINDS,
    SEARCH_KINDS,
    Diagnostic,
    DiagnosticCode,
    Document,
    TableRef,
    file_of,
    make_uid,
    name_tails,
)


def test_uids_and_table_displays():
    assert make_uid("column", "warehouse", "raw.orders.id") == "column:warehouse:raw.orders.id"
    assert make_uid("wiki", None, "fiscal-calendar") == "wiki::fiscal-calendar"
    assert TableRef(catalog="c", db="raw", name="orders").display == "c.raw.orders"
    assert TableRef(name="orders").display == "orders"
    assert set(SEARCH_KINDS) < set(ALL_KINDS)
    assert file_of("semantic-layer/w/_schema/public.yaml#orders") == "semantic-layer/w/_schema/public.yaml"
    assert file_of("semantic-layer/w/orders.yaml") == "semantic-layer/w/orders.yaml"


def test_a_tables_display_name_and_each_of_its_dotted_tails_name_it():
    assert name_tails("db.Public.Orders") == ["db.public.orders", "public.orders", "orders"]
    assert name_tails("main") == ["main"]


def test_the_content_hash_follows_the_content_and_only_the_content():
    def doc(**changes):
        fields = {"uid": "table:w:t", "kind": "table", "id": "t", "name": "t", "path": "x.json"} | changes
        return Document(**fields)

    assert doc().content_hash == doc().content_hash and len(doc().content_hash) == 32
    assert doc(description="Orders").content_hash != doc().content_hash
    assert doc(attrs={"a": 1, "b": 2}).content_hash == doc(attrs={"b": 2, "a": 1}).content_hash  # key order aside
    assert doc(content_hash="given").content_hash == "given"  # a hash computed elsewhere is kept


def test_a_diagnostics_code_is_one_of_the_listed_codes():
    """The codes were listed in part, one as a constant among literals (a review): ``DiagnosticCode`` lists them
    all, and a code it does not list (a typo) is refused where the diagnostic is made."""
    assert set(get_args(DiagnosticCode)) >= {"parse_error", "wrong_shape", "unlisted", "repaired", "embed_runtime"}
    assert Diagnostic(path="a.yaml", message="m").code == "error"
    with pytest.raises(ValidationError):
        Diagnostic(path="a.yaml", message="m", code="parse-error")
