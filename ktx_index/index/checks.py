"""Checks across indexers' families, over what the store holds after a commit: what one scope's read cannot see
(a semantic-layer source's ``table:`` against the scans of its connection). ``read_project`` runs the same
checks over the documents it read, so ``inspect``, ``rebuild`` and ``status`` report alike."""

from __future__ import annotations

from indexers.models import Diagnostic, Document
from indexers.scans import ScanIndexer
from indexers.semantic_layer import SemanticLayerIndexer, unscanned_sources
from indexers.sl_records import is_manifest_entry
from ktx_index.index.store import DocStore

#: The families whose documents and diagnostics ``source_checks`` reads: a commit that read or dropped none of their
#: scopes (a wiki edit) leaves its warnings as they were, and the builder skips reading them again. Declared here,
#: beside what reads them, so the builder names no indexer.
CHECKED_FAMILIES = (SemanticLayerIndexer.family, ScanIndexer.family)


def source_checks(store: DocStore) -> list[Diagnostic]:
    """``indexers.semantic_layer.unscanned_sources`` over the store: the hand-written sources of each connection
    with a complete scan, read whole, against the display names of its scanned tables (their ids, not their
    fields: a connection of 100k tables costs one query, not 100k documents read) and the diagnostics its scopes
    stored (a table file that does not parse leaves its connection unchecked, as in ``read_project``)."""
    scanned = set(store.docs.ids("snapshot"))
    sources: list[Document] = []
    for uid, conn, path in store.docs.paths("sl_source"):
        if conn in scanned and not is_manifest_entry(conn, path) and (doc := store.docs.get(uid)):
            sources.append(doc)
    tables = {conn: store.docs.ids("table", conn) for conn in {doc.connection_id or "" for doc in sources}}
    return unscanned_sources(sources, tables, store.scopes.diagnostics())
