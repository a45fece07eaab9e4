"""The index's place on disk (index/layout.py): the .gitignore entry written once beside what a user keeps, a
wipe that can keep the vectors, the version stamps, and the writer lock across open files."""

import os
from pathlib import Path

import pytest

from ktx_index.errors import IndexBusy
from ktx_index.index.layout import (
    FORMAT_VERSION,
    IndexLayout,
    WriterLock,
    embedding_fingerprint,
    format_stamp,
    project_folder_name,
    writable,
)
from ktx_index.index.texts import TEMPLATE_VERSION


def test_ensure_adds_the_gitignore_line_once_and_keeps_what_was_there(tmp_path):
    layout = IndexLayout(tmp_path)
    layout.ktx_dir.mkdir()
    (layout.ktx_dir / ".gitignore").write_text("cache/")  # no final newline
    layout.ensure()
    layout.ensure()
    lines = (layout.ktx_dir / ".gitignore").read_text().splitlines()
    assert lines[0] == "cache/" and lines.count("index/") == 1 and layout.dir.is_dir()


def test_a_user_written_index_line_is_respected(tmp_path):
    layout = IndexLayout(tmp_path)
    layout.ktx_dir.mkdir()
    (layout.ktx_dir / ".gitignore").write_text("index\n")
    layout.ensure()
    assert (layout.ktx_dir / ".gitignore").read_text() == "index\n"


def test_wipe_removes_the_derived_data_and_can_keep_the_vectors(tmp_path):
    layout = IndexLayout(tmp_path)
    layout.ensure()
    derived = [layout.store, layout.store.with_suffix(".sqlite-wal"), layout.lexical / "meta.json"]
    vectors = [layout.vectors, layout.vectors.with_suffix(".keys")]
    for path in [*derived, *vectors, layout.lock]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
    layout.wipe(keep_vectors=True)
    assert not any(p.exists() for p in derived) and all(p.exists() for p in vectors) and not layout.exists()
    layout.wipe()
    assert not any(p.exists() for p in vectors) and layout.lock.exists()  # the caller holds the lock


def test_the_stamps_name_every_version_that_forces_a_rebuild_or_a_re_embed():
    assert format_stamp().startswith(f"format={FORMAT_VERSION};analysis=") and ";indexers=" in format_stamp()
    assert embedding_fingerprint("minilm@abc") == f"minilm@abc;template={TEMPLATE_VERSION}"


def test_one_writer_at_a_time_and_the_holder_is_named(tmp_path):
    layout = IndexLayout(tmp_path)
    first, second = WriterLock(layout), WriterLock(layout)
    assert first.holder_pid() is None  # no lock file yet
    first.acquire()
    try:
        assert first.held and first.holder_pid() == os.getpid()
        with pytest.raises(IndexBusy, match=f"being written by PID {os.getpid()}") as refused:
            second.acquire()
        assert "searches keep working" in str(refused.value) and not second.held
    finally:
        first.release()
    assert not first.held and first.holder_pid() is None
    second.acquire()  # free again
    second.release()


def test_the_index_lives_in_the_project_unless_told_or_the_project_is_read_only(tmp_path):
    project = tmp_path / "shop"
    project.mkdir()
    assert IndexLayout.for_project(project, env={}).dir == project / ".ktx" / "index"
    cache = tmp_path / "cache"
    read_only = IndexLayout.for_project(project, env={"XDG_CACHE_HOME": str(cache)}, can_write=lambda _: False)
    assert read_only.dir.parent == cache / "ktx-index" and read_only.dir.name.startswith("shop-")
    assert "cannot be written" in (read_only.elsewhere or "")
    read_only.ensure()  # nothing is written into the project
    assert read_only.dir.is_dir() and not (project / ".ktx").exists()
    home = IndexLayout.for_project(project, env={"KTX_INDEX_HOME": str(tmp_path / "indexes")})
    assert home.dir.parent == tmp_path / "indexes" and home.elsewhere == "KTX_INDEX_HOME is set"


def test_each_project_gets_its_own_folder_below_an_index_home(tmp_path):
    a, b = tmp_path / "a" / "sales data", tmp_path / "b" / "sales data"
    names = {project_folder_name(a), project_folder_name(b)}
    assert len(names) == 2 and all(n.startswith("sales-data-") for n in names)
    assert project_folder_name(Path("/")).startswith("project-")
    assert len(project_folder_name(Path("/x") / ("n" * 250))) == 64 + 1 + 12  # a file name holds 255 bytes


def test_a_relative_cache_home_is_ignored_as_the_xdg_spec_says(tmp_path):
    layout = IndexLayout.for_project(tmp_path, env={"XDG_CACHE_HOME": "cache"}, can_write=lambda _: False)
    assert layout.dir.parent == Path.home() / ".cache" / "ktx-index"


def test_writable_asks_the_nearest_folder_that_exists(tmp_path):
    assert writable(tmp_path / "not" / "yet" / "there")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_a_folder_without_write_permission_is_not_writable(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert not writable(locked / ".ktx" / "index")
