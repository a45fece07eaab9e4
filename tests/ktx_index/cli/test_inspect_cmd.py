"""``ktx-index inspect``: each broken file reported and the rest counted, the human output, a missing project."""

import json
import shutil

from click.testing import CliRunner
from projects import column, scan_files, scan_table

from ktx_index.cli import cli
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex


def test_inspect_reports_each_broken_file_and_counts_the_rest(orbit_copy):
    root = orbit_copy
    (root / "semantic-layer/dbt-main/stg_users.yaml").write_text("name: stg_users\ncolumns: [oops\n")
    page = root / "wiki/global/orbit-how-we-work.md"
    page.write_text("---\nsummary: [broken\n---\nbody\n")
    (root / "wiki/global/binary-page.md").write_bytes(b"\x00\x01\x02binary")
    tables = root / "raw-sources/postgres-warehouse/live-database/2026-05-06-093000-local-motuwa80/tables"
    victim = sorted(tables.iterdir())[0]
    lost_columns = len(json.loads(victim.read_text())["columns"])
    victim.write_text(victim.read_text()[:120])

    result = CliRunner().invoke(cli, ["inspect", "--project", str(root), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    paths = {d["path"] for d in report["diagnostics"]}
    assert "semantic-layer/dbt-main/stg_users.yaml" in paths
    assert "wiki/global/orbit-how-we-work.md" in paths
    assert "wiki/global/binary-page.md" in paths
    assert any(p.endswith(victim.name) for p in paths)
    counts = report["counts"]
    assert counts["wiki"] == 27  # 28 pages, one broken, the binary one never counted
    assert counts["table"] == 55
    assert counts["column"] == 407 - lost_columns
    assert counts["sl_source"] == 92 - 1


def test_inspect_human_output(make_project):
    root = make_project({"wiki/global/a.md": "---\nsummary: A page\n---\nText"})
    result = CliRunner().invoke(cli, ["inspect", "--project", str(root)])
    assert result.exit_code == 0
    assert "wiki 1" in result.output and "diagnostics: 0 error(s)" in result.output


def test_unknown_project_dir_is_a_user_error(tmp_path):
    result = CliRunner().invoke(cli, ["inspect", "--project", str(tmp_path / "nope")])
    assert result.exit_code != 0 and "does not exist" in result.output


def test_inspect_reads_the_project_alone_and_leaves_a_damaged_index_as_it_is(make_project):
    """It opened the index for the scans' drivers: a damaged one was repaired (a whole rebuild, embedding
    included) by a command that promises no build, and beside a writer it failed with a traceback."""
    files = scan_files("wh", "2026-01-01-000000-local-a", [scan_table("orders", [column("id")])])
    root = make_project(files, config=None)  # no ktx.yaml: the driver is the scan's
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    service.close()
    lexical = root / ".ktx/index/lexical"
    shutil.rmtree(lexical)
    result = CliRunner().invoke(cli, ["inspect", "--project", str(root), "--json"])
    assert result.exit_code == 0, result.output
    (conn,) = json.loads(result.output)["connections"]
    assert (conn["id"], conn["driver"], conn["counts"]["table"]) == ("wh", "postgres", 1)
    assert not lexical.exists()  # not repaired: inspect never opened the index
