"""The read side's loading: the latest committed snapshot of the index (snapshot/snapshot.py) and its documents.

``refresh`` takes in what writers committed (a delta for a few documents, a full load otherwise); ``documents``
reads the documents behind results once per snapshot. The ranking over the snapshot is engine.py's.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
from cachetools import LRUCache

from indexers.models import Document
from ktx_index.embedding.embedder import Embedder
from ktx_index.errors import IndexUnavailable
from ktx_index.index.layout import IndexLayout, format_stamp
from ktx_index.index.lexical import LexicalIndex
from ktx_index.index.store import DocStore
from ktx_index.index.vectors import VectorFile
from ktx_index.snapshot.delta import MAX_DELTA_SHARE, apply_documents, apply_vectors
from ktx_index.snapshot.snapshot import Snapshot, load_documents, load_vectors

#: Parsed documents kept per snapshot (SnapshotReader.documents), the least recently returned dropped first.
CACHED_DOCUMENTS = 2048
#: While embeddings catch up, new vectors are loaded again only after this many times the last load took
#: (when that was noticeable), so reloading, which grows with the index, stays a small share of the time.
VECTOR_RELOAD_SPACING = 4
T = TypeVar("T")


def _committed(meta: dict[str, str]) -> tuple[int, str]:
    """The commit and vectors version the store's metadata says writers last committed."""
    return int(meta.get("generation", "0")), meta.get("vectors_version", "")


