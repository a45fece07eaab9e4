"""Which events the watcher acts on (``loop.relevant``): told from the path alone, whatever the path is."""

import os

from ktx_index.watcher.loop import relevant


def test_a_symlink_loop_is_an_event_not_a_crash(tmp_path):
    """``Path.resolve`` raises on a loop before Python 3.13, and the watch filter ran it on every event: each loop
    made in the wiki ended the watch, and the sixth ended the watcher."""
    (tmp_path / "wiki" / "global").mkdir(parents=True)
    loop = tmp_path / "wiki" / "global" / "loop.md"
    os.symlink(loop, loop)
    assert relevant(tmp_path, str(loop))
    assert not relevant(tmp_path, str(tmp_path / "wiki" / "global" / ".loop.md.swp"))


def test_events_outside_the_project_trees_are_not_relevant(tmp_path):
    assert relevant(tmp_path, str(tmp_path / "ktx.yaml"))
    assert not relevant(tmp_path, str(tmp_path / ".ktx" / "index" / "meta.db"))
    assert not relevant(tmp_path, str(tmp_path / "notes" / "todo.md"))


def test_the_index_folder_is_never_relevant_wherever_it_lives(tmp_path):
    """KTX_INDEX_HOME inside wiki/: the watcher's own writes woke it ten times a second (an outside pass)."""
    index = tmp_path / "wiki" / "global" / "idx" / "project-abc"
    assert relevant(tmp_path, str(index / "store.sqlite"))  # a folder of the wiki like any other, unless told
    assert not relevant(tmp_path, str(index / "store.sqlite"), index)
    assert relevant(tmp_path, str(tmp_path / "wiki" / "global" / "page.md"), index)


def test_an_edit_inside_a_tree_that_is_a_symlink_is_relevant(tmp_path):
    """``wiki -> docs/wiki`` and a connection folder linked from elsewhere in the project: rebuild indexes their
    files, and the watcher dropped every event under them (the resolved path's first part is ``docs``)."""
    (tmp_path / "docs" / "wiki" / "global").mkdir(parents=True)
    (tmp_path / "shared" / "wh").mkdir(parents=True)
    (tmp_path / "semantic-layer").mkdir()
    os.symlink(tmp_path / "docs" / "wiki", tmp_path / "wiki")
    os.symlink(tmp_path / "shared" / "wh", tmp_path / "semantic-layer" / "wh")
    assert relevant(tmp_path, str(tmp_path / "wiki" / "global" / "a.md"))
    assert relevant(tmp_path, str(tmp_path / "semantic-layer" / "wh" / "orders.yaml"))
    assert not relevant(tmp_path, str(tmp_path / "wiki" / "global" / ".a.md.swp"))
    index = tmp_path / "docs" / "wiki" / "idx"  # the index reached through the link is still the index
    assert not relevant(tmp_path, str(tmp_path / "wiki" / "idx" / "store.sqlite"), index)
