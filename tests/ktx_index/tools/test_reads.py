"""The reads (wiki_read, sl_read_source; entity_details in test_entities.py) hydrate the refs the searches return."""

import os

import pytest
from projects import SL_OVERLAY, SL_SHARD, column, scan_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import IndexUnavailable, InvalidInput, NotFound
from ktx_index.index.layout import IndexLayout, WriterLock
from ktx_index.index.store import DocStore
from ktx_index.service import KtxIndex


def test_reads_hydrate_refs(demo_service):
    page = demo_service.wiki_read("global/fiscal-calendar")
    assert page.scope == "GLOBAL" and page.content
    assert demo_service.wiki_read("active-subscriber-definition").scope == "USER"
    source = demo_service.sl_read_source("warehouse", "courier_weekly_scorecard")
    assert "sql:" in source.yaml
    details = demo_service.entity_details("warehouse", [{"table": "raw.depots", "columns": ["city"]}]).results[0]
    assert details.ok and details.columns[0].sampleValues and details.columns[0].distinctCount is not None


def test_a_folder_that_cannot_be_listed_hides_only_its_own_pages(make_project):
    """The user's folder is a symlink loop (as one without read permission): the global page is read; a page
    only that folder could hold is an in-band error naming the folder, not "not found"."""
    root = make_project({"wiki/global/revenue.md": "---\nsummary: Revenue\n---\nNet of refunds.\n"})
    (root / "wiki/user").mkdir()
    os.symlink("local", root / "wiki/user/local")
    service = KtxIndex(root, embedder=HashEmbedder())
    assert service.wiki_read("revenue").scope == "GLOBAL"
    with pytest.raises(InvalidInput, match=r"wiki/user/local: cannot list this folder .*make the folder readable"):
        service.wiki_read("churn")
    service.close()


def test_a_page_whose_frontmatter_never_parsed_still_reads_whole(make_project):
    """No good version to serve (no index yet here): wiki_read gives the whole file, and ``stale`` says why its
    fields are empty, rather than an error the agent cannot act on."""
    text = "---\nsummary: [Refunds\n---\n# Refunds\nWithin 30 days.\n"
    service = KtxIndex(make_project({"wiki/global/refunds.md": text}), embedder=HashEmbedder())
    page = service.wiki_read("refunds")
    assert page.content == text.strip() and page.tags == [] and page.path == "wiki/global/refunds.md"
    assert page.summary == "" and page.stale.startswith("wiki/global/refunds.md: frontmatter: ")
    service.close()


def test_a_page_read_whole_then_emptied_reads_as_search_still_serves_it(make_project):
    text = "---\nsummary: [Refunds\n---\n# Refunds\nWithin 30 days.\n"
    root = make_project({"wiki/global/refunds.md": text})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    (root / "wiki/global/refunds.md").write_text("")
    service.rebuild()
    page = service.wiki_read("refunds")
    assert page.content == text.strip() and page.stale.startswith("wiki/global/refunds.md: the page is empty")
    service.close()


def test_a_page_whose_frontmatter_breaks_reads_as_search_serves_it(make_project):
    """After an edit breaks its frontmatter, the page reads as wiki_search still finds it: its last good version,
    with ``stale`` naming the file and why; once it parses again, as it is."""
    good = "---\nsummary: Refund rules\ntags: [finance]\nsl_refs: [warehouse.orders]\n---\n# Refunds\nWithin 30 days.\n"
    root = make_project({"wiki/global/refunds.md": good})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    assert service.wiki_read("refunds").stale is None
    (root / "wiki/global/refunds.md").write_text(good.replace("summary: Refund rules", "summary: [Refund rules"))
    service.rebuild()
    page = service.wiki_read("refunds")
    assert (page.summary, page.tags, page.slRefs) == ("Refund rules", ["finance"], ["warehouse.orders"])
    assert page.content == "# Refunds\nWithin 30 days." and page.stale.startswith("wiki/global/refunds.md: ")
    assert service.wiki_search("refund rules").results[0].stale == page.stale  # as search serves it
    (root / "wiki/global/refunds.md").write_text("")  # emptied, a save caught half-way: kept as search keeps it
    service.rebuild()
    page = service.wiki_read("refunds")
    assert page.summary == "Refund rules" and page.stale.startswith("wiki/global/refunds.md: the page is empty")
    (root / "wiki/global/refunds.md").write_text(good.replace("30 days", "14 days"))
    service.rebuild()
    page = service.wiki_read("refunds")
    assert page.stale is None and page.content.endswith("Within 14 days.")
    service.close()


