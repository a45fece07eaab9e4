"""One scored document of a query, as the lanes and the structural steps build it up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ktx_index.snapshot.snapshot import Snapshot


@dataclass
class Candidate:
    uid: str
    #: Its position in the snapshot ranked against (``position``), -1 until looked up.
    idx: int = -1
    lexical: float = 0.0
    terms: dict[str, float] = field(default_factory=dict)  # query term → its share of ``lexical``
    cosine: float | None = None  # its cosine to the query (search/dense.py), None when it has no vector
    semantic: float | None = None
    exact: bool = False
    score: float = 0.0
    #: The weight fusion gave it for its kind (scoring.prior), for ``--explain``; None when no lane found it and a
    #: structural step added it.
    prior: float | None = None
    #: What each structural step (lifts.STAGES) added to ``score`` (negative: took away), for ``--explain``.
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def fused(self) -> float:
        """Its score before any structural step (or the learned order) moved it."""
        return self.score - sum(self.steps.values())


def position(snap: Snapshot, cand: Candidate) -> int:
    """The candidate's position in the snapshot, looked up once per query (ranking asks for it at every step)."""
    if cand.idx < 0:
        cand.idx = snap.uid_index[cand.uid]
    return cand.idx
