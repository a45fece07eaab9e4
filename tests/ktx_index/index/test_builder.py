"""The incremental builder against real stores (tantivy, SQLite, vector file) and the fake embedder."""

import json
import os
import time
from pathlib import Path

import pytest
from projects import ORDERS_SOURCE as SOURCE
from projects import PAGE, SL_OVERLAY, SL_SHARD, column, profile_entry, scan_files, service_for

from indexers.models import SEARCH_KINDS
from ktx_index.analysis import analyze
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import IndexBusy, Stopped
from ktx_index.index import commit
from ktx_index.index.builder import Builder
from ktx_index.index.layout import IndexLayout, format_stamp
from ktx_index.index.lexical import REWRITE_DELETED_SHARE
from ktx_index.index.store import DocStore
from ktx_index.service import KtxIndex


def test_first_build_then_noop_then_one_file(project):
    embedder = HashEmbedder()
    service = service_for(project, embedder)
    first = service.rebuild()
    assert first.added > 0 and first.updated == first.deleted == 0
    assert first.embedded == embedder.texts_encoded > 0
    assert (project / ".ktx/.gitignore").read_text().strip().endswith("index/")

    noop = service.rebuild()
    assert (noop.added, noop.updated, noop.deleted, noop.scopes_read, noop.embedded) == (0, 0, 0, 0, 0)

    time.sleep(0.01)
    (project / "wiki/global/churn.md").write_text(PAGE.format(summary="Churn definition", body="Now about lapsed."))
    one = service.rebuild()
    assert (one.scopes_read, one.added, one.updated, one.deleted) == (1, 0, 1, 0)
    assert 0 < one.embedded < first.embedded  # only the changed page's chunks
    assert service.wiki_search("lapsed").results[0].key == "churn"
    service.close()


def test_the_report_names_the_files_whose_documents_were_deleted(project):
    """A file removed (its scope dropped) and a file that no longer gives one of its documents: ``deleted`` counted
    them and nothing named them (a tester's 'deleted=1, but which?')."""
    service = service_for(project)
    assert service.rebuild().deleted_paths == []
    time.sleep(0.01)
    (project / "wiki/global/churn.md").unlink()
    source = project / "semantic-layer/warehouse/orders.yaml"
    source.write_text(SOURCE.split("measures:")[0])  # its measure dropped
    report = service.rebuild()
    assert report.deleted == 2
    assert report.deleted_paths == ["semantic-layer/warehouse/orders.yaml", "wiki/global/churn.md"]
    assert service.rebuild().deleted_paths == []
    service.close()


def test_the_lexical_index_holds_each_document_once_through_updates_moves_and_force(project):
    """New documents skip tantivy's delete (its queue held ~1.2 KB per document until the commit); an updated
    document, one that moves to another file, and a forced rebuild still leave exactly one copy."""
    service = service_for(project)
    service.rebuild()

    def copies(word: str) -> list[str]:
        lexical = service.refreshed_engine().lexical
        return [hit.uid for hit in lexical.search(analyze(word), ["wiki"], limit=50)]

    time.sleep(0.01)
    (project / "wiki/global/churn.md").write_text(PAGE.format(summary="Churn definition", body="Churn: zephyrine."))
    service.rebuild()
    assert copies("zephyrine") == ["wiki:global:churn"] and copies("cancellations") == []
    (project / "wiki/global/churn.md").rename(project / "wiki/global/attrition.md")  # another scope, new uid
    (project / "wiki/global/revenue.md").write_text(PAGE.format(summary="Revenue", body="Revenue and zephyrine."))
    service.rebuild()
    assert sorted(copies("zephyrine")) == ["wiki:global:attrition", "wiki:global:revenue"]
    service.rebuild(force=True)
    assert sorted(copies("zephyrine")) == ["wiki:global:attrition", "wiki:global:revenue"]
    service.close()


