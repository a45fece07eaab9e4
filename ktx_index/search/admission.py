"""Which documents a search may return: of the kinds asked for, and in the connection asked for, if any.

One rule (``admits``) for every place that filters: the lifts ask it of one document (``admitted``), the fused
candidates and the dense lane's embedded documents of many at once (``admitted_mask``: a lookup per document, no
Python call each), so a page, a column and its vector can never disagree about whether a search sees them. The
lexical index's own query filters by the same rule (index/lexical.py, with ``SHARED_KIND``).
"""

from __future__ import annotations

from collections.abc import Container

import numpy as np

from indexers.models import SEARCH_KINDS, SHARED_KIND
from ktx_index.snapshot.snapshot import Snapshot


def admits(kind: str, connection: int, kinds: Container[str], asked: int | None) -> bool:
    """Whether a search of ``kinds`` in connection ``asked`` (a snapshot's code, None for every connection)
    may return a document of this kind and connection code."""
    return kind in kinds and (asked is None or kind == SHARED_KIND or connection == asked)


def asked_code(snap: Snapshot, connection: str | None) -> int | None:
    """The snapshot's code of the connection asked for: None for every connection, -1 for one it has not seen
    (which only wiki pages are in)."""
    return None if connection is None else snap.connections.get(connection, -1)


def admitted(snap: Snapshot, idx: int, kinds: Container[str], connection: str | None) -> bool:
    """``admits`` for one document of the snapshot."""
    return admits(SEARCH_KINDS[snap.doc_kind[idx]], int(snap.doc_conn[idx]), kinds, asked_code(snap, connection))


def admitted_mask(snap: Snapshot, docs: np.ndarray, kinds: Container[str], connection: str | None) -> np.ndarray:
    """``admits`` for each of ``docs`` (document indexes), as a boolean array: the rule is evaluated once per
    (kind, connection) pair the snapshot has, then looked up per document."""
    asked = asked_code(snap, connection)
    grid = np.array(
        [[admits(kind, code, kinds, asked) for code in range(len(snap.connections))] for kind in SEARCH_KINDS],
        dtype=bool,
    ).reshape(len(SEARCH_KINDS), len(snap.connections))
    return grid[snap.doc_kind[docs], snap.doc_conn[docs]]


def embedded_mask(snap: Snapshot, kinds: list[str], connection: str | None) -> np.ndarray | None:
    """``admitted_mask`` over the snapshot's embedded documents (the dense lane's), None when it admits them all;
    kept per snapshot (kinds come in a few combinations; bounded all the same)."""
    key = (tuple(sorted(kinds)), connection)
    if key in snap.kind_masks:
        return snap.kind_masks[key]
    mask: np.ndarray | None = admitted_mask(snap, snap.chunk_docs, set(kinds), connection)
    if mask.all():
        mask = None
    if len(snap.kind_masks) < 64:
        snap.kind_masks[key] = mask
    return mask
