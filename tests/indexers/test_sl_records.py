"""Semantic-layer source records (indexers/sl_records.py): description precedence, overlays composed onto
their base whatever the file order, and what is reported instead of dropped."""

import pytest
import yaml
from projects import SL_OVERLAY, SL_SHARD, SL_STANDALONE, scan_files

from indexers import load_project, read_project
from indexers.sl_records import (
    compose_overlay,
    hand_written,
    is_manifest_entry,
    load_records,
    project_manifest_entry,
    resolve_description,
)


def warehouse_records(make_project, files: dict[str, str]):
    """load_records of the ``warehouse`` connection of a project holding ``files``."""
    return load_records(load_project(make_project(files)), "warehouse")


def test_description_resolution_order():
    assert resolve_description({"db": "d", "ai": "a", "dbt": "b"}) == "a"
    assert resolve_description({"user": " u ", "ai": "a"}) == "u"
    assert resolve_description({"ktx": "k"}) == "k"
    assert resolve_description({"user": "  "}, "legacy") == "legacy"
    assert resolve_description(None) == ""


def test_overlay_composes_onto_manifest_regardless_of_file_order(make_project):
    records, diagnostics, _held = warehouse_records(
        make_project,
        {
            "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD,
            "semantic-layer/warehouse/a-orders-overlay.yaml": SL_OVERLAY,  # sorts before nothing in particular
            "semantic-layer/warehouse/subscriptions.yaml": SL_STANDALONE,
        },
    )
    assert diagnostics == []
    orders = records["orders"]
    assert orders.path == "semantic-layer/warehouse/_schema/public.yaml#orders"
    assert orders.overlays == ["semantic-layer/warehouse/a-orders-overlay.yaml"]
    assert resolve_description(orders.data["descriptions"]) == "Paid and refunded customer orders"
    names = [c["name"] for c in orders.data["columns"]]
    assert names == ["id", "status", "ordered_at", "is_paid"]
    assert orders.data["grain"] == ["id"]
    composed = yaml.safe_load(orders.yaml_text())
    assert composed["measures"][0]["name"] == "order_count"
    assert records["subscriptions"].yaml_text() == SL_STANDALONE  # standalone read back verbatim


def test_overlay_without_base_and_broken_files_are_reported(make_project):
    root = make_project(
        {
            "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD,
            "semantic-layer/warehouse/ghost.yaml": "name: ghost\nmeasures: []\n",
            "semantic-layer/warehouse/broken.yaml": "name: SIGNED_UP\ncolumns: [unterminated\n",
            "semantic-layer/warehouse/_schema/bad.yaml": "tables: [1, 2",
            "semantic-layer/warehouse/subscriptions.yaml": SL_STANDALONE,
        }
    )
    project = load_project(root)
    records, diagnostics, _held = load_records(project, "warehouse")
    reasons = {d.path.rsplit("/", 1)[1]: d.message for d in diagnostics}
    assert "no base source" in reasons["ghost.yaml"]
    assert "invalid YAML" in reasons["broken.yaml"] and "invalid YAML" in reasons["bad.yaml"]
    assert records["SIGNED_UP"].origin == "broken" and "[unterminated" in records["SIGNED_UP"].yaml_text()
    read = read_project(project)
    kinds = {d.uid for d in read.documents if d.kind == "sl_source"}
    assert kinds == {"sl_source:warehouse:orders", "sl_source:warehouse:customers", "sl_source:warehouse:subscriptions"}


def test_an_overlay_whose_base_is_in_a_shard_that_does_not_parse_waits_for_it_and_known_names_say_how_many_more(
    make_project,
):
    """A broken shard made an overlay of one of its entries an error, "no base source", though the source was still
    served from its last good version (an outside pass); and the names known were cut at 8 without a word."""
    others = {f"semantic-layer/warehouse/s{i}.yaml": f"name: s{i}\ntable: public.s{i}\n" for i in range(9)}
    _records, diagnostics, _held = warehouse_records(
        make_project,
        others
        | {
            "semantic-layer/warehouse/_schema/ops.yaml": "tables:\n  flt_leg:\n    table: ops.flt_leg\n  : : bad\n",
            "semantic-layer/warehouse/flt_leg.yaml": "name: flt_leg\ndescriptions: {user: Flight legs}\n",
            "semantic-layer/warehouse/ghost.yaml": "name: ghost\nmeasures: []\n",
        },
    )
    said = {d.path.rsplit("/", 1)[1]: (d.code, d.message) for d in diagnostics}
    assert said["ops.yaml"][0] == "parse_error"
    assert said["flt_leg.yaml"] == (
        "warning",
        "overlay for 'flt_leg' is not applied while semantic-layer/warehouse/_schema/ops.yaml, which holds its base "
        "source, does not parse; fix it",
    )
    assert said["ghost.yaml"] == (
        "error",
        "overlay for 'ghost' has no base source (known: s0, s1, s2, s3, s4, s5, s6, s7 and 1 more); it needs a "
        "manifest entry or a file with 'table:' or 'sql:'",
    )