class SnapshotReader:
    """The index opened for reading (refused when written in another format), at its latest commit."""

    def __init__(self, layout: IndexLayout, embedder: Embedder | None) -> None:
        self.layout = layout
        self.embedder = embedder
        self.store = DocStore(layout.store, readonly=True)
        written = self.store.meta.get("format")
        if written is not None and written != format_stamp():  # its tables may lack what this code reads
            self.store.close()
            raise IndexUnavailable(
                f"the index was written in another format ({written})", "run `ktx-index rebuild` to write it again"
            )
        self.lexical = LexicalIndex(layout.lexical, create=False)
        self.snapshot = Snapshot()
        self._lock = threading.Lock()
        self._documents_lock = threading.Lock()  # a snapshot's document cache (an LRUCache keeps no lock itself)
        self._per_generation: dict[str, tuple[int, object]] = {}  # name → (generation, value): per_generation
        self._per_generation_lock = threading.Lock()  # one build per generation, however many threads ask
        self.vector_error: str | None = None
        self.lexical_error: str | None = None
        self.embedding_status = ""
        self._next_vector_load = 0.0
        self.last_refresh = ""  # "full" or "delta": how the latest commit was taken in
        self.refresh()

    def close(self) -> None:
        self.store.close()

    @property
    def snapshot_key(self) -> tuple[int, str]:
        """Which commit and vectors the loaded snapshot holds."""
        return self.snapshot.generation, self.snapshot.vectors_version

    def is_current(self) -> bool:
        """Whether nothing was committed since the loaded snapshot (so refresh would load nothing): one
        metadata read."""
        return _committed(self.store.meta.all()) == self.snapshot_key

    def refresh(self) -> bool:
        """Take in what writers committed since the last query: cheap when nothing changed, a delta
        (snapshot/delta.py) for a commit of a few documents, a full load otherwise. The new snapshot
        replaces the old one whole; queries already running keep ranking against the old one."""
        meta = self.store.meta.all()
        self.embedding_status = meta.get("embedding_status", "")
        generation, vectors_version = _committed(meta)
        if (generation, vectors_version) == self.snapshot_key:
            return False
        if (
            generation == self.snapshot.generation
            and self.embedding_status == "pending"
            and time.monotonic() < self._next_vector_load
        ):
            return False  # a backlog is being embedded in slices: take its new vectors at a bounded rate
        with self._lock:
            old = self.snapshot
            if (generation, vectors_version) == self.snapshot_key:
                return False  # another thread took this commit in while we waited
            if generation != old.generation:
                snap, old_to_new, changed = self._take_in_documents(old, generation, meta)
            else:
                snap, old_to_new, changed = copy.copy(old), np.arange(len(old.doc_uids), dtype=np.int64), set()
            snap.vectors_version = vectors_version
            snap.words_epoch = meta.get("words_epoch", "")
            if self.embedder is not None:
                self._take_in_vectors(old, snap, changed, old_to_new)
            self.snapshot = snap
        return True

    def _take_in_documents(
        self, old: Snapshot, generation: int, meta: dict[str, str]
    ) -> tuple[Snapshot, np.ndarray | None, set[str] | None]:
        """The commit's documents taken into a new snapshot, as a delta from ``old`` when few changed: (the
        snapshot, each old position's new one, the uids changed; None for both after a full load)."""
        self.lexical.reload()
        lexical_generation = self.lexical.generation()
        if lexical_generation < generation:  # behind the store: never a state a writer commits
            self.lexical_error = f"lexical index is at generation {lexical_generation}, the store at {generation}"
        changed = None if old.generation < 0 else self.store.changes.since(old.generation, meta)
        if changed is not None and len(changed) > MAX_DELTA_SHARE * max(1, len(old.doc_uids)):
            changed = None
        self.last_refresh = "full"
        if changed is not None:
            try:
                snap, old_to_new = apply_documents(old, self.store, generation, changed)
            except Exception as exc:  # never serve a half-applied delta: the full load below repairs it
                self.last_refresh = f"full (delta failed: {type(exc).__name__}: {exc})"
            else:
                old.entries = {}  # handed over to the new snapshot; a later delta from `old` would be wrong
                self.last_refresh = "delta"
                return snap, old_to_new, changed
        return load_documents(self.store, generation), None, None

    def _take_in_vectors(
        self, old: Snapshot, snap: Snapshot, changed: set[str] | None, old_to_new: np.ndarray | None
    ) -> None:
        """The vectors of ``snap``: the changed documents' patched onto ``old``'s, else every vector read again
        (and no sooner than VECTOR_RELOAD_SPACING of its own time since, while a backlog embeds)."""
        started = time.monotonic()
        vectors = VectorFile(self.layout.vectors, self.embedder.dim)  # type: ignore[union-attr]  # with a model
        applied = (
            changed is not None
            and old_to_new is not None
            and self.vector_error is None
            and apply_vectors(old, snap, self.store, vectors, changed, old_to_new)
        )
        if not applied:
            self.vector_error = load_vectors(self.store, vectors, snap)
        took = time.monotonic() - started
        self._next_vector_load = started + took * (1 + VECTOR_RELOAD_SPACING) if took > 0.05 else 0.0

    def documents(self, uids: list[str]) -> dict[str, Document]:
        """The documents behind results, each read from the store once per snapshot (at most CACHED_DOCUMENTS
        kept): questions return the same tables and pages again and again, and decompressing and parsing a
        document is most of fetching it. Callers only read them."""
        with self._documents_lock:
            cache = self._document_cache()
            found = {uid: doc for uid in uids if (doc := cache.get(uid)) is not None}
        missing = [uid for uid in uids if uid not in found]
        if missing:
            fetched = self.store.docs.get_many(missing)  # outside the lock: other threads' cached reads go on
            self._cache_documents(fetched.values())
            found.update(fetched)
        return {uid: found[uid] for uid in uids if uid in found}

    def _cache_documents(self, docs: Iterable[Document]) -> None:
        with self._documents_lock:
            self._document_cache().update((doc.uid, doc) for doc in docs)

    def _document_cache(self) -> LRUCache[str, Document]:
        """This snapshot's parsed documents (callers hold _documents_lock)."""
        derived = self.snapshot.derived
        cache: LRUCache[str, Document] | None = derived.get("documents")  # type: ignore[assignment]
        if cache is None:
            cache = derived["documents"] = LRUCache(CACHED_DOCUMENTS)
        return cache

    def stale(self) -> dict[str, str]:
        """The documents kept from a file's last good version → the file and why its latest does not parse. Refs
        carry it, so an agent knows what it reads. Read each time (an indexed read of the few stale rows, almost
        always none): marking a file stale, or fresh again, commits no new generation for a snapshot to key on."""
        return self.store.docs.stale_by_uid()

    def per_generation(self, name: str, build: Callable[[], T]) -> T:
        """What a tool derives from the index at its current generation (``name`` tells them apart), built
        by ``build`` once per generation: the dictionary's value index reads every profiled value."""
        generation = self.snapshot.generation  # before building: a commit meanwhile makes the next call rebuild
        with self._per_generation_lock:
            cached = self._per_generation.get(name)
            if cached is None or cached[0] != generation:
                cached = self._per_generation[name] = (generation, build())
        return cached[1]  # type: ignore[return-value]
