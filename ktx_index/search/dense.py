"""The dense lane's arithmetic: each embedded document's cosine to the query (its chunk's; for a wiki page,
a blend of its two best sections').

On a small index every cosine is exact (one matrix-vector product). On a large one that product
is memory-bound (at 100k columns, 135k vectors: 207 MB read per query), so a coarse pass on the
matrix projected to its principal directions (``snapshot/coarse.py``) picks ``RESCORE`` × pool documents,
which are scored exactly; any other document's cosine is made exact when ranking asks for it
(``DocCosines.exact``), so every cosine a score uses is exact and only the dense pool's membership
comes from the coarse pass (held 99.7 % of the exact top 100 at 100k columns).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ktx_index.search.scoring import PARAMS
from ktx_index.snapshot.coarse import Coarse

#: Coarse candidates per pooled document, rescored exactly.
RESCORE = 8


@dataclass
class Groups:
    """The chunk groups in the shape the arithmetic wants: each group's first chunk row, and the few groups
    with several chunks (wiki pages) apart, so most groups need no reduction."""

    first: np.ndarray  # matrix row of each group's first chunk
    sizes: np.ndarray  # chunks per group
    multi: np.ndarray  # groups with several chunks
    multi_chunks: np.ndarray  # their chunks' matrix rows, group after group
    multi_starts: np.ndarray  # where each multi group's chunks start in multi_chunks


def groups_of(chunk_rows: np.ndarray, chunk_starts: np.ndarray) -> Groups:
    sizes = np.diff(np.r_[chunk_starts, len(chunk_rows)])
    multi = np.flatnonzero(sizes > 1)
    spans = [np.arange(chunk_starts[g], chunk_starts[g] + sizes[g]) for g in multi]
    chunks = chunk_rows[np.concatenate(spans)] if spans else np.zeros(0, dtype=np.int64)
    starts = np.r_[0, np.cumsum(sizes[multi])[:-1]].astype(np.int64) if len(multi) else multi
    return Groups(chunk_rows[chunk_starts], sizes, multi, chunks, starts)


def best_per_group(row_scores: np.ndarray, groups: Groups, second_chunk: float = PARAMS.second_chunk) -> np.ndarray:
    """Each group's cosine from one score per matrix row: its chunk's, or for several chunks the best moved
    ``second_chunk`` of the way toward the second best (``group_cosine``, for all groups at once)."""
    out = row_scores[groups.first]
    if len(groups.multi):
        chunks, starts = row_scores[groups.multi_chunks], groups.multi_starts
        best = np.maximum.reduceat(chunks, starts)
        at_best = chunks == np.repeat(best, groups.sizes[groups.multi])
        second = np.maximum.reduceat(np.where(at_best, -np.inf, chunks), starts)
        second = np.where(np.add.reduceat(at_best, starts) > 1, best, second)  # a tie for best: it is the second
        out[groups.multi] = _blend(best, second, second_chunk)
    return out


def group_cosine(chunk_cosines: np.ndarray, second_chunk: float = PARAMS.second_chunk) -> float:
    """One group's cosine from its chunks' (as best_per_group computes it)."""
    if len(chunk_cosines) == 1:
        return float(chunk_cosines[0])
    second, best = np.partition(chunk_cosines, -2)[-2:]
    return float(_blend(best, second, second_chunk))


def _blend(
    best: np.ndarray | np.float32, second: np.ndarray | np.float32, second_chunk: float
) -> np.ndarray | np.float32:
    """A several-chunk group's cosine: its best chunk's moved ``second_chunk`` of the way toward its second best."""
    return best - second_chunk * (best - second)


class DocCosines:
    """Cosines by group (a document's position among the embedded ones)."""

    def __init__(
        self,
        values: np.ndarray,
        matrix: np.ndarray | None = None,
        vector: np.ndarray | None = None,
        chunk_rows: np.ndarray | None = None,
        chunk_starts: np.ndarray | None = None,
        sizes: np.ndarray | None = None,
        second_chunk: float = PARAMS.second_chunk,
    ) -> None:
        self.values = values
        self.second_chunk = second_chunk
        self._matrix, self._vector = matrix, vector
        self._rows, self._starts, self._sizes = chunk_rows, chunk_starts, sizes
        # groups whose value is still the coarse estimate (None: all exact)
        self._estimated: np.ndarray | None = None if matrix is None else np.ones(len(values), dtype=bool)

    def __getitem__(self, group: int) -> float:
        if self._estimated is not None and self._estimated[group]:
            self.exact(np.array([group], dtype=np.int64))
        return float(self.values[group])

    def __len__(self) -> int:
        return len(self.values)

    @property
    def estimated(self) -> bool:
        """Whether some values are still coarse estimates."""
        return self._estimated is not None

    def exact(self, groups: np.ndarray) -> None:
        """Replace these groups' estimates by their exact cosines, in one product."""
        if self._estimated is None or self._matrix is None or self._rows is None or self._starts is None:
            return
        assert self._sizes is not None
        groups = np.unique(groups[self._estimated[groups]])
        if not len(groups):
            return
        starts, sizes = self._starts[groups], self._sizes[groups]
        one = sizes == 1  # nearly every group: one chunk, one row
        self.values[groups[one]] = self._matrix[self._rows[starts[one]]] @ self._vector
        for g, start, size in zip(groups[~one], starts[~one], sizes[~one], strict=True):
            self.values[g] = group_cosine(
                self._matrix[self._rows[start : start + size]] @ self._vector, self.second_chunk
            )
        self._estimated[groups] = False


#: The cosine a group out of the search's scope is given before the pool is chosen: below every real one.
MASKED = -1.0


def doc_cosines(
    matrix: np.ndarray,
    coarse: Coarse | None,
    groups: Groups,
    chunk_rows: np.ndarray,
    chunk_starts: np.ndarray,
    vector: np.ndarray,
    allowed: np.ndarray | None,
    pool: int,
    floor: float,
    second_chunk: float = PARAMS.second_chunk,
    nearest: int = 0,
) -> tuple[DocCosines, np.ndarray]:
    """Cosines by group, and among the ``pool`` best allowed groups (``allowed`` None: every group) those
    above ``floor``, with the ``nearest`` best whatever their cosine (unordered)."""
    if coarse is None:
        cosines = DocCosines(best_per_group(matrix @ vector, groups, second_chunk))
        sims = cosines.values if allowed is None else np.where(allowed, cosines.values, MASKED)
        top = _top(sims, pool)
        return cosines, top[_kept(sims[top], floor, nearest)]
    cosines = DocCosines(
        best_per_group(coarse.matrix @ (vector @ coarse.basis), groups, second_chunk),
        matrix,
        vector,
        chunk_rows,
        chunk_starts,
        groups.sizes,
        second_chunk,
    )
    estimate = cosines.values if allowed is None else np.where(allowed, cosines.values, -np.inf)
    shortlist = _top(estimate, RESCORE * pool)
    if allowed is not None:
        shortlist = shortlist[allowed[shortlist]]
    cosines.exact(shortlist)
    sims = cosines.values[shortlist]
    top = _top(sims, pool)
    return cosines, shortlist[top[_kept(sims[top], floor, nearest)]]


def _kept(sims: np.ndarray, floor: float, nearest: int) -> np.ndarray:
    """Which of the pool's cosines the lane keeps: those above ``floor``, and the ``nearest`` best."""
    kept = sims > floor
    if nearest > 0:
        kept[_top(sims, nearest)] = True
        kept &= sims > MASKED  # a group the mask excluded never comes back
    return kept


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` largest scores, unordered."""
    if len(scores) <= k:
        return np.arange(len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    return np.argpartition(scores, len(scores) - k)[len(scores) - k :]