def test_a_path_shaped_key_before_any_index_gets_ktx_flat_form(make_project):
    """No index yet (wiki_read reads pages from disk, so it answers before any build): the pages are not known,
    so a key with a path in it is offered KTX's flat form, not an error about the missing index."""
    service = KtxIndex(make_project({"wiki/global/a-b.md": "---\nsummary: AB\n---\nBody.\n"}), embedder=HashEmbedder())
    with pytest.raises(InvalidInput, match=r'Wiki keys must be flat; use "a-b"\.$'):
        service.wiki_read("a/b")
    assert service.wiki_read("a-b").content == "Body."
    with pytest.raises(NotFound, match=r'^Wiki page "a-c" was not found\. There is no index yet to list the known'):
        service.wiki_read("a-c")  # said only that there was no index
    assert not service.layout.exists()
    service.close()


def test_a_key_with_control_characters_is_quoted_escaped(make_project):
    """A NUL or a newline sent in a key is shown as its escape in the error, as every other echo of a value is."""
    service = KtxIndex(make_project({"wiki/global/a-b.md": "---\nsummary: AB\n---\nBody.\n"}), embedder=HashEmbedder())
    with pytest.raises(InvalidInput) as caught:
        service.wiki_read("a-b\x00/x")
    assert 'Invalid wiki key "a-b\\x00/x"' in str(caught.value) and "\x00" not in str(caught.value)
    service.close()


def test_a_page_deleted_since_the_index_read_it_is_not_offered_as_its_own_replacement(make_project):
    root = make_project({"wiki/global/refunds.md": "---\nsummary: S\n---\nBody.\n"})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    (root / "wiki/global/refunds.md").unlink()
    with pytest.raises(NotFound, match=r"Its file is gone since the index was last brought up to date") as caught:
        service.wiki_read("refunds")
    assert "Did you mean" not in str(caught.value)
    service.close()


def test_a_long_list_of_known_keys_says_how_many_it_leaves_out(make_project):
    pages = {f"wiki/global/page-{i:02d}.md": "---\nsummary: S\n---\nBody.\n" for i in range(14)}
    service = KtxIndex(make_project(pages), embedder=HashEmbedder())
    service.rebuild()
    with pytest.raises(Exception, match=r"Known: page-00, .*, page-09 \(and 4 more\)"):
        service.wiki_read("zzz")
    service.close()


def test_a_missing_page_is_offered_only_keys_it_resembles(make_project):
    keys = ("odd", "revenue-definitions", "new-hire-onboarding-policy")
    pages = {f"wiki/global/{key}.md": "---\nsummary: S\n---\nBody.\n" for key in keys}
    service = KtxIndex(make_project(pages), embedder=HashEmbedder())
    service.rebuild()
    with pytest.raises(Exception, match=r"known: new-hire-onboarding-policy, odd, revenue-definitions"):
        service.wiki_read("../../etc/passwd")  # 'passwd' is no misspelling of 'odd''
    with pytest.raises(Exception, match=r"Did you mean: revenue-definitions"):
        service.wiki_read("revenue-definitons")
    with pytest.raises(Exception, match=r"Known: new-hire-onboarding-policy, odd"):
        service.wiki_read("nope")  # the letters of 'nope' in a long key are no resemblance
    with pytest.raises(Exception, match=r"Did you mean: new-hire-onboarding-policy"):
        service.wiki_read("onboarding")
    service.close()


def test_a_source_asked_of_a_scan_only_connection_points_to_its_tables(make_project):
    table = {"catalog": None, "db": "ops", "name": "mbr", "columns": [column("mbr_id", "int")]}
    service = KtxIndex(
        make_project(scan_files("pgcoop", "2026-01-01-000000-local-a", [table])), embedder=HashEmbedder()
    )
    service.rebuild()
    with pytest.raises(
        Exception, match=r"no semantic-layer sources; read its scanned tables with entity_details \(such as ops\.mbr\)"
    ):
        service.sl_read_source("pgcoop", "members")
    service.close()


def semantic_layer_of(make_project, rel: str, text: str) -> KtxIndex:
    """A project whose warehouse connection's semantic layer is one file, indexed."""
    service = KtxIndex(make_project({f"semantic-layer/warehouse/{rel}": text}), embedder=HashEmbedder())
    service.rebuild()
    return service


