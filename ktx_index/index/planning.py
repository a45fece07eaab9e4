"""What a rebuild must read: every scope the indexers list, fingerprinted from file stats only.

A full plan lists every scope and stats every file (at 1M columns: ~42k files, ~40k scopes, most of an
edit's commit). A watcher knows which paths changed, so ``Planner`` keeps the last listing and, when
every changed path is a file it already lists that still exists (an edit or an atomic save), or a path
created and removed again since the last commit (an editor's temporary file), re-stats and re-fingerprints
only those; anything else (a new, deleted or renamed file, a directory) falls back to a full plan.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path

from indexers.base import Indexer, Scope
from indexers.models import Diagnostic
from indexers.project import Project


class FileStats:
    """Files' parts of scope fingerprints ('<rel>:(size, mtime_ns, permission bits)', or '<rel>:None' when
    missing), each file stat'ed and formatted once per plan: the profile and shard files are shared by thousands
    of table scopes, whose file lists end alike, so those tails are joined once too. The permission bits are
    there because ``chmod`` changes neither size nor time: a file made unreadable, or readable again, is read
    again (its failure reported, or cleared)."""

    def __init__(self, root: Path) -> None:
        self.prefix = f"{root}{os.sep}"
        self.parts: dict[str, str] = {}
        self.tails: dict[tuple[str, ...], str] = {}

    def __call__(self, rel: str) -> str:
        part = self.parts.get(rel)
        if part is None:
            try:
                st = os.stat(self.prefix + rel)  # not pathlib: a large project stats ~100k files per plan
                part = f"{rel}:{(st.st_size, st.st_mtime_ns, st.st_mode & 0o7777)}"
            except OSError:
                part = f"{rel}:None"
            self.parts[rel] = part
        return part

    def exists(self, rel: str) -> bool:
        return not self(rel).endswith(":None")  # a stat's part ends with its (size, mtime, mode) tuple

    def joined(self, files: tuple[str, ...]) -> str:
        if len(files) < 3:
            return "\n".join(map(self, files))
        tail = self.tails.get(files[1:])
        if tail is None:
            tail = self.tails[files[1:]] = "\n".join(map(self, files[1:]))
        return self(files[0]) + "\n" + tail

    def forget(self, rels: Collection[str]) -> None:
        """Stat these again when next asked (the shared tails are re-joined from the cached parts)."""
        for rel in rels:
            self.parts.pop(rel, None)
        self.tails.clear()


#: Why a file whose name is not valid UTF-8 is not indexed (indexers/files.py leaves it out of every listing).
UNDECODABLE = "the file name is not valid UTF-8, so the file is not read: rename it"


def scope_fingerprint(scope: Scope, stats: FileStats) -> str:
    """Changes when any of the scope's files changes size, modification time or permissions, appears or vanishes."""
    try:
        context = _context_json(scope.context)
    except TypeError:  # an unhashable context: not cached
        context = json.dumps(scope.context, default=str)
    parts = [scope.key, context, stats.joined(scope.files)] if scope.files else [scope.key, context]
    return hashlib.sha1("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()  # any path hashes


@functools.lru_cache(maxsize=4096)
def _context_json(context: tuple) -> str:
    """Thousands of table scopes share a few contexts (their connection's shard and profile lists)."""
    return json.dumps(context, default=str)


@dataclass
class ScopePlan:
    """What a rebuild must read, from directory listings and file stats only (``status`` reuses it)."""

    listed: list[tuple[Indexer, Scope, str]]  # every scope present now, with its fingerprint
    todo: list[tuple[Indexer, Scope, str]]  # those whose fingerprint differs from the committed one
    dropped: list[str]  # committed scopes that are gone
    diagnostics: list[Diagnostic]  # from listing
    stats: FileStats
    files: int = 0  # distinct files the scopes read
    targeted: bool = False  # built from the changed paths alone


def plan_scopes(project: Project, indexers: list[Indexer], stored: dict[str, str], force: bool = False) -> ScopePlan:
    return _Listing.full(project, indexers).plan(stored, force)


class Planner:
    """Plans a writer's rebuilds, keeping the last listing for the next targeted plan."""

    def __init__(self) -> None:
        self._last: _Listing | None = None

    def plan(
        self,
        project: Project,
        indexers: list[Indexer],
        stored: dict[str, str],
        force: bool = False,
        changed: Collection[str] | None = None,
        created: Collection[str] = (),
    ) -> ScopePlan:
        """A full plan unless ``changed`` (project-relative paths, ``created`` those among them seen appear)
        says what changed and the last listing still describes every other file."""
        listing = None
        if changed is not None and not force and self._last is not None and self._last.fits(project, indexers):
            listing = self._last.updated(set(changed), set(created))
        self._last = listing or _Listing.full(project, indexers)
        return self._last.plan(stored, force, targeted=listing is not None)


@dataclass
class _Listing:
    root: Path
    indexers: list[Indexer]
    listed: list[tuple[Indexer, Scope, str]]
    diagnostics: list[Diagnostic]
    stats: FileStats
    # positions in listed by a scope's first file, and by the rest of its files: thousands of table scopes
    # share one tail (their connection's shard and profile files), so this is two lookups per scope
    heads: dict[str, list[int]] = field(default_factory=dict)
    tails: dict[tuple[str, ...], list[int]] = field(default_factory=dict)
    files: int = 0  # distinct files the scopes read

    @classmethod
    def full(cls, project: Project, indexers: list[Indexer]) -> _Listing:
        stats = FileStats(project.root)
        listed: list[tuple[Indexer, Scope, str]] = []
        diagnostics: list[Diagnostic] = []
        project.undecodable_names.clear()  # listed again below
        for indexer in indexers:
            scopes, listing_diags = indexer.scopes(project)
            diagnostics.extend(listing_diags)
            listed.extend((indexer, scope, scope_fingerprint(scope, stats)) for scope in scopes)
        diagnostics += [
            Diagnostic(path=path, message=UNDECODABLE, code="parse_error") for path in sorted(project.undecodable_names)
        ]
        heads: dict[str, list[int]] = {}
        tails: dict[tuple[str, ...], list[int]] = {}
        for i, (_, scope, _) in enumerate(listed):
            if scope.files:
                heads.setdefault(scope.files[0], []).append(i)
                if len(scope.files) > 1:
                    tails.setdefault(scope.files[1:], []).append(i)
        files = len(set(heads).union(*tails))
        return cls(project.root, indexers, listed, diagnostics, stats, heads, tails, files)

    def fits(self, project: Project, indexers: list[Indexer]) -> bool:
        return project.root == self.root and indexers is self.indexers

    def scopes_of(self, rel: str) -> list[int]:
        return self.heads.get(rel, []) + [i for tail, idx in self.tails.items() if rel in tail for i in idx]

    def updated(self, changed: set[str], created: set[str]) -> _Listing | None:
        """This listing with the changed files re-stat'ed, or None when the change may add or remove scopes."""
        affected: set[int] = set()
        for rel in changed:
            here = os.path.lexists(self.stats.prefix + rel)
            scopes = self.scopes_of(rel)
            if scopes:
                if not here:
                    return None  # a listed file was deleted
                affected.update(scopes)
            elif here or rel not in created:
                return None  # a new file or directory, or one gone that listing may have looked at
        self.stats.forget(changed)
        listed = list(self.listed)
        for i in affected:
            indexer, scope, _ = listed[i]
            listed[i] = (indexer, scope, scope_fingerprint(scope, self.stats))
        return _Listing(
            self.root, self.indexers, listed, self.diagnostics, self.stats, self.heads, self.tails, self.files
        )

    def plan(self, stored: dict[str, str], force: bool, targeted: bool = False) -> ScopePlan:
        live = {sc.key for _, sc, _ in self.listed}
        return ScopePlan(
            listed=self.listed,
            todo=[(ix, sc, fp) for ix, sc, fp in self.listed if force or stored.get(sc.key) != fp],
            dropped=[key for key in stored if key not in live],
            diagnostics=self.diagnostics,
            stats=self.stats,
            files=self.files,
            targeted=targeted,
        )


def unlisted_folders(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """Folders the listing could not read, each with its reason."""
    return {d.path: d.message for d in diagnostics if d.code == "unlisted"}


def within(rel: str, reasons: dict[str, str]) -> str | None:
    """The reason given for the first path of ``reasons`` (a folder, or rel itself) that rel lies in, or None:
    why a document of rel is kept (its folder could not be listed; its connection has a file that cannot be read)."""
    for path, reason in reasons.items():
        if rel == path or rel.startswith(f"{path}/"):
            return f"{path}: {reason}"
    return None


def held_scopes(
    root: Path,
    dropped: list[str],
    unlisted: dict[str, str],
    stored_files: Callable[[list[str]], dict[str, list[str]]],
) -> dict[str, str]:
    """The dropped scopes that read a file in a folder that could not be listed, or in one a file has taken the
    place of, each with the reason: they are out of sight, not gone, so their documents are kept (stale) rather
    than deleted."""
    if not dropped:
        return {}
    files = stored_files(dropped)
    held: dict[str, str] = {}
    for key in dropped:
        reason = next(filter(None, (within(rel, unlisted) or displaced(root, rel) for rel in files.get(key, []))), None)
        if reason is not None:
            held[key] = reason
    return held


def displaced(root: Path, rel: str) -> str | None:
    """Why rel is out of sight when a file now stands where one of its folders was (a folder deleted and a file
    written under its name is not the folder's files deleted one by one), else None."""
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        try:
            mode = os.stat(root / folder).st_mode
        except OSError:
            return None  # gone (or out of reach, which listing reports): not displaced
        if not stat.S_ISDIR(mode):
            return f"{folder}: a file where a folder was; what it held is kept until it is a folder again"
    return None