def test_a_source_name_holding_a_path_is_reported_not_indexed(make_project):
    records, diagnostics, _held = warehouse_records(
        make_project,
        {
            "semantic-layer/warehouse/escape.yaml": 'name: "../../ktx"\ntable: public.orders\n',
            "semantic-layer/warehouse/subscriptions.yaml": SL_STANDALONE,
        },
    )
    assert set(records) == {"subscriptions"}
    (problem,) = diagnostics
    assert problem.path == "semantic-layer/warehouse/escape.yaml" and problem.code == "parse_error"
    assert "'../../ktx' holds a path" in problem.message and "rename it" in problem.message


def test_two_files_defining_one_source_are_named_and_the_later_is_read_as_ktx_reads_it(make_project):
    """KTX reads the later of two files with the same source name alone, silently; here the earlier one is named
    (an outside pass: a copied file hid its original, with nothing said)."""
    records, diagnostics, _held = warehouse_records(
        make_project,
        {
            "semantic-layer/warehouse/aa_copy.yaml": SL_STANDALONE.replace("One row per subscription", "the copy"),
            "semantic-layer/warehouse/subscriptions.yaml": SL_STANDALONE,
        },
    )
    assert records["subscriptions"].path == "semantic-layer/warehouse/subscriptions.yaml"
    (problem,) = diagnostics
    assert problem.path == "semantic-layer/warehouse/subscriptions.yaml" and problem.code == "warning"
    assert "also defined in semantic-layer/warehouse/aa_copy.yaml" in problem.message


@pytest.mark.parametrize("rel", ["orders.yaml", "Orders.yaml", "2024/orders.yaml", "Sales/orders.yaml"])
def test_a_hand_written_source_takes_its_manifest_entry_over_without_a_warning(make_project, rel):
    """Whether its file sorts after ``_schema/`` or before it (an upper-case or digit-led name: the manifest entry
    silently replaced the hand-written source, an outside review)."""
    files = {
        "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD,
        f"semantic-layer/warehouse/{rel}": "name: orders\ntable: public.orders\ncolumns:\n  - {name: id, type: string}\n",
    }
    records, diagnostics, _held = warehouse_records(make_project, files)
    assert records["orders"].origin == "standalone" and diagnostics == []
    assert records["orders"].path == f"semantic-layer/warehouse/{rel}"


def test_a_standalone_source_names_the_keys_ktx_does_not_read(make_project):
    """``dimensions:`` for ``columns:`` left a source's dimensions unindexed without a word (an outside pass)."""
    text = "name: orders\ntable: public.orders\ndimensions:\n  - {name: id, type: string}\nowner: ops\n"
    _records, diagnostics, _held = warehouse_records(make_project, {"semantic-layer/warehouse/orders.yaml": text})
    assert [(d.code, d.message) for d in diagnostics] == [
        ("warning", "unknown source key 'dimensions' ignored (did you mean 'columns:'?)"),
        ("warning", "unknown source key 'owner' ignored"),
    ]


def test_compose_reports_unknown_override_targets():
    base = {"name": "t", "columns": [{"name": "a"}], "joins": [{"to": "x", "on": "t.a = x.a"}]}
    out, problems = compose_overlay(
        base,
        {"name": "t", "column_overrides": [{"name": "zz"}], "joins": [{"to": "x", "on": "T.A  =  X.A"}], "bogus": 1},
    )
    assert len(out["joins"]) == 1
    assert any("zz" in p for p in problems) and any("bogus" in p for p in problems)


def test_an_overlay_merges_descriptions_replaces_lists_and_drops_excluded_columns_and_disabled_joins():
    base = {
        "name": "t", "descriptions": {"db": "raw t", "ai": "old"}, "measures": [{"name": "m0"}],
        "columns": [{"name": "a", "descriptions": {"db": "col a"}}, {"name": "b"}, {"name": "c"}],
        "joins": [{"to": "x", "on": "t.a = x.a"}, {"to": "y", "on": "t.b = y.b"}],
    }  # fmt: skip
    overlay = {
        "name": "t", "descriptions": {"ai": "new"}, "measures": [{"name": "m1"}],
        "column_overrides": [{"name": "a", "descriptions": {"user": "A"}, "type": "string"}],
        "columns": [{"name": "d", "expr": "a || b"}, {"name": "b"}, {"expr": "1"}],
        "exclude_columns": ["c"], "disable_joins": ["T.B = Y.B"],
    }  # fmt: skip
    out, problems = compose_overlay(base, overlay)
    assert out["descriptions"] == {"db": "raw t", "ai": "new"} and out["measures"] == [{"name": "m1"}]
    assert out["columns"] == [
        {"name": "a", "descriptions": {"db": "col a", "user": "A"}, "type": "string"}, {"name": "b"},
        {"name": "d", "expr": "a || b"},
    ]  # fmt: skip
    assert out["joins"] == [{"to": "x", "on": "t.a = x.a"}]  # disabled by its condition, spacing and case aside
    assert problems == [
        "columns: 'b' already exists; use column_overrides", "columns: a computed column needs a string 'name'",
    ]  # fmt: skip
    assert base["columns"][0] == {"name": "a", "descriptions": {"db": "col a"}}  # the base is not edited