def test_a_source_file_that_never_parsed_is_read_as_written(make_project):
    """Upstream registers a broken file as a source of its ``name:`` (or its file's stem) whose YAML is the file's
    text, so an agent can read what a person was writing; it was "not found". Another name still is."""
    broken = "name: hydrant_flushes\ntable: ops.flushes\ncolumns:\n  - name: [zone\n"
    service = semantic_layer_of(make_project, "flushing.yaml", broken)
    source = service.sl_read_source("warehouse", "hydrant_flushes")
    assert source.yaml == broken and source.path == "semantic-layer/warehouse/flushing.yaml"
    assert source.stale.startswith("semantic-layer/warehouse/flushing.yaml does not parse (")
    assert source.stale.endswith("this is the file as written, never read")
    with pytest.raises(NotFound, match=r"flushing\.yaml"):  # the stem names it only when no name: line does
        service.sl_read_source("warehouse", "flushing")
    service.close()


@pytest.mark.parametrize(
    ("rel", "text", "sent"),
    [
        ("_schema/public.yaml", "tables:\n  orders: [broken\n", "public"),  # a broken shard is no source
        ("ghost.yaml", "name: ghost\nmeasures: {a: 1}\n", "ghost"),  # parses: an overlay with no base
        ("up.yaml", "name: ../orders\ncolumns: [\n", "../orders"),  # no source may have that name
    ],
)
def test_only_a_file_that_is_not_yaml_is_read_as_written(make_project, rel, text, sent):
    service = semantic_layer_of(make_project, rel, text)
    with pytest.raises(NotFound):
        service.sl_read_source("warehouse", sent)
    service.close()


def test_a_broken_file_is_named_as_the_indexer_names_it(make_project):
    text = 'name: "Orders Daily"  # the daily roll-up\ncolumns: [\n'
    service = semantic_layer_of(make_project, "daily.yaml", text)
    assert service.sl_read_source("warehouse", "Orders Daily").yaml == text
    service.close()


def overlaid_orders(make_project) -> tuple:
    """A connection's manifest and an overlay onto its orders source, indexed: (project root, service)."""
    root = make_project(
        {"semantic-layer/warehouse/_schema/public.yaml": SL_SHARD, "semantic-layer/warehouse/orders.yaml": SL_OVERLAY}
    )
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    return root, service


def test_a_source_whose_overlay_breaks_is_read_as_its_last_good_version_and_says_so(make_project):
    """While its overlay does not parse, the source is read as search finds it: its last good version, measures
    and all, with the broken file named (recomposed from the manifest alone, its measures went missing)."""
    root, service = overlaid_orders(make_project)
    assert service.sl_read_source("warehouse", "orders").stale is None
    (root / "semantic-layer/warehouse/orders.yaml").write_text(SL_OVERLAY + "measures: [\n")
    service.rebuild()
    source = service.sl_read_source("warehouse", "orders")
    assert "order_count" in source.yaml
    assert source.stale.startswith("semantic-layer/warehouse/orders.yaml does not parse (invalid YAML at line 13")
    assert source.stale.endswith("; this is the source's last good version")
    assert service.discover_data("orders", kinds=["sl_source"]).refs[0].stale  # search serves it stale too
    assert service.sl_read_source("warehouse", "customers").stale is None
    (root / "semantic-layer/warehouse/orders.yaml").write_text(SL_OVERLAY)
    service.rebuild()
    assert service.sl_read_source("warehouse", "orders").stale is None
    service.close()


def test_a_source_names_its_own_broken_overlay_not_a_warning_or_another_file(make_project):
    root = make_project(
        {
            "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD + "  broken_entry: 5\n",
            "semantic-layer/warehouse/orders.yaml": SL_OVERLAY + "owner: finance\n",  # an unknown key: a warning
        }
    )
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    assert service.sl_read_source("warehouse", "orders").stale is None
    (root / "semantic-layer/warehouse/orders.yaml").write_text(SL_OVERLAY + "measures: [\n")
    service.rebuild()
    assert service.sl_read_source("warehouse", "orders").stale.startswith(
        "semantic-layer/warehouse/orders.yaml does not parse (invalid YAML"
    )
    service.close()


