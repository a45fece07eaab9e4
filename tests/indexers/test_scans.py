import os

import pytest
from projects import column, profile_entry, scan_files, table_file

from indexers import load_project, read_project
from indexers.scans import is_dictionary_column

ORDERS = {
    "catalog": None, "db": "public", "name": "orders", "kind": "table", "comment": "Customer orders",
    "estimatedRows": 1200,
    "columns": [column("id", "integer", "number"), column("status", comment="Order state"), column("customer_email")],
    "foreignKeys": [],
}  # fmt: skip
INVOICES = {
    **ORDERS,
    "name": "invoices",
    "comment": None,
    "columns": [column("id", "integer", "number"), column("state")],
}
PROFILE = {
    "connectionId": "warehouse",
    "columns": {
        "orders.status": profile_entry("public", "orders", "status", ["paid", "refunded", "Paid", " "]),
        "orders.customer_email": profile_entry("public", "orders", "customer_email", ["a@b.c"]),
    },
}


def test_tables_columns_profile_and_dictionary(make_project):
    root = make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [ORDERS], PROFILE))
    read = read_project(load_project(root))
    assert read.diagnostics == []
    by_uid = {d.uid: d for d in read.documents}
    table = by_uid["table:warehouse:public.orders"]
    assert table.comment == "Customer orders" and table.table_ref.display == "public.orders"
    assert table.attrs["estimatedRows"] == 1200 and table.attrs["snapshot"]["syncId"] == "2026-01-01-000000-local-a"
    status = by_uid["column:warehouse:public.orders.status"]
    assert status.sample_values == ["paid", "refunded"]  # trimmed, case-insensitive dedupe
    assert status.attrs["distinctCount"] == 3 and status.attrs["nullRate"] == 0.05
    assert status.comment == "Order state" and status.column_name == "status"
    values = sorted((d.display, d.id) for d in read.documents if d.kind == "dictionary_value")
    assert values == [("public.orders.status", "paid"), ("public.orders.status", "refunded")]  # email excluded
    snapshot = by_uid["snapshot:warehouse:warehouse"]
    assert "profiledColumns" not in snapshot.attrs and snapshot.attrs["scanRunId"] == "local-a"  # tools count them


def test_profiled_columns_the_table_file_no_longer_lists_are_reported(make_project):
    """A column renamed in the scan but not yet re-profiled: its sample values have no column to hang on, and
    vanished from dictionary_search without a word; a warning names them, the profile and the table file."""
    renamed = {
        **ORDERS,
        "columns": [column("id", "integer", "number"), column("order_status"), column("customer_email")],
    }
    root = make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [renamed], PROFILE))
    read = read_project(load_project(root))
    (warning,) = read.diagnostics
    assert warning.code == "warning" and warning.path.endswith("enrichment/relationship-profile.json")
    assert "profiles column status of public.orders, which its table file" in warning.message
    assert not [d for d in read.documents if d.kind == "dictionary_value"]


def test_newest_snapshot_per_table_and_incomplete_sync_ignored(make_project):
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [ORDERS, INVOICES])
    newer_orders = {**ORDERS, "comment": "Orders v2"}
    files |= scan_files("warehouse", "2026-02-01-000000-local-b", [newer_orders])
    partial = scan_files("warehouse", "2026-03-01-000000-local-c", [{**ORDERS, "comment": "unfinished"}])
    files |= {k: v for k, v in partial.items() if not k.endswith("scan-report.json")}
    read = read_project(load_project(make_project(files)))
    tables = {d.id: d for d in read.documents if d.kind == "table"}
    assert set(tables) == {"public.orders", "public.invoices"}  # the partial rescan hides nothing
    assert tables["public.orders"].comment == "Orders v2"
    assert tables["public.invoices"].attrs["snapshot"]["syncId"] == "2026-01-01-000000-local-a"
    assert any("no scan-report.json" in d.message for d in read.diagnostics)


@pytest.mark.parametrize(
    ("conn", "older", "sync"),
    [
        ("warehouse", "2025-12-01-000000-local-z", "2026-01-01-000000-local-a"),
        ("warehouse", "2025-12-01", "2026-01-01"),
        ("my-wh", "nightly-0", "nightly-1"),
    ],
)
def test_a_tables_scan_run_id_is_its_scan_reports_as_the_snapshots_is(make_project, conn, older, sync):
    """A table's run id was cut from its folder's name counting the hyphens of the whole path (the connection id's
    too), so entity_details showed two run ids for one scan (an outside review); both read scan-report.json now,
    a table from an older snapshot that snapshot's."""
    files = scan_files(conn, older, [INVOICES]) | scan_files(conn, sync, [ORDERS])
    for folder, run in ((older, "run-41"), (sync, "run-42")):
        files[f"raw-sources/{conn}/live-database/{folder}/scan-report.json"]["runId"] = run
    read = read_project(load_project(make_project(files, config=f"connections:\n  {conn}:\n    driver: postgres\n")))
    runs = {d.id: d.attrs["snapshot"]["scanRunId"] for d in read.documents if d.kind == "table"}
    (snapshot,) = [d for d in read.documents if d.kind == "snapshot"]
    assert runs == {"public.orders": "run-42", "public.invoices": "run-41"} and snapshot.attrs["scanRunId"] == "run-42"