def test_a_commit_that_would_leave_a_tenth_of_the_lexical_index_deleted_writes_it_again(project):
    """tantivy counts a deleted document in its words' document frequency until it merges the segment away, and it
    seldom merges the first one: edits to the documents it holds move idf off a clean build's. The commit that would
    take them past REWRITE_DELETED_SHARE of the index writes it again from the store instead, and the counts are a
    clean build's again."""
    for n in range(40):  # enough documents that one edit deletes less than a tenth
        (project / f"wiki/global/note-{n}.md").write_text(PAGE.format(summary=f"Note {n}", body="A note."))
    service = service_for(project)
    service.rebuild()
    lexical = service.refreshed_engine().lexical
    assert lexical.deleted_share() == 0.0 and lexical.doc_freq("note") == 40
    rewritten = []
    for n in range(40):
        time.sleep(0.01)
        (project / f"wiki/global/note-{n}.md").write_text(PAGE.format(summary=f"Note {n}", body="An edited note."))
        rewritten.append(service.rebuild().lexical_rewritten)
        lexical = service.refreshed_engine().lexical
        assert lexical.deleted_share() <= REWRITE_DELETED_SHARE
        if rewritten[-1]:
            break
        assert lexical.doc_freq("note") == 40 + n + 1  # the deleted copies count
    assert rewritten[-1] and not any(rewritten[:-1]) and len(rewritten) > 1
    assert lexical.deleted_share() == 0.0 and lexical.doc_freq("note") == 40
    assert [page.key for page in service.wiki_search("edited note").results][:1] == ["note-0"]
    assert not service.rebuild(force=True).lexical_rewritten  # forced: the report says that itself
    service.close()


def test_a_commit_that_only_adds_is_not_written_again(make_project):
    """The stamp's delete alone made a tiny project's first build (one delete in five documents) and every page
    added after it cross the line."""
    root = make_project({"wiki/global/a.md": PAGE.format(summary="A", body="Alpha.")}, config=None)
    service = service_for(root)
    assert not service.rebuild().lexical_rewritten
    (root / "wiki/global/b.md").write_text(PAGE.format(summary="B", body="Beta."))
    assert not service.rebuild().lexical_rewritten
    service.close()


def test_documents_tantivy_never_holds_do_not_count_toward_a_rewrite(project):
    """Dictionary values live in the store only: 60 of them renamed beside one dimension delete one searchable
    document, not 61, so the commit is no rewrite (counted as deletes, every such edit rewrote the index)."""
    for n in range(60):
        (project / f"wiki/global/note-{n}.md").write_text(PAGE.format(summary=f"Note {n}", body="A note."))
    source = project / "semantic-layer/warehouse/tiers.yaml"

    def tiers(prefix: str) -> str:
        values = ", ".join(f"{prefix}{i}" for i in range(60))
        return f"name: tiers\ntable: public.tiers\ncolumns:\n  - {{name: tier, type: string, enum_values: {{dbt: [{values}]}}}}\n"

    source.write_text(tiers("gold"))
    service = service_for(project)
    service.rebuild()
    for prefix in ("silver", "bronze"):
        time.sleep(0.01)
        source.write_text(tiers(prefix))
        report = service.rebuild()
        assert report.deleted >= 60 and not report.lexical_rewritten
    assert service.refreshed_engine().lexical.deleted_share() <= REWRITE_DELETED_SHARE
    service.close()


def test_a_stop_while_the_lexical_index_is_written_again_commits_nothing(project, monkeypatch):
    """A forced rebuild adds back every document it did not parse again: at a million columns, about a minute, so
    a stop is checked along the way (every ADD_BACK_CHECK documents), and the last commit stands."""
    service = service_for(project)
    service.rebuild()
    generation = service.refreshed_engine().store.meta.generation()
    monkeypatch.setattr(commit, "ADD_BACK_CHECK", 1)
    original = commit.Commit.finish

    def stop_once_parsed(self, *args, **kwargs):  # every scope is parsed: the stop comes during the add-back
        service.request_stop()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(commit.Commit, "finish", stop_once_parsed)
    with pytest.raises(Stopped, match="writing the lexical index again"):
        service.rebuild(force=True)
    monkeypatch.setattr(commit.Commit, "finish", original)
    service.resume()
    assert service.refreshed_engine().store.meta.generation() == generation
    assert service.rebuild(force=True).generation == generation + 1
    service.close()


def test_a_renamed_scan_file_updates_its_tables_instead_of_adding_them(make_project):
    """A table's uid is its name, not its file's: renamed, the file's tables moved to another scope, and the
    summary (and the watcher's commit line) said +3 -0 while nothing was added."""
    table = {"catalog": None, "db": "raw", "name": "orders", "columns": [column("id", "int"), column("status")]}
    root = make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [table]))
    service = service_for(root)
    service.rebuild()
    tables = next(root.glob("raw-sources/warehouse/live-database/*/tables"))
    (json_file,) = tables.glob("*.json")
    json_file.rename(tables / "renamed-by-hand.json")
    moved = service.rebuild()
    assert (moved.added, moved.deleted) == (0, 0) and moved.updated >= 3
    assert [r.id for r in service.discover_data("orders status", kinds=["table"]).refs] == ["raw.orders"]
    service.close()


