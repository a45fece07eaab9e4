"""Opening the index for writing: detect damage, repair it from what is intact, say what was done.

The store is the source of truth: a damaged store is rebuilt from the project files; a
damaged or out-of-step lexical index is re-derived from the store; vector rows the vector
file does not hold are forgotten and re-embedded. Each repair is returned as a sentence for
the rebuild report and ``status``.
"""

from __future__ import annotations

import shutil
import sqlite3

import tantivy

from indexers.models import SEARCH_KINDS
from ktx_index.layout import IndexLayout
from ktx_index.lexical import LexicalIndex
from ktx_index.store import DocStore
from ktx_index.vectors import VectorFile


def open_store(layout: IndexLayout) -> tuple[DocStore, list[str]]:
    try:
        store = DocStore(layout.store)
        verdict = store.db.execute("PRAGMA quick_check").fetchone()[0]
        if verdict != "ok":
            store.close()
            raise sqlite3.DatabaseError(verdict)
        return store, []
    except sqlite3.DatabaseError as exc:
        layout.wipe()
        return DocStore(layout.store), [f"document store was damaged ({exc}); rebuilt from the project files"]


def search_doc_count(store: DocStore) -> int:
    marks = ",".join("?" * len(SEARCH_KINDS))
    return store.db.execute(f"SELECT COUNT(*) FROM docs WHERE kind IN ({marks})", SEARCH_KINDS).fetchone()[0]


def open_lexical(layout: IndexLayout, store: DocStore) -> tuple[LexicalIndex, list[str]]:
    """Open tantivy; if it cannot be read, or disagrees with the store, re-derive it from the store."""
    repairs: list[str] = []
    try:
        lexical = LexicalIndex(layout.lexical)
        lexical.searcher.search(tantivy.Query.all_query(), 1)
        lexical.generation()
    except (ValueError, OSError, RuntimeError) as exc:
        shutil.rmtree(layout.lexical, ignore_errors=True)
        lexical = LexicalIndex(layout.lexical)
        repairs.append(f"lexical index could not be read ({exc}); re-derived from the document store")
    stored = search_doc_count(store)
    brand_new = stored == 0 and store.generation() == 0 and lexical.num_docs() == 0
    if not brand_new and (lexical.generation() != store.generation() or lexical.num_docs() != stored):
        if not repairs:
            repairs.append(
                f"lexical index was at generation {lexical.generation()} with {lexical.num_docs()} documents, "
                f"the store at {store.generation()} with {stored}; re-derived from the store"
            )
        rederive(lexical, store)
    return lexical, repairs


def rederive(lexical: LexicalIndex, store: DocStore) -> None:
    writer = lexical.writer()
    writer.delete_all_documents()
    for doc in store.iter_docs(SEARCH_KINDS):
        lexical.add(writer, doc)
    lexical.set_generation(writer, store.generation())
    writer.commit()
    writer.wait_merging_threads()
    lexical.reload()


def check_vectors(layout: IndexLayout, store: DocStore, dim: int) -> list[str]:
    """Forget vector rows the file does not hold (truncated or replaced file); they are embedded again."""
    rows_in_file = VectorFile(layout.vectors, dim).rows()
    referenced = store.max_vector_row() + 1
    if referenced <= rows_in_file:
        return []
    store.forget_vectors_from(rows_in_file)
    return [
        f"vector file holds {rows_in_file} rows but the store references {referenced}; "
        "the missing vectors will be embedded again"
    ]