def test_a_source_whose_overlay_stops_being_a_mapping_reads_as_search_finds_it(make_project):
    """An overlay that parses as YAML but not as a source (a list) is a file that does not parse: what it added
    stays, stale, in search and in the source as it reads (until the forty-fourth session it put no hold on
    the connection, and its measures went)."""
    root, service = overlaid_orders(make_project)
    (root / "semantic-layer/warehouse/orders.yaml").write_text("- name: orders\n")
    service.rebuild()
    source = service.sl_read_source("warehouse", "orders")
    assert "order_count" in source.yaml and "orders.yaml" in source.stale
    assert [r for r in service.discover_data("order count", kinds=["sl_measure"]).refs if r.id == "orders.order_count"]
    service.close()


def test_a_page_saved_in_a_windows_code_page_reads_as_search_found_it(make_project):
    root = make_project({})
    (root / "wiki/global").mkdir(parents=True)
    (root / "wiki/global/menu.md").write_bytes("---\nsummary: Crème brûlée\n---\nCafé menu\n".encode("cp1252"))
    service = KtxIndex(root, embedder=HashEmbedder())
    report = service.rebuild()
    assert any(d.path == "wiki/global/menu.md" and "Windows-1252" in d.message for d in report.diagnostics)
    assert [r.key for r in service.wiki_search("café menu").results] == ["menu"]
    page = service.wiki_read("menu")
    assert (page.summary, page.content) == ("Crème brûlée", "Café menu")
    service.close()


def test_a_page_that_cannot_be_read_reads_as_search_serves_it(make_project):
    """A page the index read before and that is no text now (binary, an unlistable folder) reads as wiki_search
    serves it, ``stale`` (an outside pass: an error while search served it); one it never read is an error."""
    root = make_project({"wiki/global/kept.md": "---\nsummary: Kept\n---\nBody.\n"})
    (root / "wiki/global/never.md").write_bytes(b"---\nsummary: x\n---\n\x00 binary\n")
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    with pytest.raises(InvalidInput, match=r"the index holds nothing of it until it can be read"):
        service.wiki_read("never")
    (root / "wiki/global/kept.md").write_bytes(b"---\nsummary: Kept\n---\n\x00 binary now\n")
    service.rebuild()
    page = service.wiki_read("kept")
    assert (page.summary, page.content) == ("Kept", "Body.") and page.stale.startswith("wiki/global/kept.md: ")
    (root / "wiki/global/kept.md").unlink()
    (root / "wiki/global/kept.md").symlink_to("kept.md")  # a loop: the file cannot be read at all
    page = service.wiki_read("kept")
    assert page.content == "Body." and page.stale.startswith("wiki/global/kept.md: ")
    service.close()


def test_a_source_sent_as_the_table_it_reads_is_read(make_project):
    """An agent sends a source's name in another case, or copies a ref's tableRef (``public.orders``) where the
    source's name (``orders``) is asked: the one source of that name reading that table answers, quotes and case
    aside, and the name after its connection, as a wiki page's ``sl_refs`` write it; a schema that only ends like
    it, or a source written as SQL, is still not found."""
    sql_source = "name: weekly\nsql: select 1 as n\ngrain: [n]\ncolumns:\n  - {name: n, type: number}\n"
    files = {
        "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD,
        "semantic-layer/warehouse/weekly.yaml": sql_source,
    }
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    assert service.sl_read_source("warehouse", "weekly").sourceName == "weekly"
    assert service.sl_read_source("warehouse", "WEEKLY").sourceName == "weekly"  # unquoted names ignore case
    assert service.sl_read_source("warehouse", "weekly.yaml").sourceName == "weekly"  # as its file is named
    for sent in ("public.orders", "shop.PUBLIC.Orders", '"public"."orders"', "`public`.`orders`", "[public].[orders]"):
        assert service.sl_read_source("warehouse", sent).sourceName == "orders", sent
    for sent in ("warehouse.weekly", "warehouse.orders"):  # a wiki page's sl_refs: connection.source
        assert service.sl_read_source("warehouse", sent).sourceName == sent.split(".")[1], sent
    for sent in ("sales.orders", "lic.orders", "public.weekly"):
        with pytest.raises(NotFound, match=r"was not found"):
            service.sl_read_source("warehouse", sent)
    service.close()