def test_deleting_a_file_deletes_its_documents(project):
    service = service_for(project)
    service.rebuild()
    os.remove(project / "semantic-layer/warehouse/orders.yaml")
    report = service.rebuild()
    assert report.deleted == 5  # source, measure, dimension, two enum values
    assert service.discover_data("orders", kinds=["sl_source"]).refs == []
    service.close()


def test_force_rewrites_documents_but_reuses_vectors(project):
    embedder = HashEmbedder()
    service = service_for(project, embedder)
    service.rebuild()
    encoded = embedder.texts_encoded
    forced = service.rebuild(force=True)
    assert forced.updated + forced.unchanged + forced.added > 0 and forced.scopes_read == forced.scopes
    assert forced.embedded == 0 and embedder.texts_encoded == encoded  # cache keyed by text hash
    assert service.discover_data("order_count").refs[0].id == "orders.order_count"
    service.close()


def test_broken_file_keeps_last_good_documents_flagged_stale(project):
    service = service_for(project)
    service.rebuild()
    (project / "wiki/global/revenue.md").write_text("---\nsummary: [broken\n---\nbody")
    report = service.rebuild()
    assert report.kept_stale == 1 and report.deleted == 0
    assert [s.path for s in report.stale] == ["wiki/global/revenue.md"]
    found = service.wiki_search("refunds").results[0]
    assert found.key == "revenue"  # still searchable, and said to be the last good version, with why
    assert found.stale.startswith("wiki/global/revenue.md: ") and "frontmatter" in found.stale
    refs = service.discover_data("refunds").refs
    assert next(r for r in refs if r.id == "revenue").stale == found.stale
    assert all(r.stale is None and "stale" not in r.model_dump() for r in refs if r.id != "revenue")
    status = service.status()
    assert status.stale and any(d.path == "wiki/global/revenue.md" for d in status.diagnostics)
    (project / "wiki/global/revenue.md").write_text(PAGE.format(summary="Revenue v2", body="Gross revenue."))
    repaired = service.rebuild()
    assert repaired.updated == 1 and repaired.stale == []
    assert service.wiki_read("revenue").summary == "Revenue v2"
    assert all(r.stale is None for r in service.wiki_search("revenue").results)
    service.close()


def test_a_table_two_scan_files_define_stays_with_the_first_until_it_goes(make_project):
    """A stray copy of a table's file: deleting it deleted the table (written last by the copy), while the
    table's own file, unchanged, was not read again."""
    orders = {"catalog": None, "db": "s", "name": "orders", "columns": [column("id"), column("status")]}
    root = make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [orders]))
    tables = root / "raw-sources/warehouse/live-database/2026-01-01-000000-aaaa/tables"
    (original,) = tables.iterdir()
    copy = tables / "zz-copy-of-orders.json"
    copy.write_bytes(original.read_bytes())
    service = service_for(root)
    inspected = service.inspect()  # what the index will see, read without it: the table once, and the warning
    assert inspected.counts["table"] == 1 and inspected.counts["column"] == 2
    assert [d.path for d in inspected.diagnostics if d.code == "warning"] == [str(copy.relative_to(root))]
    first = service.rebuild()
    (warned,) = [d for d in first.diagnostics if d.path.endswith(copy.name)]
    assert warned.code == "warning" and warned.message.startswith(
        f"s.orders also defined by {original.relative_to(root)}"
    )
    ids = {r.id for r in service.discover_data("orders status").refs}
    assert {"s.orders", "s.orders.status"} <= ids
    copy.unlink()
    assert service.rebuild().deleted == 0 and {r.id for r in service.discover_data("orders status").refs} == ids
    copy.write_bytes(original.read_bytes())
    service.rebuild()
    original.unlink()  # the copy takes the table over in the same commit
    gone = service.rebuild()
    assert gone.deleted == 0 and not any(d.path.endswith(copy.name) for d in gone.diagnostics)
    assert {r.id for r in service.discover_data("orders status").refs} == ids
    assert service.rebuild().scopes_read == 0  # and is no longer read at every build
    service.close()