def test_a_snapshots_scan_report_is_parsed_once_whatever_its_number_of_tables(make_project, monkeypatch):
    """Every table parsed its snapshot's scan report again for the run id: a 3.3 MB report over 3,000 tables made
    read_project 50 times slower (a review). The snapshot document parses it, and its tables once between them."""
    import indexers.scan_artifacts
    import indexers.scans

    tables = [{**ORDERS, "name": f"t{i}"} for i in range(6)]
    root = make_project(scan_files("warehouse", "2026-01-01-000000-local-a", tables))
    reports = []
    for module in (indexers.scans, indexers.scan_artifacts):
        original = module.read_json

        def counting(project, rel, original=original):
            reports.extend([rel] if rel.endswith("scan-report.json") else [])
            return original(project, rel)

        monkeypatch.setattr(module, "read_json", counting)
    read = read_project(load_project(root))
    assert {d.attrs["snapshot"]["scanRunId"] for d in read.documents if d.kind == "table"} == {"local-a"}
    assert len(reports) == 2


def test_a_connection_whose_only_snapshot_is_incomplete_says_its_tables_are_not_indexed(make_project):
    partial = scan_files("warehouse", "2026-03-01-000000-local-c", [ORDERS, INVOICES])
    files = {k: v for k, v in partial.items() if not k.endswith("scan-report.json")}
    read = read_project(load_project(make_project(files)))
    assert not [d for d in read.documents if d.kind == "table"]
    (problem,) = [d for d in read.diagnostics if "scan-report.json" in d.message]
    assert problem.code == "parse_error" and problem.path.endswith("2026-03-01-000000-local-c")
    assert "2 table file(s) are not indexed" in problem.message and "older" in problem.message


def test_malformed_artifacts_are_diagnostics_and_the_rest_is_indexed(make_project):
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [ORDERS, INVOICES], PROFILE)
    invoice_path = (
        f"raw-sources/warehouse/live-database/2026-01-01-000000-local-a/tables/{table_file(None, 'public', 'invoices')}"
    )
    files[invoice_path] = '{"name": "invoices", "columns": ['  # truncated
    root = make_project(files)
    (root / "raw-sources/warehouse/live-database/2026-01-01-000000-local-a/tables/extra.json").write_text("[1, 2]")
    read = read_project(load_project(root))
    paths = {d.path.rsplit("/", 1)[1]: d.message for d in read.diagnostics}
    assert "invalid JSON" in paths[invoice_path.rsplit("/", 1)[1]]
    assert "expected a JSON object" in paths["extra.json"]
    assert any(d.id == "public.orders" for d in read.documents)


def test_wrong_shaped_profile_entries_and_foreign_keys_are_reported_and_the_rest_kept(make_project):
    fk = {"fromColumn": "id", "toCatalog": None, "toDb": "public", "toTable": "invoices", "toColumn": "id"}
    orders = {**ORDERS, "foreignKeys": [fk, {"fromColumn": "status"}, "orders_fk"]}
    profile = {
        **PROFILE,
        "columns": {**PROFILE["columns"], "orders.id": {**profile_entry("public", "orders", "id", []),
                                                        "sampleValues": "1"}, "stray": 5},
    }  # fmt: skip
    read = read_project(
        load_project(make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [orders], profile)))
    )
    by_uid = {d.uid: d for d in read.documents}
    assert by_uid["table:warehouse:public.orders"].attrs["foreignKeys"] == [fk]
    assert by_uid["column:warehouse:public.orders.status"].sample_values == ["paid", "refunded"]
    messages = {d.path.rsplit("/", 1)[1]: d.message for d in read.diagnostics if d.code == "warning"}
    assert "2 foreign key(s)" in messages[table_file(None, "public", "orders")]
    assert "1 entry skipped ('stray'" in messages["relationship-profile.json"]
    assert "'sampleValues' is not a list ('orders.id')" in messages["relationship-profile.json"]


def test_dictionary_filters_follow_ktx_with_wider_string_types_and_no_cardinality_cap():
    assert is_dictionary_column("status", {"normalizedType": "character varying(20)", "distinctCount": 4})
    assert is_dictionary_column("region", {"normalizedType": "LowCardinality(String)"})
    assert is_dictionary_column("tier", {"nativeType": "citext"})
    assert not is_dictionary_column("user_id", {"normalizedType": "text"})
    assert not is_dictionary_column("created_at", {"normalizedType": "text"})
    assert not is_dictionary_column("amount", {"normalizedType": "numeric"})
    assert is_dictionary_column("shipto_nm", {"normalizedType": "text", "distinctCount": 9000})  # KTX drops it


