"""Checks across the indexers' families over what the store holds (index/checks.py): a semantic-layer source whose
``table:`` no scan of its connection holds, in rebuild and status as in inspect, gone once a rescan holds it."""

from __future__ import annotations

from projects import scan_files, service_for, write_files

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