def test_of_two_files_defining_a_table_the_first_by_name_keeps_it_whatever_the_index_saw_first(make_project):
    """An outside pass: an index that saw the later file first kept its version, even through --force, while a
    fresh build kept the other's: two users of one project got different table metadata."""
    orders = {"catalog": None, "db": "s", "name": "orders", "columns": [column("id"), column("status")]}
    root = make_project(scan_files("warehouse", "2026-01-01-000000-aaaa", [orders]))
    tables = root / "raw-sources/warehouse/live-database/2026-01-01-000000-aaaa/tables"
    (original,) = tables.iterdir()
    later = tables / "zz-copy-of-orders.json"
    later.write_text(json.dumps({**orders, "comment": "the copy's"}))
    kept = original.read_bytes()
    original.unlink()
    service = service_for(root)

    def comment() -> str | None:
        return service.refreshed_engine().store.docs.get("table:warehouse:s.orders").comment

    service.rebuild()  # the index sees the later file alone first
    assert comment() == "the copy's"
    original.write_bytes(kept)
    assert service.rebuild().deleted == 0 and not comment()  # the first by name takes it over
    assert [d.path for d in service.status().diagnostics if d.code == "warning"] == [str(later.relative_to(root))]
    assert service.rebuild().scopes_read == 1  # and the later file, read again, declines it and says so again
    assert [d.path for d in service.status().diagnostics if d.code == "warning"] == [str(later.relative_to(root))]
    assert service.rebuild(force=True) and not comment()
    later.unlink()
    assert service.rebuild().deleted == 0 and not comment()
    service.close()


def test_a_page_too_long_to_embed_whole_is_searched_whole_and_said_to_be_embedded_in_part(project):
    days = "".join(f"## Day {i}\n\n{'The night shift reloaded the feed. ' * 25}\n\n" for i in range(260))
    (project / "wiki/global/ops-log.md").write_text(PAGE.format(summary="Ops log", body=days + "## Last\n\nzeppelin"))
    service = service_for(project)
    report = service.rebuild()
    warned = [d for d in report.diagnostics if d.path == "wiki/global/ops-log.md"]
    assert [d.code for d in warned] == ["warning"] and " of 262 passages (about 24,000 words)" in warned[0].message
    assert service.wiki_search("zeppelin").results[0].key == "ops-log"  # past the embedded passages: by its words
    assert any(d.path == "wiki/global/ops-log.md" for d in service.status().diagnostics)
    assert any(d.path == "wiki/global/ops-log.md" for d in service.inspect().diagnostics)
    service.close()


def test_a_page_whose_frontmatter_never_parsed_is_searched_whole_and_said_to_be_broken(project):
    (project / "wiki/global/withdrawals.md").write_text("---\nsummary: [broken\n---\nReturn of federal aid funds")
    service = service_for(project)
    report = service.rebuild()
    assert [s.path for s in report.stale] == ["wiki/global/withdrawals.md"] and report.kept_stale == 0
    found = service.wiki_search("return of federal aid").results[0]
    assert found.key == "withdrawals" and found.summary == ""  # no field read: the whole file is its text
    assert found.stale.startswith("wiki/global/withdrawals.md: ") and "frontmatter" in found.stale
    (project / "wiki/global/withdrawals.md").write_text("---\nsummary: [broken\n---\nR2T4 worksheet")
    assert service.rebuild().updated == 1  # still broken: the whole read follows the file
    assert service.wiki_search("R2T4 worksheet").results[0].key == "withdrawals"
    (project / "wiki/global/withdrawals.md").write_text(PAGE.format(summary="Withdrawals", body="Return of aid."))
    repaired = service.rebuild()
    assert repaired.updated == 1 and repaired.stale == []
    assert service.wiki_search("return of aid").results[0].stale is None
    service.close()


def test_a_folder_that_cannot_be_listed_keeps_its_documents_stale_until_it_can(project):
    """A connection folder replaced by a symlink loop (as a folder without read permission): its sources are
    out of sight, not deleted; once the folder reads again they are fresh, and nothing is embedded twice."""
    service = service_for(project)
    service.rebuild()
    folder = project / "semantic-layer/warehouse"
    folder.rename(project.parent / "aside")
    os.symlink("warehouse", folder)
    report = service.rebuild()
    assert report.deleted == 0 and report.kept_stale == 5
    assert [(d.path, d.code) for d in report.diagnostics] == [("semantic-layer/warehouse", "unlisted")]
    assert {s.path for s in report.stale} == {"semantic-layer/warehouse/orders.yaml"}
    assert service.discover_data("order_count").refs[0].id == "orders.order_count"
    status = service.status()
    assert status.changed_paths == [] and [d.code for d in status.diagnostics] == ["unlisted"]
    generation = status.generation
    again = service.rebuild()  # still out of sight: nothing to do again (at 1M columns, re-marking cost ~0.5 s)
    assert (again.scopes_read, again.kept_stale, again.deleted, again.generation) == (0, 0, 0, generation)
    assert [s.path for s in again.stale] == ["semantic-layer/warehouse/orders.yaml"]
    folder.unlink()
    (project.parent / "aside").rename(folder)
    restored = service.rebuild()
    assert restored.stale == [] and restored.diagnostics == [] and restored.deleted == 0
    assert restored.embedded == 0
    service.close()


