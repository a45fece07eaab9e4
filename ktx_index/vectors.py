"""The vector cache: one append-only float16 file, memory-mapped, addressed by row.

Half precision halves the file (cosines move by ~1e-3, far below what separates two
results); rows are widened to float32 when gathered into the search matrix.

Rows are keyed (in the store) by a hash of the embedding fingerprint and the text, so
an unchanged text is embedded once, across rebuilds and ``--force``. Rows appended by
a build that crashed before its store commit are unreferenced and get overwritten.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np


def vector_key(fingerprint: str, text: str) -> str:
    return hashlib.sha256(f"{fingerprint}\x00{text}".encode()).hexdigest()[:32]


DTYPE = np.float16


class VectorFile:
    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self.row_bytes = dim * np.dtype(DTYPE).itemsize

    def rows(self) -> int:
        try:
            return self.path.stat().st_size // self.row_bytes
        except FileNotFoundError:
            return 0

    def write(self, first_row: int, vectors: np.ndarray) -> None:
        """Write rows starting at first_row (truncating any unreferenced tail) and fsync."""
        data = np.ascontiguousarray(vectors, dtype=DTYPE)
        if data.shape[1:] != (self.dim,):
            raise ValueError(f"vectors have shape {data.shape}, expected (n, {self.dim})")
        with open(self.path, "r+b" if self.path.exists() else "wb") as fh:
            fh.truncate(first_row * self.row_bytes)
            fh.seek(first_row * self.row_bytes)
            fh.write(data.tobytes())
            fh.flush()
            os.fsync(fh.fileno())

    def read_rows(self, rows: np.ndarray, spare: int = 0) -> np.ndarray:
        """Gather rows into a dense in-memory matrix (one copy; the file stays mapped, not loaded), followed by
        ``spare`` uninitialised rows (a reader appends later vectors there without copying the matrix)."""
        count = self.rows()
        out = np.empty((len(rows) + spare, self.dim), dtype=np.float32)
        if len(rows) == 0:
            return out
        if int(rows.max()) >= count:
            raise ValueError(f"{self.path.name} has {count} rows but row {int(rows.max())} is referenced")
        mapped = np.memmap(self.path, dtype=DTYPE, mode="r", shape=(count, self.dim))
        out[: len(rows)] = mapped[rows]
        return out