def test_warm_parses_every_shared_file_once(demo_copy):
    """A watcher warms the scan indexer at start: a table edit afterwards parses only its table file."""
    from indexers.scans import ScanIndexer

    project = load_project(demo_copy)
    indexer = ScanIndexer()
    scopes = indexer.scopes(project)[0]
    indexer.warm(project, scopes)
    shared = {rel for s in scopes if s.key.count(":") == 2 for rel in (*s.get("profiles"), *s.get("shards"))}
    assert shared and shared <= set(indexer.cache._entries)
    parsed = []
    original = indexer.cache._load

    def tracking(project, rel, parse):
        if rel not in indexer.cache._entries:
            parsed.append(rel)
        return original(project, rel, parse)

    indexer.cache._load = tracking
    table = next(s for s in scopes if s.key.count(":") == 2)
    assert indexer.read(project, table).documents
    assert parsed == []


def test_fields_of_the_wrong_type_are_named_and_read_as_unknown(make_project):
    """A scan writes ``estimatedRows`` as a number and ``primaryKey`` as a boolean: another type is read as unknown,
    and said (an outside pass: "lots" became null and "yes" false without a word)."""
    orders = {**ORDERS, "estimatedRows": "lots"}
    orders["columns"] = [{**orders["columns"][0], "primaryKey": "yes"}, *orders["columns"][1:]]
    read = read_project(load_project(make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [orders]))))
    (warning,) = [d for d in read.diagnostics if d.code == "warning"]
    first = orders["columns"][0]["name"]
    assert (
        warning.message
        == f"estimatedRows ('lots'), {first}.primaryKey ('yes'): not of the type a scan writes, read as unknown"
    )
    table = next(d for d in read.documents if d.kind == "table")
    assert table.attrs["estimatedRows"] is None


def test_a_shards_column_descriptions_are_found_whatever_the_case_of_the_name(make_project):
    """Keyed by casefold() and looked up by lower(), a column named with an ß lost its description (an outside
    review); one key function does both."""
    shard = (
        "tables:\n  orders:\n    table: public.orders\n    columns:\n"
        "      - {name: Straße, descriptions: {ai: street name}}\n      - {name: Status, descriptions: {ai: order state}}\n"
    )
    table = {**ORDERS, "comment": None, "columns": [column("Straße"), column("STATUS")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    read = read_project(load_project(make_project(files | {"semantic-layer/warehouse/_schema/public.yaml": shard})))
    described = {d.name: d.description for d in read.documents if d.kind == "column"}
    assert described == {"Straße": "street name", "STATUS": "order state"}


@pytest.mark.parametrize("shard", ["_schema/public.yaml", "_schema/public/orders.yaml"])
def test_a_shard_describes_its_table_as_it_gives_its_source_in_a_subfolder_too(make_project, shard):
    """Which files are shards was decided twice: the sources read every YAML file under _schema/, the tables'
    descriptions only those directly in it (an outside review); sl_records.is_schema_shard decides for both."""
    text = "tables:\n  orders:\n    table: public.orders\n    descriptions: {ai: Customer orders}\n    columns:\n"
    text += "      - {name: id, descriptions: {ai: The order's key}}\n"
    table = {**ORDERS, "comment": None, "columns": [column("id")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    read = read_project(load_project(make_project(files | {f"semantic-layer/warehouse/{shard}": text})))
    docs = {d.kind: d for d in read.documents}
    assert read.diagnostics == [] and docs["sl_source"].description == "Customer orders"
    assert docs["table"].description == "Customer orders" and docs["column"].description == "The order's key"


def test_a_folder_below_schema_that_cannot_be_listed_is_named_and_the_scans_are_read(make_project):
    """A symlink loop below ``_schema/`` held the connection's whole scan, unread, under an ``unlisted`` diagnostic
    on ``raw-sources/<conn>`` (a review): a rescan's new tables were not indexed. The scan is read, with the shards
    that can be listed, and the folder that cannot is named."""
    text = "tables:\n  orders:\n    table: public.orders\n    descriptions: {ai: Customer orders}\n"
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [{**ORDERS, "comment": None}, INVOICES])
    root = make_project(files | {"semantic-layer/warehouse/_schema/public.yaml": text})
    os.symlink("loop", root / "semantic-layer/warehouse/_schema/loop")
    read = read_project(load_project(root))
    tables = {d.id: d.description for d in read.documents if d.kind == "table"}
    assert tables == {"public.orders": "Customer orders", "public.invoices": ""}
    unlisted = sorted({d.path for d in read.diagnostics if d.code == "unlisted"})
    assert unlisted == ["semantic-layer/warehouse", "semantic-layer/warehouse/_schema/loop"]  # the layer is one scope
