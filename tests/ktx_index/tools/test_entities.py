"""entity_details (tools/entities.py): a table reference in any of upstream's forms, and a table read from its
last good scan when its file breaks."""

from projects import column, scan_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex
from ktx_index.tools.entities import nearest_first
from ktx_index.tools.reads import nearest


def test_a_table_whose_scan_file_breaks_is_read_as_its_last_good_version_and_says_so(make_project):
    table = {"catalog": None, "db": "raw", "name": "orders", "columns": [column("id", "int"), column("status")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    root = make_project(files)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    entity = [{"table": "raw.orders"}]
    assert "stale" not in service.entity_details("warehouse", entity).results[0].model_dump()
    assert service.discover_data("orders status").refs[0].stale is None  # an engine open and answering
    path = next(p for p in files if p.endswith(".json") and "/tables/" in p)
    good = (root / path).read_text()
    (root / path).write_text('{"name": "orders", "columns": [')  # truncated by an interrupted rescan
    service.rebuild()  # marks the table stale: no new generation, so nothing keyed on one may hide it
    details = service.entity_details("warehouse", entity).results[0]
    assert details.ok and [c.name for c in details.columns] == ["id", "status"]
    assert details.stale.startswith(f"{path}: ")
    assert service.discover_data("orders status").refs[0].stale == details.stale
    (root / path).write_text(good)  # the same content again: fresh, still without a new generation
    service.rebuild()
    assert service.discover_data("orders status").refs[0].stale is None
    assert service.entity_details("warehouse", entity).results[0].stale is None
    service.close()


def test_descriptions_from_a_semantic_layer_file_that_broke_say_so(make_project):
    """The description entity_details gives a table can come from the source over it: when that file no longer
    parses, its last good version describes the table, and ``stale`` says so, as search and sl_read_source do."""
    table = {"catalog": None, "db": "raw", "name": "orders", "columns": [column("id", "int"), column("status")]}
    source = "name: orders\ntable: raw.orders\ndescription: Orders as booked.\ncolumns:\n  - name: status\n"
    root = make_project({**scan_files("warehouse", "2026-01-01-000000-local-a", [table]),
                         "semantic-layer/warehouse/orders.yaml": source})  # fmt: skip
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    entity = [{"table": "raw.orders"}]
    details = service.entity_details("warehouse", entity).results[0]
    assert details.description == "Orders as booked." and details.stale is None
    (root / "semantic-layer/warehouse/orders.yaml").write_text(source + "  - name: [broken\n")
    service.rebuild()
    details = service.entity_details("warehouse", entity).results[0]
    assert details.description == "Orders as booked." and details.stale.startswith(
        "semantic-layer/warehouse/orders.yaml"
    )
    service.close()


def test_column_candidates_put_the_nearest_to_each_missing_name_first():
    names = ["mbr_id", "mbr_nm", "addr", "city", "st_cd", "zip"]
    assert nearest_first(["state"], names) == ["st_cd", "mbr_id", "mbr_nm", "addr", "city", "zip"]
    assert nearest_first(["zzzz"], names) == names  # nothing near: the table's order
    assert nearest_first(["state", "cty"], names)[:2] == ["st_cd", "city"]


def test_candidates_name_the_words_sent_abbreviated_first():
    """A legacy warehouse abbreviates: the name sent in full finds its abbreviation first, and the reverse (an
    outside pass: *appointments* listed ``main.appt`` ninth, after ``pt``, ``enc`` and ``pmt``)."""
    tables = ["main.pt", "main.enc", "main.pmt", "main.dept", "main.appt", "main.clm", "main.clinic_loc"]
    assert nearest("appointments", tables, 3)[0] == "main.appt"
    assert nearest("claims", tables, 3)[0] == "main.clm"
    assert nearest_first(["pref_lang_cd"], ["pt_id", "mrn", "preferred_language"])[0] == "preferred_language"
    assert nearest("orders", ["order_items", "orders"], 2) == ["orders", "order_items"]


def test_a_columns_id_sent_as_a_table_says_which_table_and_column_to_send(make_project):
    table = {"catalog": None, "db": "raw", "name": "orders", "columns": [column("id", "int"), column("status")]}
    root = make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [table]))
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    (failed,) = service.entity_details("warehouse", [{"table": "raw.orders.status"}]).results
    assert failed.error.code == "table_not_found" and failed.error.candidates[0].display == "raw.orders"
    assert failed.error.message.endswith('It names a column: send {"table": "raw.orders", "columns": ["status"]}.')
    service.close()


