"""Planning from a watcher's changed paths gives the same plan a full listing gives, or falls back to one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from projects import DEMO

from indexers import default_indexers, load_project
from ktx_index.index.planning import Planner, plan_scopes

TABLES = "raw-sources/warehouse/live-database"


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


def committed(demo: Path, planner: Planner, indexers: list) -> dict[str, str]:
    """Plan in full once and treat every scope as committed, as after a rebuild."""
    plan = planner.plan(load_project(demo), indexers, {})
    return {scope.key: fp for _, scope, fp in plan.listed}


def touch(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a distinct mtime on coarse clocks too


def same_todo(a, b) -> bool:
    return [(sc.key, fp) for _, sc, fp in a.todo] == [(sc.key, fp) for _, sc, fp in b.todo]


def test_an_edited_file_is_planned_from_its_path_alone_as_a_full_plan_would(demo: Path) -> None:
    planner, indexers = Planner(), default_indexers()
    stored = committed(demo, planner, indexers)
    page = next((demo / "wiki/global").glob("*.md"))
    table = next(demo.glob(f"{TABLES}/*/tables/*.json"))
    touch(page, "\nMore words.\n")
    touch(table, "\n")
    changed = [page.relative_to(demo).as_posix(), table.relative_to(demo).as_posix()]
    plan = planner.plan(load_project(demo), indexers, stored, changed=changed)
    assert plan.targeted
    assert {f for _, sc, _ in plan.todo for f in sc.files} >= set(changed)
    assert same_todo(plan, plan_scopes(load_project(demo), indexers, stored))
    assert plan.files == plan_scopes(load_project(demo), indexers, stored).files


def test_a_file_whose_permissions_change_is_read_again(demo: Path) -> None:
    """``chmod`` changes neither size nor time: a page made unreadable (or readable again) kept its fingerprint, so
    its failure was never reported (or never cleared)."""
    planner, indexers = Planner(), default_indexers()
    stored = committed(demo, planner, indexers)
    page = next((demo / "wiki/global").glob("*.md"))
    page.chmod(0o600)
    rel = page.relative_to(demo).as_posix()
    for plan in (planner.plan(load_project(demo), indexers, stored), plan_scopes(load_project(demo), indexers, stored)):
        assert [sc.files for _, sc, _ in plan.todo] == [(rel,)]


def test_an_editors_temporary_file_does_not_force_a_full_plan(demo: Path) -> None:
    planner, indexers = Planner(), default_indexers()
    stored = committed(demo, planner, indexers)
    page = next((demo / "wiki/global").glob("*.md"))
    touch(page, "\nMore.\n")
    rel = page.relative_to(demo).as_posix()
    temp = "wiki/global/4913"  # created and removed between two commits
    plan = planner.plan(load_project(demo), indexers, stored, changed=[rel, temp], created=[temp])
    assert plan.targeted and [sc.key for _, sc, _ in plan.todo] != []


@pytest.mark.parametrize("change", ["new page", "deleted page", "gone, never seen created", "new folder"])
def test_a_change_that_may_alter_the_listing_plans_in_full(demo: Path, change: str) -> None:
    planner, indexers = Planner(), default_indexers()
    stored = committed(demo, planner, indexers)
    page = next((demo / "wiki/global").glob("*.md"))
    if change == "new page":
        path = demo / "wiki/global/brand-new.md"
        path.write_text("---\nsummary: New\n---\nNew page.\n")
    elif change == "deleted page":
        path = page
        page.unlink()
    elif change == "gone, never seen created":
        path = demo / "raw-sources/warehouse/live-database/scan-report.json"  # a path listing may look at
    else:
        path = demo / "semantic-layer/newconn"
        path.mkdir()
    rel = path.relative_to(demo).as_posix()
    created = [] if change == "gone, never seen created" else [rel]
    plan = planner.plan(load_project(demo), indexers, stored, changed=[rel], created=created)
    assert not plan.targeted
    full = plan_scopes(load_project(demo), indexers, stored)
    assert same_todo(plan, full) and plan.dropped == full.dropped


def test_force_and_a_first_plan_are_full(demo: Path) -> None:
    planner, indexers = Planner(), default_indexers()
    page = next((demo / "wiki/global").glob("*.md")).relative_to(demo).as_posix()
    assert not planner.plan(load_project(demo), indexers, {}, changed=[page]).targeted  # nothing listed yet
    assert not planner.plan(load_project(demo), indexers, {}, force=True, changed=[page]).targeted
