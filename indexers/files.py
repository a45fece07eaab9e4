"""Careful reading of project files, shared by every indexer and by ``load_project``.

Every helper takes only what it needs (``ProjectFiles``: the root, its resolved form and the
size limit), so this module sits below both the indexer contract (``indexers.base``) and the
project model (``indexers.project``), and neither imports the other to read a file.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Protocol

import yaml

from indexers.models import Diagnostic

SAFE_ID = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9_-]*$")


class SourceError(Exception):
    """A file that cannot be used; the message is the reason shown to the user."""


class UnlistedFolder(SourceError):
    """A folder that exists but cannot be listed (no permission, a symlink loop). What it held at the last
    commit is kept, marked stale, rather than deleted as if the files were gone (``Diagnostic.code`` ``unlisted``)."""

    def __init__(self, rel_dir: str, reason: str) -> None:
        super().__init__(f"cannot list this folder ({reason}); what it held is kept until it can be read")
        self.path = rel_dir

    def diagnostic(self) -> Diagnostic:
        return Diagnostic(path=self.path, message=str(self), code="unlisted")

    def holding(self, whole: str, what: str) -> list[Diagnostic]:
        """This folder's diagnostic, and when it lies inside ``whole`` (a connection's folder, read as one),
        one that keeps all of ``whole``: a partial listing would read as its other files deleted."""
        if self.path == whole:
            return [self.diagnostic()]
        message = f"{what} is not read while {self.path} cannot be listed; the last good one is kept"
        return [self.diagnostic(), Diagnostic(path=whole, message=message, code="unlisted")]


class ProjectFiles(Protocol):
    """What reading a file needs to know about the project (``indexers.project.Project`` is one)."""

    @property
    def root(self) -> Path: ...

    @property
    def real_root(self) -> Path: ...

    @property
    def max_file_bytes(self) -> int: ...

    @property
    def undecodable_names(self) -> set[str]:
        """Paths whose names are not valid UTF-8, as listing found them (shown with their bytes escaped): they
        are never read, and the planner reports them."""
        ...


def read_text(project: ProjectFiles, rel: str) -> str:
    """Read a project file as UTF-8 text, refusing anything unsafe or unusable."""
    data = _not_binary(_read_bytes(project, rel))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not UTF-8 text (invalid byte at offset {exc.start})") from exc
    return text.removeprefix("\ufeff")


def read_hand_edited(project: ProjectFiles, rel: str) -> tuple[str, str | None]:
    """A file people write in any editor (a wiki page, a semantic-layer YAML), and a note when it is not UTF-8.

    Such a file saved as UTF-16 (with its byte-order mark) or in a Windows code page is still read, as KTX's
    reader reads it, rather than losing the whole page for one accented letter; the note says how it was read, so
    the rebuild summary and ``status`` tell the user to save it as UTF-8."""
    data = _read_bytes(project, rel)
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16").removeprefix("\ufeff"), "saved as UTF-16; read as such (save it as UTF-8)"
        except UnicodeDecodeError as exc:
            raise SourceError(
                f"not UTF-16 text after its byte-order mark (invalid byte at offset {exc.start})"
            ) from exc
    try:
        return _not_binary(data).decode("utf-8").removeprefix("\ufeff"), None
    except UnicodeDecodeError as exc:
        where = f"invalid UTF-8 byte at offset {exc.start}"
    damaged = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    if any(c > "\x7f" and c != "\ufffd" for c in damaged):  # UTF-8 elsewhere: a damaged byte, not a code page
        return damaged, f"{where}; read as UTF-8 with it replaced"
    return data.decode("cp1252", errors="replace"), f"{where}; read as Windows-1252 (save it as UTF-8)"


def _not_binary(data: bytes) -> bytes:
    if b"\x00" in data:
        raise SourceError("binary file (contains NUL bytes); expected UTF-8 text")
    return data


def _read_bytes(project: ProjectFiles, rel: str) -> bytes:
    """A project file's bytes, refusing a path outside the project, a folder, a pipe and an oversized file."""
    path = project.root / rel
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python < 3.13)
        reason = getattr(exc, "strerror", None) or ("symlink loop" if isinstance(exc, RuntimeError) else exc)
        raise SourceError(f"cannot open: {reason}") from exc
    if not real.is_relative_to(project.real_root):
        raise SourceError("symlink points outside the project; it is not read")
    try:
        st = real.stat()
    except OSError as exc:
        raise SourceError(f"cannot stat: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(st.st_mode):
        raise SourceError("a folder where a file belongs; not read")
    if not stat.S_ISREG(st.st_mode):  # a FIFO would block the reader (and the writer lock) forever
        raise SourceError("not a regular file (a pipe, socket or device); not read")
    size = st.st_size
    limit = project.max_file_bytes
    if size > limit:
        raise SourceError(
            f"file is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit "
            "(raise index.max_file_mb in ktx.yaml to read it)"
        )
    try:
        return real.read_bytes()
    except OSError as exc:
        raise SourceError(f"unreadable: {exc.strerror or exc}") from exc


MAX_EXPANDED_NODES = 2_000_000


def _expanded_size(value: Any, memo: dict[int, int]) -> int:
    """Node count with YAML aliases expanded, computed without expanding them (memoised by identity)."""
    if not isinstance(value, (dict, list)):
        return 1
    key = id(value)
    if key in memo:
        return memo[key]
    memo[key] = 1  # guards against self-referencing anchors
    children = value.items() if isinstance(value, dict) else enumerate(value)
    total = 1 + sum(_expanded_size(child, memo) for _, child in children)
    memo[key] = total
    return total


def _yaml12_loader() -> type:
    """The safe loader with YAML 1.2 booleans (only true/false), as KTX's own parser reads its files:
    under YAML 1.1 a join's ``on:`` key became ``True`` and ``status: no`` a boolean."""
    base = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
    loader = type("Yaml12Loader", (base,), {})
    loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return loader


YAML_LOADER = _yaml12_loader()


def parse_yaml(text: str, first_line: int = 1) -> Any:
    """Safe YAML parse that turns every failure, alias bombs included, into a SourceError. ``first_line``: the
    file's line number of the text's first line (a page's frontmatter starts on line 2), for the message."""
    try:
        data = yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + first_line}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SourceError(f"invalid YAML{where}: {problem}") from exc
    except RecursionError as exc:
        raise SourceError("YAML nested too deeply") from exc
    try:
        size = _expanded_size(data, {})
    except RecursionError as exc:
        raise SourceError("YAML nested too deeply") from exc
    if size > MAX_EXPANDED_NODES:
        why = "its aliases expand it (an alias bomb?)" if len(text) < MAX_EXPANDED_NODES else "the file is that large"
        raise SourceError(f"YAML of more than {MAX_EXPANDED_NODES:,} nodes ({why}); not read")
    return data


