"""The reads (wiki_read, sl_read_source, entity_details) hydrate the refs the searches return."""


def test_reads_hydrate_refs(demo_service):
    page = demo_service.wiki_read("global/fiscal-calendar")
    assert page.scope == "GLOBAL" and page.content
    assert demo_service.wiki_read("active-subscriber-definition").scope == "USER"
    source = demo_service.sl_read_source("warehouse", "courier_weekly_scorecard")
    assert "sql:" in source.yaml
    details = demo_service.entity_details("warehouse", [{"table": "raw.depots", "columns": ["city"]}]).results[0]
    assert details.ok and details.columns[0].sampleValues and details.columns[0].distinctCount is not None