@pytest.mark.parametrize(
    "looping",
    [
        "semantic-layer/warehouse/nested",  # a folder below a connection's: its other files are not deleted either
        "semantic-layer/dbt",  # a connection ktx.yaml does not declare
        "raw-sources/warehouse/live-database/2026-02-01-000000-local-b",  # the newest snapshot
    ],
)
@pytest.mark.parametrize("how", ["symlink loop", "a file in its place"])
def test_a_looping_folder_anywhere_keeps_what_it_hides(make_project, looping, how):
    sync = "2026-02-01-000000-local-b"
    table = {"db": "public", "name": "orders", "columns": [column("status"), column("region")]}
    files = {
        "semantic-layer/warehouse/orders.yaml": SOURCE,
        "semantic-layer/warehouse/nested/extra.yaml": SOURCE.replace("orders", "extras"),
        "semantic-layer/dbt/orders.yaml": SOURCE,
        **scan_files("warehouse", "2026-01-01-000000-local-a", [{**table, "columns": [column("status")]}]),
        **scan_files("warehouse", sync, [table]),
    }
    service = service_for(make_project(files))
    service.rebuild()
    before = service.status().counts
    root = service.project.root
    (root / looping).rename(root.parent / "aside")
    if how == "symlink loop":
        os.symlink(Path(looping).name, root / looping)
    else:
        (root / looping).write_text("not a folder")
    report = service.rebuild()
    assert report.deleted == 0 and report.kept_stale > 0, report
    if how == "symlink loop":
        assert looping in {d.path for d in report.diagnostics if d.code == "unlisted"}
    else:  # a stray file is no error of its own; the stale documents say why they are kept
        assert {s.reason.split(":")[0] for s in report.stale} == {looping}
    assert service.status().counts == before  # every document still there, stale
    service.close()


def test_files_whose_names_are_not_utf8_are_reported_and_the_rest_indexed(project):
    """A name in another encoding (Latin-1 bytes) once crashed rebuild, status and serve; it is a diagnostic now."""
    service = service_for(project)
    for rel in (b"semantic-layer/warehouse/caf\xe9.yaml", b"wiki/global/r\xe9sum\xe9.md"):
        with open(os.path.join(os.fsencode(project), rel), "wb") as fh:
            fh.write(b"name: x\n")
    report = service.rebuild()
    named = {d.path: d.message for d in report.diagnostics if "UTF-8" in d.message}
    assert set(named) == {"semantic-layer/warehouse/caf\\xe9.yaml", "wiki/global/r\\xe9sum\\xe9.md"}
    assert "rename it" in named["wiki/global/r\\xe9sum\\xe9.md"]
    assert service.wiki_search("refunds").results and service.discover_data("order count").refs
    assert {d.path for d in service.status().diagnostics} >= set(named)
    service.close()


def test_a_field_of_the_wrong_shape_keeps_what_it_held_stale(project):
    """The file parsed and the rest of it is read: its code is wrong_shape, not parse_error (sl_read_source said
    the file 'does not parse'), in rebuild and status alike, and what the field held is kept, stale, until fixed."""
    service = service_for(project)
    service.rebuild()
    rel = "semantic-layer/warehouse/orders.yaml"
    (project / rel).write_text(SOURCE.split("measures:")[0] + "measures: nope\n")
    report = service.rebuild()
    assert report.deleted == 0 and report.kept_stale == 1
    said = [(rel, "wrong_shape", "measures: expected a list of mappings, got the string 'nope'; it is left out")]
    assert [(d.path, d.code, d.message) for d in report.diagnostics] == said
    assert [(d.path, d.code, d.message) for d in service.status().diagnostics] == said
    (ref,) = service.discover_data("order_count", kinds=["sl_measure"]).refs[:1]
    assert ref.id == "orders.order_count" and ref.stale == f"{rel}: {said[0][2]}"
    assert service.sl_read_source("warehouse", "orders").stale == f"{rel}: {said[0][2]}"
    (project / rel).write_text(SOURCE)
    report = service.rebuild()
    assert report.diagnostics == [] and service.status().stale == []
    assert service.discover_data("order_count", kinds=["sl_measure"]).refs[0].stale is None
    service.close()


