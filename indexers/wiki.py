"""Wiki pages (``wiki/global/<key>.md``, ``wiki/user/<id>/<key>.md``) → ``wiki`` documents.

Keys are flat, as in KTX: a file in a nested folder or with a key outside
``[A-Za-z0-9][A-Za-z0-9_-]*`` is reported, never read.
"""

from __future__ import annotations

import re
import reprlib
from typing import Any

from indexers.base import Indexer, Scope, ScopeResult, as_str_list, clean_text, jsonable
from indexers.files import (
    SAFE_ID,
    SourceError,
    UnlistedFolder,
    is_dir,
    list_dirs,
    list_files,
    parse_yaml,
    read_hand_edited,
)
from indexers.models import Diagnostic, Document, Section, make_uid
from indexers.project import Project

#: An opening ``---`` line, the YAML (none at all: ``---`` twice is an empty block, as KTX reads it), a closing one.
FRONTMATTER = re.compile(r"\A---[ \t]*\n(?:(.*?)\n)?---[ \t]*(?:\n|\Z)", re.DOTALL)
#: An ATX heading and its text: a closing ``#`` sequence goes only after a space, as CommonMark reads it (``# Using C#``
#: is about C#, not C).
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")
OPTIONAL_FIELDS = (
    "usage_mode", "sort_order", "source", "intent", "tables", "representative_sql",
    "usage", "fingerprints", "stale_since", "archived_since",
)  # fmt: skip


def suggest_key(raw: str) -> str:
    """KTX's flat-key suggestion: 'orbit/company-overview' → 'orbit-company-overview'."""
    key = re.sub(r"[^A-Za-z0-9_-]+", "-", raw)
    key = re.sub(r"-{2,}", "-", key).strip("-_")
    return key or "page-key"


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """(frontmatter, body). Raises SourceError when a frontmatter block is present but unusable."""
    text = text.replace("\r\n", "\n")
    match = FRONTMATTER.match(text)
    if not match:
        if text.startswith("---\n"):
            raise SourceError("frontmatter starts with '---' but has no closing '---' line")
        return {}, text.strip()
    try:
        meta = parse_yaml(match.group(1) or "", first_line=2)
    except SourceError as exc:
        raise SourceError(f"frontmatter: {exc}") from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise SourceError(f"frontmatter must be a YAML mapping, got {type(meta).__name__}")
    return meta, text[match.end() :].strip()


#: Frontmatter fields of text (``TEXT_FIELDS``) or of ids (one, or a list: ``LIST_FIELDS``), and what KTX makes of
#: another shape: it drops it, which for ``connections`` widens the page to every connection.
TEXT_FIELDS = ("summary",)
LIST_FIELDS = {
    "tags": "no tags",
    "refs": "no refs",
    "sl_refs": "no refs",
    "tables": "no tables",
    "connections": "no connections, so the page applies to every connection",
}


#: How a value of the wrong shape is shown in its warning: a few items, two levels (YAML aliases can expand a
#: field to millions of nodes).
SHORT = reprlib.Repr()
SHORT.maxlevel, SHORT.maxlist, SHORT.maxdict, SHORT.maxstring, SHORT.maxother = 2, 4, 4, 40, 40


def shape_problems(meta: dict[str, Any]) -> list[str]:
    """What in a page's frontmatter has a shape KTX does not read, and how it is read instead (a field of the
    wrong shape is a diagnostic everywhere else in a project; here it was dropped without a word)."""
    out = []
    for name in TEXT_FIELDS:
        if meta.get(name) is not None and not isinstance(meta[name], str):
            out.append(f"{name}: expected text, got {SHORT.repr(meta[name])}; read as no {name} (quote it)")
    for name, instead in LIST_FIELDS.items():
        value = meta.get(name)
        if value is None or isinstance(value, str):
            continue
        if isinstance(value, list):
            dropped = [item for item in value if not isinstance(item, str)]
            if not dropped:
                continue
            if len(dropped) < len(value):
                out.append(f"{name}: {SHORT.repr(dropped)} left out, not text (quote them)")
                continue
        out.append(f"{name}: expected text or a list of text, got {SHORT.repr(value)}; read as {instead}")
    return out


def split_sections(body: str) -> list[Section]:
    """Split a Markdown body at headings (outside code fences); the heading path labels each part."""
    sections: list[Section] = []
    trail: list[tuple[int, str]] = []
    lines: list[str] = []
    heading = ""
    in_fence = False

    def flush() -> None:
        text = "\n".join(lines).strip()
        if text:
            sections.append(Section(heading=heading, text=text))

    for line in body.split("\n"):
        if FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else HEADING.match(line)
        if match:
            flush()
            lines = []
            level = len(match.group(1))
            trail = [(lvl, title) for lvl, title in trail if lvl < level] + [(level, match.group(2).strip())]
            heading = " > ".join(title for _, title in trail)
            continue
        lines.append(line)
    flush()
    return sections