def read_yaml(project: ProjectFiles, rel: str) -> Any:
    return parse_yaml(read_text(project, rel))


def read_json(project: ProjectFiles, rel: str) -> Any:
    text = read_text(project, rel)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}, column {exc.colno}"
        ends = " (the file ends early: written only in part?)" if not text.rstrip().endswith(("}", "]")) else ""
        raise SourceError(f"invalid JSON at {where}: {exc.msg.removesuffix(' at')}{ends}") from exc
    except RecursionError as exc:
        raise SourceError("JSON nested too deeply") from exc


def _entries(project: ProjectFiles, rel_dir: str) -> list[os.DirEntry[str]]:
    """The visible entries of a project folder; a missing one has none, one that cannot be listed raises. An
    entry whose name is not valid UTF-8 is left out and noted in ``project.undecodable_names``: every later
    step (a fingerprint, the store, a diagnostic) needs the path as text."""
    try:
        with os.scandir(project.root / rel_dir) as it:
            entries = [entry for entry in it if not entry.name.startswith(".")]
    except FileNotFoundError:
        return []
    except NotADirectoryError as exc:  # empty would read as everything in it deleted
        raise UnlistedFolder(rel_dir, "a file where a folder belongs") from exc
    except OSError as exc:
        raise UnlistedFolder(rel_dir, exc.strerror or str(exc)) from exc
    named = [entry for entry in entries if _decodable(entry.name)]
    if len(named) < len(entries):
        project.undecodable_names.update(printable(f"{rel_dir}/{e.name}") for e in entries if not _decodable(e.name))
    return named