def profiled_orders(make_project, *names: str) -> tuple[Path, KtxIndex, Path]:
    """(root, built service, scan folder) of a project whose one table, public.orders, has these columns, its
    status profiled with two values."""
    table = {"db": "public", "name": "orders", "columns": [column(name) for name in names]}
    profile = {"columns": {"orders.status": profile_entry("public", "orders", "status", ["paid", "refunded"])}}
    sync = "2026-01-01-000000-local-a"
    root = make_project(scan_files("warehouse", sync, [table], profile))
    service = service_for(root)
    service.rebuild()
    return root, service, root / f"raw-sources/warehouse/live-database/{sync}"


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[:40],  # truncated mid-write
        lambda text: json.dumps({**json.loads(text), "columns": list(json.loads(text)["columns"].values())}),
    ],
    ids=["truncated", "columns-not-an-object"],
)
def test_sample_values_outlive_a_relationship_profile_that_no_longer_parses(make_project, damage):
    """The dictionary values and the table's documents that carry the samples keep their last good version, stale
    (the column's documents, read without the profile, lost their samples: an outside pass)."""
    root, service, folder = profiled_orders(make_project, "status")
    profile_path = folder / "enrichment/relationship-profile.json"
    profile_path.write_text(damage(profile_path.read_text()))
    report = service.rebuild()
    assert report.deleted == 0 and report.kept_stale >= 2
    assert [d.path for d in report.diagnostics] == [str(profile_path.relative_to(root))]
    assert [m.matchedValue for m in service.dictionary_search(["refunded"]).results[0].matches] == ["refunded"]
    found = service.entity_details("warehouse", [{"table": "public.orders"}]).results[0]
    assert found.stale and found.columns[0].sampleValues == ["paid", "refunded"]
    service.close()


def test_a_table_file_edited_while_its_profile_does_not_parse_is_read_with_its_last_samples(make_project):
    """What the table file says is taken (a comment, a column renamed); what it took from the profile that does not
    parse now comes from its last good version, stale (the review: the whole table was frozen, even by an old scan's
    broken profile that never described it)."""
    _root, service, folder = profiled_orders(make_project, "status", "pt_id")
    (folder / "enrichment/relationship-profile.json").write_text('{"columns": {')
    path = next((folder / "tables").glob("*.json"))
    edited = json.loads(path.read_text().replace('"pt_id"', '"patient_id"')) | {"comment": "Orders"}
    path.write_text(json.dumps(edited))
    service.rebuild()
    found = service.entity_details("warehouse", [{"table": "public.orders"}]).results[0]
    assert found.stale and found.comment == "Orders" and [c.name for c in found.columns] == ["status", "patient_id"]
    assert found.columns[0].sampleValues == ["paid", "refunded"]
    service.close()


@pytest.mark.parametrize(
    "broken", [SL_OVERLAY + "measures: [unterminated\n", "- a\n", "just a sentence\n"], ids=["syntax", "list", "scalar"]
)
def test_an_overlay_that_no_longer_parses_keeps_what_it_added_to_its_base(make_project, broken):
    """The overlay's measure lives on its base's documents (the manifest entry's path): its own file's parse error
    alone would not keep it; the connection's hold does (ScopeResult.kept), said once in each stale reason rather
    than as a second diagnostic on the folder. YAML that parses to no mapping is such a file too (an outside pass:
    its measures were deleted)."""
    root = make_project(
        {"semantic-layer/warehouse/_schema/public.yaml": SL_SHARD, "semantic-layer/warehouse/orders.yaml": SL_OVERLAY}
    )
    service = service_for(root)
    service.rebuild()
    (root / "semantic-layer/warehouse/orders.yaml").write_text(broken)
    report = service.rebuild()
    assert report.deleted == 0 and report.kept_stale >= 1
    assert {d.path for d in report.diagnostics} == {"semantic-layer/warehouse/orders.yaml"}
    (reason,) = {s.reason for s in report.stale}  # why, in words an agent reading the ref can act on
    assert reason.startswith("semantic-layer/warehouse: orders.yaml (") and reason.endswith(
        ") does not parse or cannot be read, and may add to this source"
    )
    assert report.diagnostics[0].message in reason
    assert service.discover_data("order_count").refs[0].id == "orders.order_count"
    service.close()


@pytest.mark.parametrize("columns", [None, {"a": 1}], ids=["missing", "an-object"])
def test_a_table_file_without_its_column_list_keeps_its_last_good_documents(make_project, columns):
    """A scan always lists a table's columns: a file without the list (missing, or not a list) is not a table file,
    and what it gave stays, stale (an outside pass: 24 documents went, the table read with no columns)."""
    sync = "2026-01-01-000000-local-a"
    root = make_project(
        scan_files("warehouse", sync, [{"db": "public", "name": "orders", "columns": [column("status")]}])
    )
    service = service_for(root)
    service.rebuild()
    path = next((root / f"raw-sources/warehouse/live-database/{sync}/tables").glob("*.json"))
    table = json.loads(path.read_text())
    table.pop("columns") if columns is None else table.update(columns=columns)
    path.write_text(json.dumps(table))
    report = service.rebuild()
    assert report.deleted == 0 and [d.code for d in report.diagnostics] == ["parse_error"]
    found = service.entity_details("warehouse", [{"table": "public.orders"}]).results[0]
    assert found.stale and [c.name for c in found.columns] == ["status"]
    service.close()


