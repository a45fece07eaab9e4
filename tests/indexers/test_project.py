"""indexers/project.py: ktx.yaml's ``index:`` settings (one declaration checks them and documents them) and the connection folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexers.project import Connection, IndexSettings, Project, expected, load_project, settings_table


def settings(make_project, section: str):
    project = load_project(make_project({}, config=f"index:\n{section}"))
    return project.settings, [(d.path, d.code, d.message) for d in project.diagnostics]


def test_good_settings_are_read(make_project):
    read, diagnostics = settings(make_project, "  user: ana\n  max_file_mb: 2\n  embeddings: false\n  model: base\n")
    assert diagnostics == []
    assert read == IndexSettings(user="ana", max_file_mb=2.0, embeddings=False, model="base")
    assert read.max_file_bytes == 2_000_000 and read.precision == "int8"


@pytest.mark.parametrize(
    ("line", "send"),
    [
        ("model: gpt", "send one of tuned, base (using the default, tuned)"),
        ("precision: int4", "send one of int8, float32 (using the default, int8)"),
        ("embeddings: maybe", "send true or false (using the default, true)"),
        ("embeddings: 1", "send true or false"),  # YAML's 1 is a number, never taken for true
        ("max_file_mb: lots", "send a number above 0 (using the default, 64)"),
        ("max_file_mb: -3", "send a number above 0"),
        ("max_file_mb: .nan", "send a number above 0"),
        ("max_file_mb: true", "send a number above 0"),
        ("user: ../../etc", "send a name matching ^[a-zA-Z0-9][a-zA-Z0-9_-]*$ (using the default, local)"),
    ],
)
def test_a_bad_value_names_the_file_the_key_and_what_to_send_and_the_rest_still_applies(make_project, line, send):
    key = line.split(":", 1)[0]
    other = "embeddings: false" if key != "embeddings" else "model: base"
    read, diagnostics = settings(make_project, f"  {line}\n  {other}\n")
    ((path, code, message),) = diagnostics
    assert path == "ktx.yaml" and code == "error"
    assert message.startswith(f"index.{key}: invalid value ") and send in message
    assert getattr(read, key) == IndexSettings.model_fields[key].default  # the default, as the message says
    assert read != IndexSettings()  # the good key was kept


def test_unknown_keys_are_a_warning_listing_the_known_ones(make_project):
    read, diagnostics = settings(make_project, "  bogus: 1\n  embeddings: false\n")
    assert diagnostics == [
        (
            "ktx.yaml",
            "warning",
            "unknown index setting 'bogus' ignored; known: " + ", ".join(IndexSettings.model_fields),
        )
    ]
    assert read.embeddings is False


def test_a_section_that_is_not_a_mapping_uses_every_default(make_project):
    project = load_project(make_project({}, config="index: 5\n"))
    assert project.settings == IndexSettings()
    assert [d.message for d in project.diagnostics] == ["'index:' must be a mapping; using defaults"]


def test_every_setting_says_what_it_accepts_and_has_a_row_in_the_table():
    table = settings_table().splitlines()
    assert table[:2] == ["| key | default | meaning |", "|---|---|---|"]
    for key, row in zip(IndexSettings.model_fields, table[2:], strict=True):
        assert row.startswith(f"| `{key}` | `") and IndexSettings.model_fields[key].description in row
        assert expected(key)


def test_a_raw_sources_folder_that_cannot_be_searched_is_reported_not_made_a_connection(make_project):
    root = make_project({"raw-sources/notes/readme.txt": "notes"}, config=None)
    (root / "raw-sources/notes").rename(root / "aside")
    os.symlink("notes", root / "raw-sources/notes")
    project = load_project(root)
    assert project.connection_ids == []
    assert [(d.path, d.code) for d in project.diagnostics] == [("raw-sources/notes", "unlisted")]


def test_a_connection_id_in_another_case_names_the_one_declared_so():
    project = Project(Path("."), connections={c: Connection(c, "postgres") for c in ("Sales", "sales_eu", "EU", "eu")})
    assert project.declared_id("SALES") == "Sales" and project.declared_id("Sales_EU") == "sales_eu"
    assert project.declared_id("Eu") == "Eu"  # two ids differ from it only by case: it names neither, as sent
    assert project.declared_id("eu") == "eu" and project.declared_id(None) is None
