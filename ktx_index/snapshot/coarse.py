"""The coarse projection of a large vector matrix: its principal directions, computed once per snapshot and
extended by deltas, which the dense lane (``search/dense.py``) scans to shortlist candidates before scoring
them exactly. Read state, so it lives beside the snapshot that owns the matrix."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Indexes with fewer vectors than this are scored exactly.
COARSE_MIN_ROWS = 50_000
COARSE_DIMS = 128
#: Rows sampled to find the principal directions (fixed seed: the same index gives the same basis).
SAMPLE_ROWS = 32_768


@dataclass
class Coarse:
    """The matrix projected on a fixed basis; ``buffer`` mirrors the matrix buffer's rows, its head
    ``rows`` long is what a snapshot uses, and a delta projects new vectors into the rows past it."""

    basis: np.ndarray  # dim × COARSE_DIMS
    buffer: np.ndarray
    rows: int

    @property
    def matrix(self) -> np.ndarray:
        return self.buffer[: self.rows]

    def extended(self, matrix: np.ndarray) -> Coarse:
        """The projection of ``matrix``, whose first ``rows`` rows are the ones already projected."""
        buffer, used = self.buffer, self.rows
        if len(buffer) < len(matrix):
            buffer = np.empty((len(matrix) + len(matrix) // 8 + 1024, buffer.shape[1]), dtype=np.float32)
            buffer[:used] = self.buffer[:used]
        buffer[used : len(matrix)] = matrix[used:] @ self.basis
        return Coarse(self.basis, buffer, len(matrix))


def coarse_for(matrix: np.ndarray, spare: int = 0) -> Coarse | None:
    """A coarse projection when the matrix is large enough to need one, with ``spare`` free rows (as many as
    the matrix buffer has: the first delta then projects into them instead of copying the whole buffer,
    ~2 s at 1M columns)."""
    if len(matrix) < COARSE_MIN_ROWS or matrix.shape[1] <= COARSE_DIMS:
        return None
    rng = np.random.default_rng(0)
    sample = matrix[np.sort(rng.choice(len(matrix), min(len(matrix), SAMPLE_ROWS), replace=False))]
    _, vectors = np.linalg.eigh(sample.T @ sample)  # ascending eigenvalues
    basis = np.ascontiguousarray(vectors[:, ::-1][:, :COARSE_DIMS], dtype=np.float32)
    buffer = np.empty((len(matrix) + spare, COARSE_DIMS), dtype=np.float32)
    np.matmul(matrix, basis, out=buffer[: len(matrix)])
    return Coarse(basis, buffer, len(matrix))