def test_an_overlay_that_no_longer_parses_keeps_its_column_descriptions(make_project):
    """The columns of an overlaid source are composed from both files too: read from the manifest alone they would
    lose the overlay's descriptions (search showing none, unflagged); they keep their last good
    version, stale, as the source does."""
    root = make_project(
        {"semantic-layer/warehouse/_schema/public.yaml": SL_SHARD, "semantic-layer/warehouse/orders.yaml": SL_OVERLAY}
    )
    service = service_for(root)
    service.rebuild()
    (root / "semantic-layer/warehouse/orders.yaml").write_text(SL_OVERLAY + "measures: [unterminated\n")
    service.rebuild()
    ref = next(r for r in service.discover_data("orders.status").refs if r.id == "orders.status")
    assert ref.summary == "Lifecycle status of the order" and ref.stale
    (root / "semantic-layer/warehouse/orders.yaml").write_text(SL_OVERLAY)
    service.rebuild()
    ref = next(r for r in service.discover_data("orders.status").refs if r.id == "orders.status")
    assert ref.summary == "Lifecycle status of the order" and ref.stale is None
    service.close()


def test_a_forced_rebuild_over_a_table_two_files_define_holds_it_once(make_project):
    """Two table files of one sync define one table (a copy by hand): a forced rebuild puts it twice in one commit.
    The vocabulary counts the stored version's words once and the lexical index holds one document for it (the
    review: the first version's words stayed bridged, and tantivy held both)."""
    sync = "2026-01-01-000000-local-a"
    root = make_project(
        scan_files(
            "warehouse",
            sync,
            [{"db": "raw", "name": "orders", "comment": "penguin ledger", "columns": [column("zebra_flag")]}],
        )
    )
    tables = root / f"raw-sources/warehouse/live-database/{sync}/tables"
    (original,) = tables.glob("*.json")
    copy = json.loads(original.read_text()) | {"comment": "walrus ledger", "columns": [column("giraffe_flag")]}
    (tables / "copy-by-hand.json").write_text(json.dumps(copy))
    service = service_for(root)
    service.rebuild()
    service.rebuild(force=True)
    engine = service.refreshed_engine()
    stored = engine.store.docs.get("table:warehouse:raw.orders").comment
    words = {word for word, _row in engine.store.words.rows()}
    assert {"penguin", "walrus"} & words == {stored.split()[0]}
    assert engine.lexical.index.searcher().num_docs == engine.store.docs.count(SEARCH_KINDS) + 1  # + the stamp
    service.close()


def test_second_writer_is_refused_with_the_holder_pid(project):
    first = service_for(project)
    first.acquire_writer()
    second = service_for(project)
    with pytest.raises(IndexBusy, match=f"PID {os.getpid()}"):
        second.rebuild()
    first.release_writer()
    assert second.rebuild().generation >= 1
    first.close()
    second.close()


def test_lexical_index_behind_the_store_is_repaired_on_open(project):
    """A crash between the lexical commit and the store commit leaves them at different generations."""
    service = service_for(project)
    service.rebuild()
    service.close()
    layout = IndexLayout(project)
    builder = Builder(project, layout, HashEmbedder())
    writer = builder.lexical.writer()
    writer.delete_all_documents()
    builder.lexical.set_generation(writer, 999)  # as if a later commit landed only in tantivy
    writer.commit()
    writer.wait_merging_threads()
    builder.close()
    repaired = Builder(project, layout, HashEmbedder())
    assert repaired.repairs and repaired.lexical.generation() == repaired.store.meta.generation()
    repaired.close()
    service = service_for(project)
    assert service.discover_data("order_count").refs[0].id == "orders.order_count"
    service.close()


def test_format_change_rebuilds_from_scratch(project):
    service = service_for(project)
    service.rebuild()
    service.close()
    layout = IndexLayout(project)
    from ktx_index.index.store import DocStore

    store = DocStore(layout.store)
    store.meta.set({"format": "format=0;analysis=0"})
    store.close()
    service = service_for(project)
    report = service.rebuild()
    assert report.added > 0 and report.unchanged == 0
    service.close()