def test_columns_written_out_as_one_comma_separated_string_are_read_as_a_list(make_project):
    table = {"catalog": None, "db": "raw", "name": "orders", "columns": [column("id", "int"), column("status")]}
    root = make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [table]))
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    (found,) = service.entity_details("warehouse", [{"table": "raw.orders", "columns": ["status, ID"]}]).results
    assert found.ok and [c.name for c in found.columns] == ["status", "id"]
    (failed,) = service.entity_details("warehouse", [{"table": "raw.orders", "columns": ["status, total"]}]).results
    assert failed.error.code == "column_not_found" and "found on raw.orders: total." in failed.error.message
    (lone,) = service.entity_details("warehouse", [{"table": "raw.orders", "columns": [" , "]}]).results
    assert lone.error.code == "column_not_found"  # no list written out: the name as sent, not found
    (stray,) = service.entity_details("warehouse", [{"table": "raw.orders", "columns": ["status,"]}]).results
    assert [c.name for c in stray.columns] == ["status"]  # a stray comma
    service.close()


def test_a_schema_and_table_sent_apart_find_a_table_whose_name_holds_its_schema(make_project):
    """SQL Server scans read through SQLite name a table "Sales.SalesOrderHeader" in db main: {schema, table}
    finds it as the string "Sales.SalesOrderHeader" does, and a dotted name with no such column gets no column hint."""
    tables = [
        {"catalog": None, "db": "main", "name": "Sales.SalesOrderHeader", "columns": [column("id", "int")]},
        {"catalog": None, "db": "main", "name": "Sales.SalesOrderHeaderSalesReason", "columns": [column("id", "int")]},
    ]
    service = KtxIndex(make_project(scan_files("aw", "2026-01-01-000000-local-a", tables)), embedder=HashEmbedder())
    service.rebuild()
    (found,) = service.entity_details("aw", [{"schema": "Sales", "table": "SalesOrderHeader"}]).results
    assert found.ok and found.display == "main.Sales.SalesOrderHeader"
    (failed,) = service.entity_details("aw", [{"table": "main.Sales.SalesOrderHeader.Orders"}]).results
    assert "It names a column" not in failed.error.message  # no column 'Orders' there
    (twice,) = service.entity_details("aw", [{"table": "Sales.SalesOrderHeader", "columns": ["id", "ID"]}]).results
    assert [c.name for c in twice.columns] == ["id"]
    service.close()


def test_a_table_and_its_columns_are_described_as_the_semantic_layer_resolves_them(make_project):
    """The scan holds the warehouse's comment alone; a user's description in the semantic layer (a renamed status)
    was missing from entity_details, whose description says it resolves user > ai > dbt > db."""
    table = {
        "catalog": None,
        "db": "raw",
        "name": "appts",
        "columns": [column("id", "int"), column("status", comment="status")],
    }
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files["semantic-layer/warehouse/appts.yaml"] = (
        "name: appts\ntable: raw.appts\ngrain: [id]\ndescriptions: {user: One row per appointment slot.}\n"
        "columns:\n  - {name: id, type: number}\n"
        "  - {name: status, type: string, descriptions: {user: DNA was FTA before 19 Jan 2026.}}\n"
    )
    # another source over the table, a subset of it, whose status is computed: it describes neither
    files["semantic-layer/warehouse/aaa_kept_appts.yaml"] = (
        "name: aaa_kept_appts\ntable: raw.appts\ngrain: [id]\ndescriptions: {user: Kept appointments only.}\n"
        "columns:\n  - {name: id, type: number, descriptions: {user: The slot.}}\n"
        '  - {name: status, type: string, expr: "upper(status)", descriptions: {user: Upper-cased.}}\n'
    )
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    (found,) = service.entity_details("warehouse", [{"table": "raw.appts"}]).results
    assert found.description == "One row per appointment slot."
    assert [(c.name, c.comment, c.description) for c in found.columns] == [
        ("id", None, None),
        ("status", "status", "DNA was FTA before 19 Jan 2026."),
    ]
    service.close()


