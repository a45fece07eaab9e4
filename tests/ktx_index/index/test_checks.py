"""Checks across the indexers' families over what the store holds (index/checks.py): a semantic-layer source whose
``table:`` no scan of its connection holds, in rebuild and status as in inspect, gone once a rescan holds it."""

from __future__ import annotations

from projects import scan_files, service_for, table_file, write_files

HYDRANTS = "name: hydrants\ntable: ops.hydrant_ext\ncolumns:\n  - {name: zone}\n"
ORDERS = {"db": "public", "name": "orders", "columns": []}


def unscanned(diagnostics) -> list[tuple[str, str]]:
    return [(d.path, d.code) for d in diagnostics if "no scan of connection" in d.message]


def test_a_source_over_a_table_no_scan_holds_is_reported_until_a_rescan_holds_it(make_project):
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [ORDERS])
    root = make_project(files | {"semantic-layer/warehouse/hydrants.yaml": HYDRANTS, "wiki/global/a.md": "# A\n"})
    service = service_for(root)
    said = [("semantic-layer/warehouse/hydrants.yaml", "warning")]
    assert unscanned(service.rebuild().diagnostics) == said
    assert unscanned(service.status().diagnostics) == said == unscanned(service.inspect().diagnostics)
    write_files(root, {"wiki/global/a.md": "# A again\n"})  # no source or scan read again: the warning stays
    assert unscanned(service.rebuild().diagnostics) == said
    rescan = {"db": "ops", "name": "hydrant_ext", "columns": []}
    write_files(root, scan_files("warehouse", "2026-02-01-000000-local-b", [ORDERS, rescan]))  # the scans alone
    assert unscanned(service.rebuild().diagnostics) == [] == unscanned(service.status().diagnostics)
    service.close()


def test_a_connection_whose_scan_has_a_table_file_that_does_not_parse_is_not_checked_by_any_command(make_project):
    """inspect counted only the tables that parsed, so a truncated table file made a correct source "fix `table:`",
    while rebuild and status, whose store keeps the table's last good version, said nothing (a review). Which table
    such a file holds is unknown: no command checks the connection until it parses."""
    sync = "2026-01-01-000000-local-a"
    files = scan_files("warehouse", sync, [ORDERS, {"db": "public", "name": "items", "columns": []}])
    source = {"semantic-layer/warehouse/orders.yaml": "name: orders\ntable: public.orders\n"}
    root = make_project(files | source | {"semantic-layer/warehouse/hydrants.yaml": HYDRANTS})
    service = service_for(root)
    assert unscanned(service.rebuild().diagnostics) == [("semantic-layer/warehouse/hydrants.yaml", "warning")]
    write_files(
        root, {f"raw-sources/warehouse/live-database/{sync}/tables/{table_file(None, 'public', 'orders')}": "{"}
    )
    for diagnostics in (service.rebuild().diagnostics, service.status().diagnostics, service.inspect().diagnostics):
        assert unscanned(diagnostics) == [] and any(d.code == "parse_error" for d in diagnostics)
    service.close()