def test_a_search_on_an_index_of_another_format_writes_it_again_first(project):
    """A reader opening an index an older version wrote (its tables lack what this code reads: the review's
    'no such column: w.docs') has it written again, as a writer would, rather than failing."""
    service = service_for(project)
    service.rebuild()
    service.close()
    store = DocStore(IndexLayout(project).store)
    store.meta.set({"format": "format=0;analysis=0"})
    store.close()
    service = service_for(project)
    assert service.discover_data("order_count").refs[0].id == "orders.order_count"
    assert DocStore(IndexLayout(project).store, readonly=True).meta.get("format") == format_stamp()
    service.close()


def test_no_embedder_means_lexical_only_said_plainly(project):
    service = KtxIndex(project, embedder=None)
    report = service.rebuild()
    assert report.embedding_status == "disabled"
    status = service.status()
    assert status.semantic == "skipped" and "disabled" in status.semantic_reason
    lanes = service.wiki_search("refunds").results[0].lanes
    assert next(lane for lane in lanes if lane.lane == "semantic").status == "skipped"
    service.close()


class ExplodingEmbedder(HashEmbedder):
    def encode(self, texts):
        raise RuntimeError("model files missing")


def test_broken_model_leaves_a_working_lexical_index(project):
    service = KtxIndex(project, embedder=ExplodingEmbedder())
    report = service.rebuild()
    assert report.embedding_status.startswith("unavailable") and "model files missing" in report.embedding_status
    result = service.wiki_search("refunds").results[0]
    assert result.key == "revenue" and result.matchReasons == ["lexical"]
    semantic = next(lane for lane in result.lanes if lane.lane == "semantic")
    assert semantic.status == "failed" and "model files missing" in semantic.reason
    status = service.status()
    assert status.semantic == "failed" and "searching lexically" in status.semantic_reason
    service.close()


def test_queries_during_commits_and_embedding_never_fail(project):
    """A reader answering while a writer commits and embeds (the watcher's life): each query ranks against one
    snapshot, even when a commit swaps in another one mid-query."""
    import threading

    writer = service_for(project)
    writer.rebuild()
    reader = service_for(project)
    errors: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        while not stop.is_set():
            try:
                reader.discover_data("churn revenue refunds", kinds=["wiki", "sl_source", "sl_measure"])
                reader.wiki_search("refunds churn")
            except BaseException as exc:  # any failure is the finding
                errors.append(exc)
                return

    threads = [threading.Thread(target=ask) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        for i in range(25):
            (project / f"wiki/global/page-{i}.md").write_text(
                PAGE.format(summary=f"Page {i} on churn", body="Refunds.")
            )
            writer.rebuild(embed=False)  # documents first, vectors after: the snapshot changes twice
            writer.embed_pending()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert not errors, repr(errors[0])


def test_a_build_interrupted_between_scopes_leaves_the_last_commit_intact(project, monkeypatch):
    """Scopes are written as they are parsed, inside one transaction: an interruption midway shows nothing."""
    service = service_for(project)
    service.rebuild()
    generation = service.refreshed_engine().store.meta.generation()
    before = service.refreshed_engine().store.docs.hashes()
    time.sleep(0.01)
    for name in ("revenue", "churn"):
        (project / f"wiki/global/{name}.md").write_text(PAGE.format(summary=name, body=f"Rewritten {name}."))
    applied = []
    original = Builder._apply_scope

    def interrupt_second(self, *args, **kwargs):
        if applied:
            raise KeyboardInterrupt
        applied.append(args[0].key)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Builder, "_apply_scope", interrupt_second)
    with pytest.raises(KeyboardInterrupt):
        service.rebuild()
    monkeypatch.setattr(Builder, "_apply_scope", original)
    assert applied  # the first scope was written before the interruption ...
    store = service.refreshed_engine().store
    assert store.meta.generation() == generation and store.docs.hashes() == before  # ... and rolled back with it
    report = service.rebuild()
    assert report.updated == 2 and not any(d.code == "repaired" for d in report.diagnostics)
    assert service.wiki_search("Rewritten").results
    service.close()


def test_files_read_again_without_a_document_change_keep_the_generation(project):
    service = service_for(project)
    service.rebuild()
    generation = service.refreshed_engine().store.meta.generation()
    path = project / "wiki/global/churn.md"
    time.sleep(0.01)
    path.write_text(path.read_text())  # a new mtime, the same content
    report = service.rebuild()
    assert (report.scopes_read, report.updated) == (1, 0)
    assert service.refreshed_engine().store.meta.generation() == generation
    assert service.rebuild().scopes_read == 0  # its new fingerprint was stored
    service.close()
