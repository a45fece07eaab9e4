"""The semantic-layer indexer: documents for sources, measures, dimensions and enum values, and folders
ktx.yaml does not name (the records it reads them from: test_sl_records.py)."""

from projects import SL_OVERLAY, SL_SHARD, SL_STANDALONE, scan_files, table_file

from indexers import load_project, read_project
from indexers.semantic_layer import measure_inputs


def test_documents_for_sources_measures_dimensions_and_enum_values(make_project):
    root = make_project(
        {
            "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD,
            "semantic-layer/warehouse/orders.yaml": SL_OVERLAY,
            "semantic-layer/warehouse/subscriptions.yaml": SL_STANDALONE,
        }
    )
    read = read_project(load_project(root))
    by_uid = {d.uid: d for d in read.documents}
    source = by_uid["sl_source:warehouse:subscriptions"]
    assert source.description == "One row per subscription" and source.display == "analytics.subscriptions"
    assert source.tags == ["finance"] and source.attrs["frequencyTier"] == "high"
    assert source.table_ref.db == "analytics"
    measure = by_uid["sl_measure:warehouse:orders.order_count"]
    assert measure.summary == "Number of paid orders" and measure.expr == "count(*)"
    assert by_uid["sl_measure:warehouse:subscriptions.active_subscriptions"].expr == "count(*) where status = 'active'"
    dim = by_uid["sl_dimension:warehouse:orders.status"]
    assert dim.description == "Lifecycle status of the order" and dim.column_name == "status"
    assert by_uid["sl_dimension:warehouse:subscriptions.plan"].sample_values == ["basic", "family_4"]
    values = sorted(d.id for d in read.documents if d.kind == "dictionary_value")
    assert values == ["basic", "family_4"]
    assert "sl_dimension:warehouse:orders.legacy_flag" not in by_uid


def test_folder_without_ktx_yaml_entry_is_indexed(make_project):
    root = make_project({"semantic-layer/finance/subscriptions.yaml": SL_STANDALONE})
    project = load_project(root)
    assert project.connections["finance"].declared is False
    assert project.connections["warehouse"].declared is True  # declared but empty is fine
    assert any(d.connection_id == "finance" for d in read_project(project).documents)


def test_a_measures_inputs_are_the_sources_columns_its_sql_names():
    columns = {"closing_bal_gbp": "closing_bal_gbp", "is_funded": "IS_FUNDED", "status": "status"}
    assert measure_inputs("sum(Closing_Bal_GBP) where is_funded and t.status = 'paid'", columns) == [
        "closing_bal_gbp",
        "IS_FUNDED",
        "status",
    ]
    assert measure_inputs("count(*)", columns) == []
    dated = {"month": "month", "paid": "paid", "status": "status", "paid_at": "paid_at"}  # the review's cases
    assert measure_inputs("count(*) where status = 'paid' and month(paid_at) = 3", dated) == ["status", "paid_at"]


def test_two_columns_or_measures_of_one_name_are_one_document_the_later_read_and_a_warning(make_project):
    """They gave two documents with one uid, the later silently stored and inspect counting both (an outside
    review)."""
    text = (
        "name: orders\ntable: public.orders\ncolumns:\n  - {name: status, description: first}\n  - {name: id}\n"
        "  - {name: status, description: second, enum_values: [paid, paid]}\n"
        "measures:\n  - {name: n, expr: count(*)}\n  - {name: n, expr: count(id)}\n"
    )
    read = read_project(load_project(make_project({"semantic-layer/warehouse/orders.yaml": text})))
    members = [(d.kind, d.name, d.description or d.expr) for d in read.documents if d.kind.startswith("sl_")]
    assert members == [
        ("sl_source", "orders", ""),
        ("sl_measure", "n", "count(id)"),
        ("sl_dimension", "status", "second"),
        ("sl_dimension", "id", ""),
    ]
    assert read.counts()["sl_dimension"] == 2 and [d.id for d in read.documents if d.kind == "dictionary_value"] == [
        "paid"
    ]
    assert [(d.path, d.code, d.message) for d in read.diagnostics] == [
        (
            "semantic-layer/warehouse/orders.yaml",
            "warning",
            "columns[2]: 'status' is defined again (as columns[0]); the later one is read: remove or rename one",
        ),
        (
            "semantic-layer/warehouse/orders.yaml",
            "warning",
            "measures[1]: 'n' is defined again (as measures[0]); the later one is read: remove or rename one",
        ),
    ]