def _decodable(name: str) -> bool:
    """Whether a name read from the file system is valid UTF-8 (Python keeps other bytes as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def printable(path: str) -> str:
    """A path with the bytes of a name that is not valid UTF-8 shown escaped (``caf\\xe9.yaml``)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _kind(entry: os.DirEntry[str]) -> str:
    """``dir``, ``file``, or ``unknown`` for an entry that cannot be followed (a symlink loop)."""
    try:
        return "dir" if entry.is_dir() else "file"
    except OSError:
        return "unknown"


def list_files(
    project: ProjectFiles,
    rel_dir: str,
    suffixes: tuple[str, ...],
    recursive: bool = False,
    unlisted: list[UnlistedFolder] | None = None,
) -> list[str]:
    """Project-relative POSIX paths under rel_dir with one of the suffixes, sorted; a missing folder has none.
    An entry that cannot be followed is listed when its name has a suffix (reading it then says why).

    Raises ``UnlistedFolder`` when rel_dir, or with ``recursive`` any folder below it, cannot be listed:
    an incomplete listing would read as files deleted. With ``unlisted``, a caller that can use the rest (the
    scanned tables read without a shard's descriptions) gets each folder below rel_dir that cannot be listed
    appended there instead, and the files of the others."""
    found: list[str] = []
    pending = [rel_dir]
    while pending:
        folder = pending.pop()
        try:
            entries = _entries(project, folder)
        except UnlistedFolder as exc:
            if unlisted is None or folder == rel_dir:
                raise
            unlisted.append(exc)
            continue
        for entry in entries:
            kind, rel = _kind(entry), f"{folder}/{entry.name}"
            if kind != "dir" and entry.name.endswith(suffixes):
                found.append(rel)
            elif recursive and kind == "unknown" and unlisted is not None:
                unlisted.append(UnlistedFolder(rel, "symlink loop"))
            elif recursive and kind == "unknown":
                raise UnlistedFolder(rel, "symlink loop")
            elif recursive and kind == "dir" and not entry.is_symlink():  # as os.walk: symlinks are not followed
                pending.append(rel)
    return sorted(found)


def list_dirs(project: ProjectFiles, rel_dir: str) -> list[str]:
    """Names of the visible folders in rel_dir, sorted, with the entries that cannot be followed (listing one
    then says why, rather than its contents vanishing); raises ``UnlistedFolder`` as ``list_files`` does."""
    return sorted(entry.name for entry in _entries(project, rel_dir) if _kind(entry) != "file")


def _stat(project: ProjectFiles, rel: str) -> os.stat_result | None:
    """The path's stat, None when it does not exist; raises ``UnlistedFolder`` for its folder when that cannot
    be searched (``Path.is_file`` raises PermissionError there, and False would read as "not written yet")."""
    try:
        return os.stat(project.root / rel)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        folder = rel.rsplit("/", 1)[0]
        if exc.errno == errno.ELOOP and folder != rel and _searchable(project, folder):
            raise  # the path itself is a loop, not its folder
        raise UnlistedFolder(folder, exc.strerror or str(exc)) from exc


def _searchable(project: ProjectFiles, folder: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(project.root / folder).st_mode)
    except OSError:
        return False


def is_file(project: ProjectFiles, rel: str) -> bool:
    """Whether rel is a file (a symlink loop counts: reading it says what it is); raises ``UnlistedFolder``
    for its folder when that cannot be searched."""
    try:
        st = _stat(project, rel)
    except OSError:  # the file itself is a symlink loop (its folder's trouble raises UnlistedFolder)
        return True
    return st is not None and stat.S_ISREG(st.st_mode)


def exists(project: ProjectFiles, rel: str) -> bool:
    """Whether anything is at rel (a folder or a pipe where a file belongs included: reading it says what is
    wrong, where leaving it out would read as the file not written yet); raises as ``is_file`` does."""
    try:
        return _stat(project, rel) is not None
    except OSError:  # the path itself is a symlink loop
        return True


def is_dir(project: ProjectFiles, rel: str) -> bool:
    """Whether rel is a folder; raises ``UnlistedFolder`` when it, or its folder, cannot be searched."""
    try:
        st = _stat(project, rel)
    except OSError as exc:  # the folder itself is a symlink loop
        raise UnlistedFolder(rel, "symlink loop") from exc
    return st is not None and stat.S_ISDIR(st.st_mode)