class WikiIndexer(Indexer):
    family = "wiki"

    def scopes(self, project: Project) -> tuple[list[Scope], list[Diagnostic]]:
        scopes: list[Scope] = []
        diagnostics: list[Diagnostic] = []
        folders = [("wiki/global", "GLOBAL")]
        if SAFE_ID.match(project.settings.user):
            folders.append((f"wiki/user/{project.settings.user}", "USER"))
        for folder, scope_name in folders:
            try:
                pages, nested_folders = list_files(project, folder, (".md",)), list_dirs(project, folder)
            except UnlistedFolder as exc:
                diagnostics.append(exc.diagnostic())
                continue
            for rel in pages:
                key = rel.rsplit("/", 1)[1][: -len(".md")]
                if not SAFE_ID.match(key):
                    diagnostics.append(
                        Diagnostic(
                            path=rel,
                            message=f"wiki key {key!r} is not flat; rename the file to '{suggest_key(key)}.md'",
                        )
                    )
                    continue
                scopes.append(Scope(self.family, rel, (rel,), (("key", key), ("scope", scope_name))))
            for nested in (name for name in nested_folders if f"{folder}/{name}" not in pages):  # a looping page
                try:
                    is_dir(project, f"{folder}/{nested}")
                    message = f"nested wiki folders are not read (keys are flat); move pages to {folder}/<key>.md"
                except UnlistedFolder:  # not a folder
                    message = "cannot be followed (a symlink loop?); not read"
                diagnostics.append(Diagnostic(path=f"{folder}/{nested}", code="warning", message=message))
        return scopes, diagnostics

    def read(self, project: Project, scope: Scope) -> ScopeResult:
        result = ScopeResult()
        rel = scope.files[0]
        try:
            text, decoded = read_hand_edited(project, rel)
            if not text.strip():  # most often a save caught half-way (a shell's `>` truncates, then writes)
                raise SourceError(EMPTY_PAGE)
        except SourceError as exc:
            result.problem(rel, str(exc), code="parse_error")
            return result
        if decoded:
            result.problem(rel, decoded, code="warning")
        try:
            meta, body = split_frontmatter(text)
        except SourceError as exc:  # searchable all the same, as wiki_read reads it: the whole file, no fields
            result.problem(rel, str(exc), code="parse_error")
            # marked read whole (what the builder replaces with a later whole read) before it is hashed
            result.fallback.append(page_document(project, scope, {}, text.strip(), read_whole=True))
            return result
        for problem in shape_problems(meta):  # read as KTX reads them (dropped), and said
            result.problem(rel, problem, code="warning")
        result.documents.append(page_document(project, scope, meta, body))
        return result


#: Why an empty page file is not read (wiki_read says the same of it).
EMPTY_PAGE = "the page is empty: not indexed until it has content (an indexed version stays)"


def page_uid(user: str, page_scope: str, key: str) -> str:
    """The document uid of a page of ``page_scope`` (GLOBAL, or USER: the pages of ``user``)."""
    return make_uid("wiki", "global" if page_scope == "GLOBAL" else f"user/{user}", key)


def page_document(
    project: Project, scope: Scope, meta: dict[str, Any], body: str, read_whole: bool = False
) -> Document:
    """A page's document from its frontmatter fields and its body (``read_whole``: the whole file, its frontmatter
    not parsing). A document's content hash is made as it is built, so everything it holds goes in here."""
    key: str = scope.get("key")
    page_scope: str = scope.get("scope")
    summary = clean_text(meta.get("summary"))
    attrs: dict[str, Any] = {
        "key": key,
        "scope": page_scope,
        "refs": as_str_list(meta.get("refs")),
        "slRefs": as_str_list(meta.get("sl_refs")),
        # KTX's `connections`: one id or a list; a page without any applies to every connection
        "connections": [c for c in as_str_list(meta.get("connections")) if c.strip()],
    }
    attrs.update({name: jsonable(meta[name]) for name in OPTIONAL_FIELDS if name in meta})
    if read_whole:
        attrs["readWhole"] = True
    return Document(
        uid=page_uid(project.settings.user, page_scope, key),
        kind="wiki",
        id=key,
        path=scope.files[0],
        name=key,
        display=key.replace("-", " ").replace("_", " "),
        summary=summary or None,
        description=summary,
        body=body,
        tags=as_str_list(meta.get("tags")),
        sections=split_sections(body),
        attrs=attrs,
    )
