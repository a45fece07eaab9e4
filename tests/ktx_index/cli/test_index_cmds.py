"""``rebuild`` and ``status`` from the command line: --json is the service's report, a second rebuild does
nothing, status lists what changed since."""

import json
import os

from projects import run_cli

from ktx_index.search import learned
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex


def test_rebuild_json_then_noop(project):
    first = json.loads(run_cli("rebuild", "--project", project, "--json").output)
    assert first["added"] == 6 and first["embedding_status"] == "disabled"
    second = json.loads(run_cli("rebuild", "--project", project, "--json").output)
    assert (second["added"], second["updated"], second["scopes_read"]) == (0, 0, 0)
    text = run_cli("rebuild", "--project", project).output
    assert "embeddings: off (index.embeddings: false in ktx.yaml)" in text and "until this is fixed" not in text
    assert "index    up to date: no file changed since the last rebuild" in text  # 'unchanged=0' alone read as empty
    assert "up to date" not in run_cli("rebuild", "--project", project, "--force").output


def test_status_reports_changed_files(project):
    run_cli("rebuild", "--project", project)
    (project / "wiki/global/new-page.md").write_text("---\nsummary: new\n---\nbody\n")
    report = json.loads(run_cli("status", "--project", project, "--json").output)
    assert report["changed_files"] == 1 and report["changed_paths"] == ["wiki/global/new-page.md"]
    # which learned order ranks this project: a hand-written semantic layer (a measure) takes the curated one
    assert report["ranker"] == learned.fingerprint(PARAMS.curated_ranker) != learned.fingerprint()
    text = run_cli("status", "--project", project).output
    assert "changed      1 file(s) to read again" in text and "`ktx-index rebuild` reads them" in text
    (project / "wiki/global/new-page.md").unlink()
    (gone,) = sorted((project / "wiki/global").glob("*.md"))[:1]
    gone.unlink()
    assert f"  wiki/global/{gone.name} (deleted)" in run_cli("status", "--project", project).output
    for i in range(25):
        (project / f"wiki/global/more-{i}.md").write_text("---\nsummary: more\n---\nbody\n")
    assert "  … and 6 more" in run_cli("status", "--project", project).output


def test_status_names_the_scan_projects_order_without_a_hand_written_layer(make_project):
    config = "connections:\n  warehouse:\n    driver: postgres\nindex:\n  embeddings: false\n"
    wiki_only = make_project({"wiki/global/a.md": "---\nsummary: a\n---\nbody\n"}, config=config)
    run_cli("rebuild", "--project", wiki_only)
    assert json.loads(run_cli("status", "--project", wiki_only, "--json").output)["ranker"] == learned.fingerprint()


def test_json_stays_valid_when_a_file_name_is_not_utf8(project):
    (project / "wiki/global").joinpath(os.fsdecode(b"bad\xff.md")).write_text("---\nsummary: x\n---\nbody\n")
    report = json.loads(run_cli("rebuild", "--project", project, "--json").output)
    assert "wiki/global/bad\\xff.md" in {d["path"] for d in report["diagnostics"]}  # its bytes escaped


def test_status_counts_the_files_kept_stale_beside_the_diagnostics(project):
    """The stale lines follow the diagnostics; the header counts both (an outside pass read 'diagnostics 6' over
    twenty lines)."""
    run_cli("rebuild", "--project", project)
    page = next((project / "wiki/global").glob("*.md"))
    page.write_text("---\nsummary: [broken\n---\nbody\n")
    run_cli("rebuild", "--project", project)
    text = run_cli("status", "--project", project).output
    assert "diagnostics  1, 1 file(s) kept at their last good version" in text
    assert f"  stale       wiki/global/{page.name}: last good version kept" in text


def test_rebuild_stopped_while_embedding_says_so_once_and_not_up_to_date(project, monkeypatch):
    """(Until this test: 'stopped while embedding' twice in other words, and 'index up to date' between them.)"""
    run_cli("rebuild", "--project", project)
    real_rebuild = KtxIndex.rebuild

    def stopped_while_embedding(self, *args, **kwargs):
        report = real_rebuild(self, *args, **kwargs)
        report.embedding_status = "pending"  # what a stop during the embedding stage leaves
        return report

    monkeypatch.setattr(KtxIndex, "rebuild", stopped_while_embedding)
    text = run_cli("rebuild", "--project", project).output
    assert text.count("stopped") == 1 and "embeddings: not all texts embedded yet (stopped early)" in text
    assert "up to date" not in text
    as_json = run_cli("rebuild", "--project", project, "--json")
    assert json.loads(as_json.stdout)["embedding_status"] == "pending"
    assert "ktx-index: embeddings: not all texts embedded yet (stopped early)" in as_json.stderr  # stdout: the report


def test_rebuild_names_the_files_whose_documents_it_deleted(project):
    """(Until a tester asked: 'deleted=1' and no name, in the text and in --json.)"""
    run_cli("rebuild", "--project", project)
    (project / "wiki/global/revenue.md").unlink()
    report = json.loads(run_cli("rebuild", "--project", project, "--json").output)
    assert report["deleted"] == 1 and report["deleted_paths"] == ["wiki/global/revenue.md"]
    for i in range(25):
        (project / f"wiki/global/more-{i:02}.md").write_text("---\nsummary: more\n---\nbody\n")
    run_cli("rebuild", "--project", project)
    for i in range(25):
        (project / f"wiki/global/more-{i:02}.md").unlink()
    text = run_cli("rebuild", "--project", project).output
    assert "deleted  25 document(s) of 25 file(s):\n  wiki/global/more-00.md\n" in text
    assert "  wiki/global/more-19.md\n  … and 5 more\n" in text and "more-20" not in text


def test_rebuild_json_stopped_by_a_signal_still_prints_one_object(project, monkeypatch):
    """``--json`` promises one JSON object on stdout: a stop printed nothing there, with exit code 0."""
    real_rebuild = KtxIndex.rebuild

    def signalled(self, *args, **kwargs):
        self.request_stop()  # what SIGINT does (stop_on_signals), before the build's first safe point
        return real_rebuild(self, *args, **kwargs)

    monkeypatch.setattr(KtxIndex, "rebuild", signalled)
    out = run_cli("rebuild", "--project", project, "--json")
    assert out.exit_code == 0 and json.loads(out.stdout) == {
        "stopped": True,
        "message": out.stderr.removeprefix("ktx-index: ").strip(),
    }
