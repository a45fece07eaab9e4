"""Careful reading of project files (indexers/files.py): what is refused and why, YAML as KTX reads it (1.2
booleans, no alias bombs), and directory listings (sorted, hidden files skipped)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from indexers.files import (
    MAX_EXPANDED_NODES,
    SourceError,
    UnlistedFolder,
    is_dir,
    is_file,
    list_dirs,
    list_files,
    parse_yaml,
    read_hand_edited,
    read_json,
    read_text,
)


@dataclass(frozen=True)
class Files:
    """A project as file reading sees it (indexers.files.ProjectFiles)."""

    root: Path
    max_file_bytes: int = 1_000_000
    undecodable_names: set[str] = field(default_factory=set)

    @property
    def real_root(self) -> Path:
        return self.root.resolve()


@pytest.fixture
def files(tmp_path: Path) -> Files:
    (tmp_path / "project").mkdir()
    return Files(tmp_path / "project")


def write(files: Files, rel: str, data: bytes) -> None:
    path = files.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def test_text_is_utf8_without_its_byte_order_mark(files):
    write(files, "a.md", "\ufeffMontréal".encode())
    assert read_text(files, "a.md") == "Montréal"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"abc\x00def", "binary file (contains NUL bytes)"),
        (b"ok \xff\xfe", "not UTF-8 text (invalid byte at offset 3)"),
        (b"x" * 2_000_001, "file is 2.0 MB, over the 1 MB limit (raise index.max_file_mb in ktx.yaml to read it)"),
    ],
)
def test_unusable_files_are_refused_with_the_reason(files, data, reason):
    write(files, "a.md", data)
    with pytest.raises(SourceError) as refused:
        read_text(files, "a.md")
    assert str(refused.value).startswith(reason)


@pytest.mark.parametrize(
    ("data", "text", "note"),
    [
        ("Crème brûlée".encode(), "Crème brûlée", None),
        ("Crème brûlée – “hot”".encode("cp1252"), "Crème brûlée – “hot”", "read as Windows-1252 (save it as UTF-8)"),
        ("\ufeffCrème brûlée".encode("utf-16"), "Crème brûlée", "saved as UTF-16; read as such (save it as UTF-8)"),
        ("Crème ".encode() + b"\xff" + " brûlée".encode(), "Crème \ufffd brûlée", "read as UTF-8 with it replaced"),
    ],
)
def test_a_hand_edited_file_is_read_whatever_editor_saved_it_and_says_how(files, data, text, note):
    write(files, "a.md", data)
    read, said = read_hand_edited(files, "a.md")
    assert read == text
    assert said == note if note is None else said.endswith(note)
    if note is None:
        return
    assert "UTF-16" in said or "offset" in said  # where the first byte that is not UTF-8 sits
    with pytest.raises(SourceError):  # machine-written files (scans) stay strict
        read_text(files, "a.md")


def test_a_binary_file_is_not_read_as_a_hand_edited_one(files):
    write(files, "a.md", b"\x89PNG\x00\x00")
    with pytest.raises(SourceError, match="binary file"):
        read_hand_edited(files, "a.md")


def test_a_missing_file_and_a_symlink_leaving_the_project_are_refused(files, tmp_path):
    with pytest.raises(SourceError, match="cannot open"):
        read_text(files, "missing.md")
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(tmp_path / "secret.txt", files.root / "link.md")
    with pytest.raises(SourceError, match="symlink points outside the project"):
        read_text(files, "link.md")
    write(files, "inside.md", b"inside")
    os.symlink(files.root / "inside.md", files.root / "alias.md")
    assert read_text(files, "alias.md") == "inside"  # a link within the project is read


def test_yaml_booleans_are_yaml_12s_so_on_and_no_stay_words():
    assert parse_yaml("on: [a]\nstatus: no\nflag: yes\nok: true\nbad: False\n") == {
        "on": ["a"], "status": "no", "flag": "yes", "ok": True, "bad": False,
    }  # fmt: skip


def test_bad_yaml_names_its_line_and_an_alias_bomb_is_not_expanded():
    with pytest.raises(SourceError, match=r"^invalid YAML at line 3, column 1: did not find expected ',' or '\]'"):
        parse_yaml("a: 1\nb: [oops\n")  # the flow list is still open where the text ends
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"{c}: &{c} [{', '.join(['*' + chr(ord(c) - 1)] * 10)}]" for c in "bcdefgh"]
    with pytest.raises(SourceError, match=f"more than {MAX_EXPANDED_NODES:,} nodes .its aliases expand it"):
        parse_yaml("\n".join(levels))  # 10^8 nodes once expanded, a few hundred bytes written
    assert parse_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]}  # ordinary aliases are fine


def test_bad_json_names_its_position(files):
    write(files, "t.json", b'{"a": 1,\n "b": }')
    with pytest.raises(SourceError, match=r"invalid JSON at line 2, column 7: Expecting value$"):
        read_json(files, "t.json")
    write(files, "cut.json", b'{"name": "orders", "columns": [{"name": "st')  # an interrupted write
    with pytest.raises(SourceError, match=r"Unterminated string starting \(the file ends early"):
        read_json(files, "cut.json")
    write(files, "deep.json", b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(SourceError, match="nested too deeply"):
        read_json(files, "deep.json")


def test_listings_are_sorted_skip_hidden_entries_and_a_missing_folder_is_empty(files):
    for rel in ["wiki/b.md", "wiki/a.md", "wiki/.draft.md", "wiki/notes.txt", "wiki/sub/c.md", "wiki/.git/d.md"]:
        write(files, rel, b"x")
    (files.root / "wiki/dir.md").mkdir()  # a folder named like a file is not one
    assert list_files(files, "wiki", (".md",)) == ["wiki/a.md", "wiki/b.md"]
    assert list_files(files, "wiki", (".md",), recursive=True) == ["wiki/a.md", "wiki/b.md", "wiki/sub/c.md"]
    assert list_dirs(files, "wiki") == ["dir.md", "sub"]
    assert list_files(files, "nowhere", (".md",)) == [] and list_dirs(files, "nowhere") == []


def test_a_name_that_is_not_utf8_is_left_out_of_listings_and_noted(files):
    os.makedirs(files.root / "wiki")
    os.makedirs(files.root / b"wiki/d\xe9p\xf4t".decode("utf-8", "surrogateescape"))
    (files.root / "wiki/a.md").write_bytes(b"x")
    with open(os.path.join(os.fsencode(files.root), b"wiki/caf\xe9.md"), "wb") as fh:  # Latin-1 bytes, not UTF-8
        fh.write(b"x")
    assert list_files(files, "wiki", (".md",), recursive=True) == ["wiki/a.md"]
    assert list_dirs(files, "wiki") == []
    assert files.undecodable_names == {"wiki/caf\\xe9.md", "wiki/d\\xe9p\\xf4t"}


def test_a_folder_that_cannot_be_listed_is_named_not_taken_for_empty(files):
    """An incomplete listing would read as deleted files, so it raises. An entry that cannot be followed (a symlink
    loop) is neither dropped nor a crash: a file-named one is listed for reading to say what it is, and a folder
    listing names it, so listing it in turn raises."""
    write(files, "wiki/a.md", b"x")
    write(files, "sl/conn/a.yaml", b"x")
    os.symlink("loop.md", files.root / "wiki/loop.md")
    os.symlink("spin", files.root / "wiki/spin")
    os.symlink("spin", files.root / "sl/conn/spin")
    assert list_files(files, "wiki", (".md",)) == ["wiki/a.md", "wiki/loop.md"]
    assert list_dirs(files, "wiki") == ["loop.md", "spin"]
    with pytest.raises(SourceError, match="symlink loop"):
        read_text(files, "wiki/loop.md")
    with pytest.raises(UnlistedFolder, match=r"cannot list this folder \(.*\); what it held is kept") as err:
        list_files(files, "wiki/spin", (".md",))
    assert err.value.path == "wiki/spin" and err.value.diagnostic().code == "unlisted"
    with pytest.raises(UnlistedFolder) as nested:  # recursive: a looping folder below hides its files
        list_files(files, "sl/conn", (".yaml",), recursive=True)
    assert nested.value.path == "sl/conn/spin"
    assert [d.path for d in nested.value.holding("sl/conn", "the layer")] == ["sl/conn/spin", "sl/conn"]
    assert is_file(files, "wiki/a.md") and not is_file(files, "wiki/none.md")
    assert is_file(files, "wiki/loop.md")  # reading it says what it is
    with pytest.raises(UnlistedFolder) as parent:  # the folder is the loop: "not written yet" would be wrong
        is_file(files, "wiki/spin/scan-report.json")
    assert parent.value.path == "wiki/spin"
    assert is_dir(files, "wiki") and not is_dir(files, "wiki/a.md") and not is_dir(files, "nowhere")
    with pytest.raises(UnlistedFolder):
        is_dir(files, "wiki/spin")


def test_a_caller_that_can_use_the_rest_gets_the_folders_below_that_cannot_be_listed(files):
    """The scanned tables need the ``_schema`` shards that can be listed: a loop below ``_schema/`` held the whole
    scan, unread (a review). Given ``unlisted``, each such folder is collected there; the listed folder still raises."""
    write(files, "sl/conn/_schema/a.yaml", b"x")
    write(files, "sl/conn/_schema/sub/b.yaml", b"x")
    os.symlink("spin", files.root / "sl/conn/_schema/spin")
    unlisted: list[UnlistedFolder] = []
    found = list_files(files, "sl/conn/_schema", (".yaml",), recursive=True, unlisted=unlisted)
    assert found == ["sl/conn/_schema/a.yaml", "sl/conn/_schema/sub/b.yaml"]
    assert [exc.path for exc in unlisted] == ["sl/conn/_schema/spin"]
    with pytest.raises(UnlistedFolder):
        list_files(files, "sl/conn/_schema/spin", (".yaml",), recursive=True, unlisted=[])


def test_a_pipe_named_like_a_page_is_refused_not_waited_on(files):
    (files.root / "wiki").mkdir()
    os.mkfifo(files.root / "wiki/pipe.md")
    with pytest.raises(SourceError, match="not a regular file"):
        read_text(files, "wiki/pipe.md")


def test_yaml_booleans_follow_yaml_1_2_as_ktx_reads_them():
    # under YAML 1.1 a join's `on:` key became True and its condition was lost
    data = parse_yaml("joins:\n  - {to: customers, on: orders.customer_id = customers.id}\nflag: yes\nok: true\n")
    assert data == {
        "joins": [{"to": "customers", "on": "orders.customer_id = customers.id"}],
        "flag": "yes",
        "ok": True,
    }
