"""The indexer contract's shared helpers (indexers/base.py): values made JSON-safe whatever a hostile file
holds, one failing scope turned into a diagnostic, and KTX's leniency with list and text fields."""

from __future__ import annotations

import datetime as dt
import math

from indexers.base import MAX_JSON_DEPTH, Indexer, Scope, ScopeResult, as_str_list, clean_text, jsonable, safe_read
from indexers.models import Diagnostic
from indexers.project import Project, load_project


def test_jsonable_turns_yaml_scalars_into_json_values():
    assert jsonable({1: dt.date(2026, 1, 2), "at": dt.datetime(2026, 1, 2, 3, 4)}) == {
        "1": "2026-01-02", "at": "2026-01-02T03:04:00",
    }  # fmt: skip
    assert jsonable([None, True, 3, 1.5, math.inf, math.nan, b"x"]) == [None, True, 3, 1.5, "inf", "nan", "b'x'"]


def test_jsonable_cuts_anchor_cycles_and_deep_nesting():
    loop: dict = {"name": "a"}
    loop["self"] = loop
    assert jsonable(loop) == {"name": "a", "self": "[circular reference]"}
    shared = [1]
    assert jsonable({"a": shared, "b": shared}) == {"a": [1], "b": [1]}  # a reused anchor is not a cycle
    deep: list = []
    node = deep
    for _ in range(MAX_JSON_DEPTH + 5):
        node.append([])
        node = node[0]
    out, depth = jsonable(deep), 0
    while isinstance(out, list):
        out, depth = out[0], depth + 1
    assert (out, depth) == ("[nested too deeply]", MAX_JSON_DEPTH)


class Exploding(Indexer):
    family = "test"

    def scopes(self, project: Project) -> tuple[list[Scope], list[Diagnostic]]:
        return [], []

    def read(self, project: Project, scope: Scope) -> ScopeResult:
        raise KeyError("columns")


class Fine(Exploding):
    def read(self, project: Project, scope: Scope) -> ScopeResult:
        result = ScopeResult()
        result.problem(scope.files[0], "one bad entry", "warning")
        return result


def test_an_unforeseen_failure_becomes_a_diagnostic_on_the_scopes_first_file(tmp_path):
    project = load_project(tmp_path)
    scope = Scope("test", "t/a", ("t/a.yaml", "t/b.yaml"))
    result = safe_read(Exploding(), project, scope)
    assert result.documents == []
    assert result.diagnostics == [
        Diagnostic(path="t/a.yaml", message="could not be read: KeyError: 'columns'", code="parse_error")
    ]
    assert safe_read(Exploding(), project, Scope("test", "t/none", ())).diagnostics[0].path == "t/none"
    assert safe_read(Fine(), project, scope).diagnostics[0].code == "warning"  # a normal read is untouched


def test_list_and_text_fields_are_read_as_ktx_reads_them():
    assert as_str_list("finance") == ["finance"] and as_str_list(["a", 1, None, "b"]) == ["a", "b"]
    assert as_str_list({"a": 1}) == [] and as_str_list(None) == []
    assert clean_text("  x \n") == "x" and clean_text(3) == "" and clean_text(None) == ""
    assert Scope("f", "k", (), (("sync", "s1"),)).get("sync") == "s1"
    assert Scope("f", "k", ()).get("sync", "none") == "none"
