"""Typed documents: what every indexer produces and every later layer consumes.

One flat model for all kinds keeps the index layer generic: the fields that
search reads are named by role (name, display, description, ...), and what only
a read tool needs (column types, composed YAML, profile statistics) rides in
``attrs``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, Field

Kind = Literal["wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column", "dictionary_value", "snapshot"]
#: Kinds that discover_data returns (the KTX contract).
SEARCH_KINDS: tuple[str, ...] = ("wiki", "sl_source", "sl_measure", "sl_dimension", "table", "column")
ALL_KINDS: tuple[str, ...] = (*SEARCH_KINDS, "dictionary_value", "snapshot")
#: The kinds that hold others and the kind each member belongs to (a table's columns, a semantic-layer source's
#: dimensions and measures): defined here once, since the snapshot links members to containers by them and
#: ranking lifts one by the other.
CONTAINER_OF: dict[str, str] = {"column": "table", "sl_dimension": "sl_source", "sl_measure": "sl_source"}
CONTAINER_KINDS: tuple[str, ...] = ("table", "sl_source")
#: The kind every connection's search admits: wiki pages are about the project, not one warehouse (a search in one
#: connection keeps them; wiki_search narrows them by their frontmatter's connections).
SHARED_KIND = "wiki"
MEMBER_KINDS: tuple[str, ...] = tuple(CONTAINER_OF)


def display_name(catalog: str | None, db: str | None, name: str) -> str:
    """A table as agents and entity_details write it: its catalog, schema and name, those it has, joined by dots."""
    return ".".join(part for part in (catalog, db, name) if part)


def name_tails(display: str) -> list[str]:
    """A table's display name and each of its dotted tails, casefolded, the whole first: ``db.public.orders``,
    ``public.orders``, ``orders``. The one rule by which a name finds a scanned table, its whole display name first,
    else a tail: for what an agent sends (``ktx_index/tools/table_names.py:resolve``) and for a source's ``table:``
    (``semantic_layer.unscanned_sources``), which must agree."""
    parts = display.casefold().split(".")
    return [".".join(parts[i:]) for i in range(len(parts))]


class TableRef(BaseModel):
    catalog: str | None = None
    db: str | None = None
    name: str

    @property
    def display(self) -> str:
        return display_name(self.catalog, self.db, self.name)


#: Every ``Diagnostic.code``, the one list (written as these literals everywhere; a code not listed is refused when
#: the diagnostic is made; the CLI shows it as the level, docs/project-format.md's "Diagnostics" explains it):
#:
#: - ``parse_error``: nothing of the file is read; what it gave before is kept, stale, until it parses again;
#: - ``wrong_shape``: the file parsed but a field has the wrong shape (a source's ``columns:`` written as a
#:   mapping): the field is left out, the rest of the file read, and what the field held kept, stale, until fixed;
#: - ``unlisted``: a folder cannot be listed (no permission, a symlink loop); what it held is kept, stale;
#: - ``error``: the item (a page, a source, a setting) is not used;
#: - ``warning``: the item is indexed; the message says what was ignored or assumed;
#: - ``repaired``: what opening the index had to repair (rebuild and status);
#: - ``embed_runtime``: why the embedder fell back to another runtime (status).
DiagnosticCode = Literal["parse_error", "wrong_shape", "unlisted", "error", "warning", "repaired", "embed_runtime"]


class Diagnostic(BaseModel):
    """A file that could not be read completely, or the index's own state: where, why, and how bad (``code``, one
    of ``DiagnosticCode``)."""

    path: str
    message: str
    code: DiagnosticCode = "error"


class Section(BaseModel):
    """A heading-delimited part of a wiki page, the unit of chunked embedding."""

    heading: str = ""
    text: str


class Document(BaseModel):
    uid: str = Field(description="Unique across the index: '<kind>:<scope>:<id>'.")
    kind: Kind
    id: str = Field(description="The ref id KTX's discover_data returns for this item.")
    connection_id: str | None = None
    path: str = Field(description="Project-relative source file ('<file>#<name>' for manifest entries).")
    content_hash: str = ""
    name: str
    display: str = ""
    summary: str | None = None
    description: str = ""
    comment: str = ""
    expr: str = ""
    sample_values: list[str] = Field(default_factory=list)
    body: str = ""
    tags: list[str] = Field(default_factory=list)
    table_ref: TableRef | None = None
    column_name: str | None = None
    sections: list[Section] = Field(default_factory=list)
    attrs: dict[str, Any] = Field(default_factory=dict)

    def model_post_init(self, _context: Any) -> None:
        if not self.content_hash:
            payload = self.model_dump(mode="json", exclude={"content_hash"})
            blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            self.content_hash = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def file_of(path: str) -> str:
    """The file a document's ``path`` names: a manifest entry's is '<file>#<name>'. The one rule for every reader
    of a path (the builder's stale files, the semantic layer's sources and checks)."""
    return path.split("#", 1)[0]


def make_uid(kind: str, scope: str | None, ref_id: str) -> str:
    return f"{kind}:{scope or ''}:{ref_id}"


def member_document(
    kind: Kind, conn: str | None, owner: str, name: str, path: str, text: str, **fields: Any
) -> Document:
    """A column, dimension or measure: its id and display are ``owner.name`` (its table's display name, its
    source's id), which is how the snapshot finds its container; ``text`` is its summary and, unless ``fields``
    say otherwise, its description."""
    ref = f"{owner}.{name}"
    fields.setdefault("description", text)
    return Document(
        uid=make_uid(kind, conn, ref), kind=kind, id=ref, connection_id=conn, path=path, name=name, display=ref,
        summary=text or None, **fields,
    )  # fmt: skip


def value_document(
    conn: str | None, owner: str, column: str, value: str, path: str, table_ref: TableRef | None, attrs: dict
) -> Document:
    """One value a column holds (a profile sample, a dbt enum value), for dictionary_search."""
    return Document(
        uid=make_uid("dictionary_value", conn, f"{owner}.{column}={value}"), kind="dictionary_value", id=value,
        connection_id=conn, path=path, name=value, display=f"{owner}.{column}", table_ref=table_ref,
        column_name=column, attrs=attrs,
    )  # fmt: skip
