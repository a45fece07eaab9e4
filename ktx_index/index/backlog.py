"""The embedding backlog: every text (a document's chunk, a vocabulary word) the index has no vector for yet.

A rebuild commits documents and the lexical index first, so a large first build is searchable lexically at
once; the texts without a vector are embedded after, by the same writer, all at once or in slices under a
time budget (the watcher's, so file events never wait long). Texts are read from the store a group at a time
and written with their keys (index/vectors.py), so an interrupted backlog resumes where it stopped. A new model
fingerprint first re-keys every chunk (``_rechunk``): vectors of texts that did not change are kept.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from indexers.models import SEARCH_KINDS
from ktx_index.embedding.embedder import EmbedBackend, Embedder, LocalEmbedding
from ktx_index.errors import KtxIndexError
from ktx_index.index.layout import IndexLayout, embedding_fingerprint
from ktx_index.index.store import DocStore
from ktx_index.index.texts import embedding_texts
from ktx_index.index.vectors import VectorFile, vector_key
from ktx_index.reports import Progress

EMBED_BATCH = 256
#: Texts read from the store at a time for embedding (their documents are loaded to get the texts).
EMBED_GROUP = 8192
#: Batch size under a time budget: a long wiki chunk takes ~15 ms, so a batch never overruns by much.
BUDGETED_BATCH = 8


@dataclass
class Backlog:
    store: DocStore
    layout: IndexLayout
    embedder: Embedder | None
    backend: EmbedBackend | None  # where texts are embedded: a Ray pool, or None for this process
    should_stop: Callable[[], bool]  # checked between batches

    def fingerprint(self) -> str:
        """The embedding fingerprint (model + text template) the chunk keys are made under."""
        model = self.embedder.fingerprint if self.embedder else self.store.meta.get("embed_model", "none")
        return embedding_fingerprint(model or "none")

    def embed(self, on_progress: Progress, limit: int | None, budget_s: float | None) -> tuple[int, str]:
        """Embed at most ``limit`` missing texts (None: all), within ``budget_s`` when given; (texts embedded,
        status: ready, pending, disabled or why the model is unavailable)."""
        if self.embedder is None:
            return 0, "disabled"
        fingerprint = self.fingerprint()
        if self.store.meta.get("embed_fingerprint") != fingerprint:
            self._rechunk(fingerprint)
        meta = self.store.meta.all()
        # what ``vectors_complete`` records once every text has a vector: 'generation|vector epoch|fingerprint'
        complete = "|".join(
            (meta.get("generation", "0"), meta.get("vector_epoch", ""), meta.get("embed_fingerprint", ""))
        )
        missing = self._missing_keys(meta, complete)
        if not missing:
            self.store.meta.set({"vectors_complete": complete})
            return 0, "ready"
        more = limit is not None and len(missing) > limit
        missing = missing[:limit] if more else missing
        vectors = VectorFile(self.layout.vectors, self.embedder.dim)
        next_row = self.store.vectors.max_row() + 1
        done = 0
        step = EMBED_BATCH if budget_s is None else BUDGETED_BATCH
        deadline = None if budget_s is None else time.perf_counter() + budget_s
        backend = self.backend or LocalEmbedding(self.embedder)
        batches = backend.embed(self._text_groups(missing, fingerprint), step)
        moved = False
        try:
            while True:
                if (deadline is not None and done and time.perf_counter() > deadline) or self.should_stop():
                    return done, "pending"  # every batch embedded so far is committed; the rest waits
                result = next(batches, None)
                if result is None:
                    break
                if self.fingerprint() != fingerprint:  # the model fell back to another form as it loaded
                    moved = True
                    break
                batch, matrix = result
                vectors.write(next_row, np.asarray(matrix, dtype=np.float32), batch)  # with their keys
                self.store.vectors.put({k: next_row + i for i, k in enumerate(batch)})
                next_row += len(batch)
                done += len(batch)
                self.store.meta.set({"vectors_version": str(time.time_ns())})
                on_progress("embed", done, len(missing))
        except KtxIndexError:  # a lost cluster stops the build, said plainly; what was written is committed
            self.store.meta.set({"embedding_status": "pending"})
            raise
        except Exception as exc:  # a missing or broken model leaves a lexical-only index, said plainly
            return done, f"unavailable: {type(exc).__name__}: {exc}"
        finally:
            batches.close()  # a pool drops the batches still in flight (their texts stay missing: embedded later)
        if moved:  # int8 → float32 happens once: its vectors are keyed under the form that made them
            return self.embed(on_progress, limit, budget_s)
        if more:
            return done, "pending"
        self.store.meta.set({"vectors_complete": complete})
        return done, "ready"

    def _text_groups(self, missing: list[str], fingerprint: str) -> Iterator[list[tuple[str, str]]]:
        """(key, text) a group at a time (read from the store as the backend asks), so a first build holds one
        group, not all; each group shortest first: batches of like lengths pad little."""
        for group_start in range(0, len(missing), EMBED_GROUP):
            texts = self._texts_for_keys(set(missing[group_start : group_start + EMBED_GROUP]), fingerprint)
            yield [(k, texts[k]) for k in sorted(texts, key=lambda k: len(texts[k]))]

    def _missing_keys(self, meta: dict[str, str], now: str) -> list[str]:
        """Keys without a vector. Once every text had one (``vectors_complete``), only the documents changed
        since can lack one while no vector was forgotten and the fingerprint held: a commit's check reads
        those few chunks instead of every chunk (~1 s at 1M columns, after every watcher commit)."""
        generation, _, rest = meta.get("vectors_complete", "").partition("|")
        if generation.isdigit() and rest == now.partition("|")[2]:
            changed = self.store.changes.since(int(generation), meta)
            if changed is not None:
                return self.store.missing_vector_keys(sorted(changed))
        return self.store.missing_vector_keys()

    def _rechunk(self, fingerprint: str) -> None:
        """Every document's chunk keys under a new fingerprint, in one transaction (rolled back on failure, so
        the next commit can begin one)."""
        self.store.begin()
        try:
            for doc in self.store.docs.iter(SEARCH_KINDS):
                self.store.chunks.put(doc.uid, [vector_key(fingerprint, t) for t in embedding_texts(doc)])
            self.store.words.rekey(lambda word: vector_key(fingerprint, word))
            self.store.meta.set({"embed_fingerprint": fingerprint, "embed_model": self.embedder.fingerprint})
            self.store.vectors.bump_epoch()
            self.store.commit()
        except BaseException:
            self.store.rollback()
            raise

    def _texts_for_keys(self, wanted: set[str], fingerprint: str) -> dict[str, str]:
        """Each key's text: a vocabulary word's from the words table, a chunk's from its document (documents
        are looked up only for the keys no word answered)."""
        texts = self.store.words.texts(sorted(wanted))
        for doc in self.store.docs.get_many(self.store.chunks.uids_for_keys(sorted(wanted - texts.keys()))).values():
            for text in embedding_texts(doc):
                key = vector_key(fingerprint, text)
                if key in wanted:
                    texts[key] = text
        return texts