def test_a_sources_lists_of_columns_and_measures_name_each_of_its_dimensions_and_measures(make_project):
    """Three rules for an item's name disagreed: `` status `` and ``1.5`` gave dimension documents the source's
    ``columns`` left out (a review). ``item_name`` is the one: trimmed, a number as its text."""
    text = (
        "name: orders\nsql: select 1\ncolumns:\n  - {name: ' status '}\n  - {name: 1.5}\n  - {name: status}\n"
        "measures:\n  - {name: ' n '}\n  - {name: 2}\n"
    )
    read = read_project(load_project(make_project({"semantic-layer/warehouse/orders.yaml": text})))
    (source,) = [d for d in read.documents if d.kind == "sl_source"]
    members = {kind: [d.name for d in read.documents if d.kind == kind] for kind in ("sl_dimension", "sl_measure")}
    assert source.attrs["columns"] == members["sl_dimension"] == ["status", "1.5"]
    assert source.attrs["measures"] == members["sl_measure"] == ["n", "2"]


HYDRANTS = "name: hydrants\ntable: ops.hydrant_ext\ncolumns:\n  - {name: zone}\n"
UNSCANNED = (
    "source 'hydrants' reads table ops.hydrant_ext, which no scan of connection 'warehouse' holds (its refs name a "
    "table entity_details cannot find); fix `table:` or rescan (`ktx scan warehouse`)"
)


def test_a_source_over_a_table_no_scan_holds_is_indexed_with_a_warning(make_project):
    """Its refs named a table entity_details cannot find, and nothing said so (an outside pass). A table named
    without its schema, a manifest entry (the scan's own) and a connection with no complete scan are no warning."""
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [{"db": "public", "name": "orders", "columns": []}])
    files |= {
        "semantic-layer/warehouse/hydrants.yaml": HYDRANTS,
        "semantic-layer/warehouse/orders.yaml": "name: orders\ntable: ORDERS\n",
        "semantic-layer/warehouse/_schema/ops.yaml": "tables:\n  gone:\n    table: ops.gone\n",
        "semantic-layer/lake/hydrants.yaml": HYDRANTS,
    }
    read = read_project(load_project(make_project(files)))
    assert [(d.path, d.code, d.message) for d in read.diagnostics] == [
        ("semantic-layer/warehouse/hydrants.yaml", "warning", UNSCANNED)
    ]
    assert "sl_dimension:warehouse:hydrants.zone" in {d.uid for d in read.documents}  # indexed all the same


def test_a_source_over_a_table_whose_scan_file_does_not_parse_is_no_warning(make_project):
    """Only the tables that parsed counted as scanned: a truncated table file made a correct source a "fix `table:`"
    warning (a review). The file's table is unknown until it parses, so its connection is not checked."""
    sync = "2026-01-01-000000-local-a"
    files = scan_files("warehouse", sync, [{"db": "public", "name": "items", "columns": []}])
    files |= {
        f"raw-sources/warehouse/live-database/{sync}/tables/{table_file(None, 'public', 'orders')}": '{"name": "ord',
        "semantic-layer/warehouse/orders.yaml": "name: orders\ntable: public.orders\n",
        "semantic-layer/warehouse/hydrants.yaml": HYDRANTS,
    }
    read = read_project(load_project(make_project(files)))
    assert [d.code for d in read.diagnostics] == ["parse_error"]
