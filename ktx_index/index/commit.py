"""One rebuild's writes (builder.py streams each parsed scope into them): the store and the lexical index,
committed together at the end as generation N+1.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable

import tantivy

from indexers.models import SEARCH_KINDS, Document
from ktx_index.errors import Stopped
from ktx_index.index.lexical import REWRITE_DELETED_SHARE, LexicalIndex
from ktx_index.index.store import CHANGE_LOG_MAX, DocStore
from ktx_index.index.texts import embedding_texts, vocabulary_words
from ktx_index.index.vectors import vector_key
from ktx_index.reports import Progress

#: Documents added back to an emptied lexical index between two checks for a stop (``Commit._add_back``).
ADD_BACK_CHECK = 10_000


class Commit:
    """One rebuild's writes, applied scope by scope as they are parsed, so memory holds one scope's
    documents at a time (the SQLite transaction and tantivy's bounded writer heap take the rest).

    Nothing is visible before ``finish``: the store transaction commits last, after the lexical index
    is stamped with the new generation, as a one-shot commit did. The tantivy writer is opened at the
    first document change only, so files re-read without one just update their scope rows."""

    def __init__(
        self,
        store: DocStore,
        lexical: LexicalIndex,
        fingerprint: str,
        force: bool,
        on_progress: Progress,
        should_stop: Callable[[], bool],
    ) -> None:
        """``fingerprint``: the embedding fingerprint the documents' vector keys are made under."""
        self.store, self.lexical, self.fingerprint = store, lexical, fingerprint
        self.force, self.on_progress, self.should_stop = force, on_progress, should_stop
        self.writer: tantivy.IndexWriter | None = None
        self.rewritten = False  # the lexical index written again, unforced: too many deleted documents (``finish``)
        self.written: set[str] = set()  # uids put or deleted, when forced: the others are added at the end
        self.deletes = self.adds = 0  # lexical deletes and adds queued, for the deleted share after the commit
        self.touched: set[str] = set()  # uids put or deleted, for readers' deltas
        self.log_all = force
        self.writes = 0
        #: vocabulary words → documents naming them put minus those deleted or replaced (their stored words), counted
        #: into the store at ``finish``; a forced commit counts the stored documents' words there instead
        self.word_change: Counter[str] = Counter()
        self.store.begin()

    def _lexical(self) -> tantivy.IndexWriter:
        """The tantivy writer, opened at the first change; emptied when forced (``finish`` adds back what is not
        put again)."""
        if self.writer is None:
            self.writer = self.lexical.writer()
            if self.force:
                self.writer.delete_all_documents()
        return self.writer

    def _touch(self, uid: str) -> None:
        if self.force:
            self.written.add(uid)
        if not self.log_all:
            self.touched.add(uid)
            if len(self.touched) > CHANGE_LOG_MAX:
                self.log_all, self.touched = True, set()  # readers will load everything anyway

    def delete(self, uid: str) -> None:
        if not self.force:  # a forced commit counts the stored documents' words at its end instead
            self.word_change.subtract(self.store.docs.words_of(uid))
        self.store.delete_doc(uid)
        writer = self._lexical()
        if uid.split(":", 1)[0] in SEARCH_KINDS:  # a uid starts with its kind; the others never reach tantivy
            self.lexical.delete(writer, uid)
            self.deletes += 1
        self._touch(uid)

    def put(self, doc: Document, scope_key: str, known: bool) -> bool:
        """Write one document; returns whether the index held its uid before, in this scope or another (a renamed
        scan file's tables). ``known``: the scope held this uid before. A tantivy delete is queued only for a uid
        the index may hold: the delete queue keeps every term until the commit (~1.2 KB each; GBs on a 1M-column
        build)."""
        writer = self._lexical()
        again = doc.uid in self.written  # put before in this forced commit: a table two files define
        existed = known or again or (not self.force and self.store.docs.has(doc.uid))
        if existed and (again or not self.force) and doc.kind in SEARCH_KINDS:
            self.lexical.delete(writer, doc.uid)
            self.deletes += 1
        words = vocabulary_words(doc)
        if not self.force:  # a forced commit counts the stored documents' words at its end instead
            if existed:
                self.word_change.subtract(self.store.docs.words_of(doc.uid))
            self.word_change.update(words)
        self.store.docs.put(doc, scope_key, words=words)
        if doc.kind in SEARCH_KINDS:
            self.lexical.add(writer, doc)
            self.adds += 1
        self.store.chunks.put(doc.uid, [vector_key(self.fingerprint, t) for t in embedding_texts(doc)])
        self._touch(doc.uid)
        self.writes += 1
        return existed

    def finish(self, dropped_scopes: bool) -> None:
        """Commit: a new generation when a document changed (or scopes vanished, or forced), else scope rows only."""
        if self.writer is None and not dropped_scopes and not self.force:
            self.store.commit()
            return
        writer = self._lexical()
        generation = self.store.meta.generation() + 1
        if self.force:  # documents not re-put were unchanged: re-add them to the emptied lexical index
            self._add_back(writer, self.written)
            self.store.words.forget_counts()  # and count every stored document's words again
            self.word_change = Counter(self.store.docs.all_words())
        elif self.deletes and self.lexical.deleted_share(self.deletes + 1, self.adds + 1) > REWRITE_DELETED_SHARE:
            # Deleted documents count in idf until tantivy merges them away, which it seldom does for the first
            # segment: past a tenth of the index, this commit's changes are dropped and every document written again
            # (+1: the stamp, which alone never decides it: a tiny project's first build was written twice).
            writer.rollback()
            writer.delete_all_documents()
            self._add_back(writer, set())
            self.rewritten = True
        if self.store.words.count(self.word_change, lambda word: vector_key(self.fingerprint, word)):
            self.store.meta.set({"words_epoch": str(time.time_ns())})  # the bridge reads its vocabulary again
        self.store.changes.log(generation, self.touched, everything=self.log_all)
        self.lexical.set_generation(writer, generation)
        writer.commit()
        writer.wait_merging_threads()
        self.store.meta.set({"generation": str(generation)})
        self.store.commit()
        self.lexical.reload()
        self.on_progress("index", self.writes, self.writes)

    def _add_back(self, writer: tantivy.IndexWriter, skip: set[str]) -> None:
        """Every searchable document of the store but ``skip`` into the emptied lexical index (a stop is checked
        every ADD_BACK_CHECK of them: at a million columns this takes about a minute)."""
        for n, doc in enumerate(self.store.docs.iter(SEARCH_KINDS), 1):
            if doc.uid not in skip:
                self.lexical.add(writer, doc)
            if n % ADD_BACK_CHECK == 0 and self.should_stop():
                raise Stopped(f"stopped while writing the lexical index again ({n} documents); nothing committed")

    def abort(self) -> None:
        self.store.rollback()  # an open tantivy writer is dropped uncommitted
