"""One scored document of a query, as the lanes and the structural steps build it up."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Candidate:
    uid: str
    lexical: float = 0.0
    terms: dict[str, float] = field(default_factory=dict)  # query term → its share of ``lexical``
    cosine: float | None = None  # its cosine to the query (search/dense.py), None when it has no vector
    semantic: float | None = None
    exact: bool = False
    score: float = 0.0
    #: The weight fusion gave it for its kind (scoring.prior), for ``--explain``.
    prior: float = 1.0
    #: What each structural step (lifts.STAGES) added to ``score`` (negative: took away), for ``--explain``.
    steps: dict[str, float] = field(default_factory=dict)