def test_a_hand_written_source_of_another_name_describes_its_table_before_the_scans_entry(make_project):
    """A KTX scan writes a manifest entry for every table, named as it: a hand-written source of another name over
    the same table (``bookings`` over ``cx.bkg``) lost its descriptions to the entry (an outside pass)."""
    table = {"catalog": None, "db": "cx", "name": "bkg", "columns": [column("id", "int"), column("chnl_cd")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files["semantic-layer/warehouse/_schema/cx.yaml"] = (
        "tables:\n  bkg:\n    table: cx.bkg\n    descriptions: {ai: Booking headers.}\n    columns:\n"
        "      - {name: id, type: number}\n      - {name: chnl_cd, type: string, descriptions: {ai: Channel code.}}\n"
    )
    files["semantic-layer/warehouse/bookings.yaml"] = (
        "name: bookings\ntable: cx.bkg\ndescriptions: {user: One row per booking; test bookings excluded.}\n"
        "columns:\n  - {name: id, type: number}\n"
        "  - {name: chnl_cd, type: string, descriptions: {user: 'APP mobile app, GDS travel agent.'}}\n"
    )
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    (found,) = service.entity_details("warehouse", [{"table": "cx.bkg"}]).results
    assert found.description == "One row per booking; test bookings excluded."
    assert {c.name: c.description for c in found.columns}["chnl_cd"] == "APP mobile app, GDS travel agent."
    service.close()


def test_a_table_sent_with_another_schema_is_the_first_candidate(make_project):
    names = [("finance_mart", "fct_disputes"), ("finance_mart", "fct_swoops"), ("finance_mart", "mart_kyc_funnel")]
    names += [("finance_mart", "fct_card_txns"), ("ledger_raw", "kyc_checks")]
    tables = [{"catalog": None, "db": db, "name": name, "columns": [column("id", "int")]} for db, name in names]
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-local-a", tables)), embedder=HashEmbedder()
    )
    service.rebuild()
    (failed,) = service.entity_details("warehouse", [{"table": "finance_mart.kyc_checks"}]).results
    assert failed.error.code == "table_not_found" and failed.error.candidates[0].display == "ledger_raw.kyc_checks"
    service.close()


def test_a_semantic_layer_sources_name_sent_as_a_table_says_what_to_send(make_project):
    """discover_data returns sources by name; one written as SQL has no table (and its refs no tableRef), one named
    otherwise than its table is not found by its name: the error says what to send instead."""
    table = {"catalog": None, "db": "raw", "name": "bss_price_changes", "columns": [column("id", "int")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files["semantic-layer/warehouse/price_rises.yaml"] = (
        "name: price_rises\ntable: raw.bss_price_changes\ngrain: [id]\ncolumns:\n  - {name: id, type: number}\n"
    )
    files["semantic-layer/warehouse/weekly_pack.yaml"] = (
        "name: weekly_pack\nsql: select 1 as n\ngrain: [n]\ncolumns:\n  - {name: n, type: number}\n"
    )
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    sql, named = service.entity_details("warehouse", [{"table": "weekly_pack"}, {"table": "price_rises"}]).results
    read = 'sl_read_source {connectionId: "warehouse", sourceName: "%s"}'
    assert sql.error.code == "table_not_found" and sql.error.message.endswith(
        f'"weekly_pack" is a semantic-layer source written as SQL, over no one table: read it with {read % "weekly_pack"}.'
    )
    assert named.error.message.endswith(
        f'"price_rises" is a semantic-layer source: send the table it reads, "raw.bss_price_changes", or '
        f"{read % 'price_rises'}."
    )
    (missing,) = service.entity_details("warehouse", [{"table": "nowhere"}]).results
    assert "semantic-layer source" not in missing.error.message
    service.close()


def test_a_table_only_a_source_names_is_not_sent_back_to_the_agent(make_project):
    """It said to send the table the source reads: the very name sent (an outside pass's agent looped)."""
    table = {"catalog": None, "db": "ops", "name": "crew", "columns": [column("id", "int")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files["semantic-layer/warehouse/crew_duty.yaml"] = (
        "name: crew_duty\ntable: ops.crew_duty\ncolumns:\n  - {name: id, type: number}\n"
    )
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    for sent in ("ops.crew_duty", "crew_duty"):
        (missing,) = service.entity_details("warehouse", [{"table": sent}]).results
        assert missing.error.message.endswith(
            '"crew_duty" is a semantic-layer source over table ops.crew_duty, which the latest scan of "warehouse" '
            "does not hold (fix its `table:`, or rescan): read the source with sl_read_source {connectionId: "
            '"warehouse", sourceName: "crew_duty"}.'
        ), sent
    service.close()


def test_a_measures_dimensions_or_pages_ref_sent_as_a_table_says_which_tool_reads_it(make_project):
    """An agent hydrating discover_data's refs sends each to entity_details: a measure's, a dimension's or a wiki
    page's got a bare "not found" (an outside pass)."""
    table = {"catalog": None, "db": "cis", "name": "bill", "columns": [column("id", "int"), column("amt", "int")]}
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files["semantic-layer/warehouse/bills.yaml"] = (
        "name: bills\ntable: cis.bill\ngrain: [id]\ncolumns:\n  - {name: id, type: number}\n  - {name: amt, type: number}\n"
        "measures:\n  - {name: billed, expr: sum(amt)}\n"
    )
    files["semantic-layer/warehouse/leaks.yaml"] = (
        "name: leaks\ntable: ops.leak\nmeasures:\n  - {name: n, expr: count(*)}\n"
    )
    files["wiki/global/leak-response-sla.md"] = "---\nsummary: Leak response SLA\n---\nFour hours.\n"
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    sent = [{"table": "Bills.Billed"}, {"table": "bills.amt"}, {"table": "wiki::leak-response-sla"}]
    measure, dimension, page = service.entity_details("warehouse", sent).results
    read = 'sl_read_source {connectionId: "warehouse", sourceName: "bills"}'
    assert measure.error.message.endswith(
        f'"Bills.Billed" is a measure of semantic-layer source "bills": send {{"table": "cis.bill"}}, or {read}.'
    )
    assert dimension.error.message.endswith(
        f'"bills.amt" is a dimension of semantic-layer source "bills": send {{"table": "cis.bill", "columns": '
        f'["amt"]}}, or {read}.'
    )
    assert page.error.message.endswith(
        '"wiki::leak-response-sla" is a wiki page: read it with wiki_read {key: "leak-response-sla"}.'
    )
    (bare,) = service.entity_details("warehouse", ["leak-response-sla"]).results  # a wiki ref's id, as returned
    assert bare.error.message.endswith('is a wiki page: read it with wiki_read {key: "leak-response-sla"}.')
    (gone,) = service.entity_details("warehouse", ["wiki::no-such-page"]).results
    assert "wiki_read" not in gone.error.message
    (unscanned,) = service.entity_details("warehouse", ["leaks.n"]).results  # its table is in no scan
    assert unscanned.error.message.endswith(
        '"leaks.n" is a measure of semantic-layer source "leaks": read it with sl_read_source {connectionId: '
        '"warehouse", sourceName: "leaks"}.'
    )
    service.close()


def test_a_table_sent_by_a_columns_name_lists_the_tables_holding_it_first(make_project):
    """An agent sends the attribute it wants (*region*) where a table is asked: the tables with such a column come
    first among the candidates, not the tables whose names merely share its letters (*mart_retention_saves*)."""
    names = [("analytics", "mart_retention_saves", "saved_by"), ("raw", "cx_retention_calls", "agent")]
    names += [
        ("analytics", "dim_premise", "region"),
        ("analytics", "fct_faults", "Region"),
        ("raw", "ev", "geo.region"),
    ]
    tables = [
        {"catalog": None, "db": db, "name": name, "columns": [column("id", "int"), column(col)]}
        for db, name, col in names
    ]
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-local-a", tables)), embedder=HashEmbedder()
    )
    service.rebuild()
    (failed,) = service.entity_details("warehouse", [{"table": "region"}]).results
    assert [c.display for c in failed.error.candidates][:2] == ["analytics.dim_premise", "analytics.fct_faults"]
    assert "(with those holding a column of that name)" in failed.error.message
    (other,) = service.entity_details("warehouse", [{"table": "nowhere"}]).results
    assert "holding a column" not in other.error.message
    service.close()


def test_a_long_name_sent_is_cut_where_it_is_sent_back(demo_service):
    """An outside pass sent 800 KB of unknown table names and got 1.74 MB back, each name whole twice."""
    name = "raw." + "x" * 5000
    (item,) = demo_service.entity_details("warehouse", [{"table": name}]).results
    assert not item.ok and len(item.table) <= 1000 and len(item.error.message) < 3000
    (value,) = demo_service.dictionary_search(["y" * 5000]).results
    assert len(value.value) <= 1000