def test_a_manifest_entry_becomes_a_source_whose_grain_is_its_primary_key_or_every_column():
    keyed = project_manifest_entry(
        "orders", {"table": "public.orders", "columns": [{"name": "id", "pk": True}, {"name": "at", "type": "time"}]}
    )
    assert keyed["table"] == "public.orders" and keyed["grain"] == ["id"] and keyed["measures"] == []
    assert keyed["columns"][1] == {"name": "at", "type": "time", "role": "time"}
    plain = project_manifest_entry("events", {"columns": [{"name": "a"}, {"name": "b"}], "tags": ["x"]})
    assert plain["table"] == "events" and plain["grain"] == ["a", "b"] and plain["tags"] == ["x"]


def test_wrong_shapes_are_named_on_their_file_or_manifest_entry_and_keep_what_they_held(make_project):
    """A file that parsed, the rest of it read, is no ``parse_error`` (an outside pass): ``wrong_shape``, and the
    file's documents the field gave are kept (``held``), stale, as they were while it was one."""
    records, diagnostics, held = warehouse_records(
        make_project,
        {
            "semantic-layer/warehouse/orders.yaml": "name: orders\ntable: public.orders\nmeasures: nope\n",
            "semantic-layer/warehouse/_schema/public.yaml": "tables:\n  customers:\n    columns: {id: 1}\n",
        },
    )
    assert set(records) == {"orders", "customers"}
    assert [(d.path.rsplit("/", 1)[1], d.code, d.message.split(":")[0]) for d in diagnostics] == [
        ("public.yaml", "wrong_shape", "tables.customers.columns"),
        ("orders.yaml", "wrong_shape", "measures"),
    ]
    assert held == {d.path: d.message for d in diagnostics}


def test_a_numeric_name_is_read_as_text_and_a_list_name_falls_back_to_the_file_name(make_project):
    records, diagnostics, _held = warehouse_records(
        make_project,
        {
            "semantic-layer/warehouse/y2024.yaml": "name: 2024\ntable: public.y2024\n",
            "semantic-layer/warehouse/odd.yaml": "name: [a]\ntable: public.odd\n",
        },
    )
    assert set(records) == {"2024", "odd"}
    assert sorted(d.message for d in diagnostics) == [
        "'name: 2024' is a number; read as '2024' (quote it)",
        "'name:' is a list, not text; using the file name 'odd'",
    ]


def test_a_name_defined_again_in_a_manifest_entry_is_a_warning_naming_its_entry(make_project):
    shard = "tables:\n  orders:\n    columns:\n      - {name: id}\n      - {name: id, type: string}\n"
    _records, diagnostics, _held = warehouse_records(make_project, {"semantic-layer/warehouse/_schema/p.yaml": shard})
    assert [(d.code, d.message) for d in diagnostics] == [
        ("warning", "tables.orders.columns[1]: 'id' is defined again (as columns[0]); the later one is read: remove "
         "or rename one")
    ]  # fmt: skip


def test_a_person_wrote_a_source_with_a_file_outside_schema_and_its_table_unless_it_is_a_manifest_entry(make_project):
    """Three rules for "hand-written" disagreed on a manifest entry with a user's overlay (a review). One rule says
    a person wrote some of it (entity_details prefers its descriptions); the check of ``table:`` against the scans
    skips every manifest entry, overlaid or not: its ``table:`` is the scan's."""
    shard = "tables:\n  orders:\n    table: public.orders\n  items:\n    table: public.items\n"
    files = {
        "semantic-layer/warehouse/_schema/public.yaml": shard,
        "semantic-layer/warehouse/orders.yaml": "name: orders\ndescriptions: {user: Placed orders}\n",
        "semantic-layer/warehouse/hydrants.yaml": "name: hydrants\ntable: ops.hydrant_ext\n",
    }
    scan = scan_files("warehouse", "2026-01-01-000000-local-a", [{"db": "public", "name": "invoices", "columns": []}])
    read = read_project(load_project(make_project(files | scan)))
    sources = {d.id: d for d in read.documents if d.kind == "sl_source"}
    assert {name: hand_written(doc) for name, doc in sources.items()} == {
        "hydrants": True, "items": False, "orders": True,
    }  # fmt: skip
    entries = {name for name, doc in sources.items() if is_manifest_entry("warehouse", doc.path)}
    assert entries == {"items", "orders"}
    assert [d.path for d in read.diagnostics if "no scan of connection" in d.message] == [
        "semantic-layer/warehouse/hydrants.yaml"
    ]