def test_a_table_read_by_a_source_named_otherwise_names_that_source(make_project):
    """An agent that copies a table's name (``tms.job_ln``) where a source named otherwise (``jobs``) reads it is
    told which name to send; upstream answers "not found" alone."""
    jobs = "name: jobs\ntable: tms.job_ln\ngrain: [id]\ncolumns:\n  - {name: id, type: string}\n"
    service = semantic_layer_of(make_project, "jobs.yaml", jobs)
    for sent in ("tms.job_ln", "JOB_LN", '"tms"."job_ln"', "warehouse.job_ln"):
        with pytest.raises(NotFound, match=r"source jobs reads table tms\.job_ln; send its name"):
            service.sl_read_source("warehouse", sent)
    with pytest.raises(NotFound, match=r"known: jobs"):  # another schema's table is not the one it reads
        service.sl_read_source("warehouse", "crm.job_ln")
    service.close()


def test_a_scanned_table_no_source_reads_is_sent_to_entity_details(make_project):
    """``sl_read_source "cis.mtr"`` listed the known sources without saying the table is scanned, and read by
    entity_details (an outside pass)."""
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [{"catalog": None, "db": "cis", "name": "mtr",
                                                                   "columns": [column("id")]}])  # fmt: skip
    files["semantic-layer/warehouse/jobs.yaml"] = "name: jobs\nsql: select 1 as id\ncolumns:\n  - {name: id}\n"
    root = make_project(files)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    for sent in ("cis.mtr", "MTR"):
        with pytest.raises(NotFound, match=r'no source reads the scanned table cis\.mtr; read it with entity_details '
                           r'\{connectionId: "warehouse", entities: \[\{table: "cis\.mtr"\}\]\}'):  # fmt: skip
            service.sl_read_source("warehouse", sent)
    service.close()
    (root / "semantic-layer/warehouse/jobs.yaml").unlink()  # a scan-only connection: the table is named all the same
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    assert not service.refreshed_engine().store.docs.ids("sl_source", "warehouse")
    with pytest.raises(NotFound, match=r"no source reads the scanned table cis\.mtr"):
        service.sl_read_source("warehouse", "cis.mtr")
    service.close()


def test_a_missing_source_blames_only_a_broken_file_of_its_own_name(make_project):
    """A broken file is named when the source sent has its name, not when the name is any part of its path (``a``,
    ``ware`` and ``daily`` all blamed ``refunds_daily.yaml``)."""
    files = {
        "semantic-layer/warehouse/_schema/public.yaml": SL_SHARD,
        "semantic-layer/warehouse/refunds_daily.yaml": "name: refunds_daily\ntable: public.refunds\ncolumns: [\n",
    }
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    for sent in ("a", "ware", "daily"):
        with pytest.raises(NotFound) as raised:
            service.sl_read_source("warehouse", sent)
        assert "does not parse" not in str(raised.value), sent
    with pytest.raises(NotFound, match=r"that file does not parse \(semantic-layer/warehouse/refunds_daily\.yaml"):
        service.sl_read_source("warehouse", "public.REFUNDS_DAILY")
    service.close()


def test_a_missing_page_of_an_index_that_cannot_be_opened_says_why(make_project):
    """Only a project never indexed is told "no index yet"; an index that exists but cannot be opened now (written in
    another format while another writer holds it) says so, as every read does."""
    root = make_project({"wiki/global/ok.md": "---\nsummary: fine\n---\nbody\n"})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    service.close()
    store = DocStore(IndexLayout(root).store)
    store.meta.set({"format": "format=0;analysis=0"})
    store.close()
    writer = WriterLock(IndexLayout(root))
    writer.acquire()  # another writer, building or repairing it
    service = KtxIndex(root, embedder=HashEmbedder())
    try:
        assert service.wiki_read("ok").summary == "fine"  # the page itself needs no index
        with pytest.raises(IndexUnavailable, match=r"is building or repairing it; retry shortly"):
            service.wiki_read("missing-page")
    finally:
        service.close()
        writer.release()


def test_a_blank_key_or_source_name_is_told_what_to_send(demo_service):
    """Spaces alone were told "Wiki keys must be flat" and "source not found" (an outside pass)."""
    with pytest.raises(InvalidInput, match=r"^the wiki key is blank; send a key wiki_search returned"):
        demo_service.wiki_read("   ")
    with pytest.raises(InvalidInput, match=r"^the source name is blank; send a source's name"):
        demo_service.sl_read_source("warehouse", "  ")
    (item,) = demo_service.entity_details("warehouse", [{"table": "   "}]).results
    assert not item.ok and item.error.message.startswith("The table sent is blank. Send one of the candidates")
