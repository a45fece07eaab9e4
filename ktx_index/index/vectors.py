"""The vector cache: one append-only float16 file, memory-mapped, addressed by row, and a sidecar
of one record per row that makes the file describe itself.

Half precision halves the file (cosines move by ~1e-3, far below what separates two
results); rows are widened to float32 when gathered into the search matrix.

Rows are keyed by a hash of the embedding fingerprint (model and text template) and the text,
so an unchanged text is embedded once, across rebuilds and ``--force``. The store maps keys to
rows for the search; the sidecar ``vectors.keys`` records, for every row, that same key and a
CRC-32 of the row's bytes, written with the row. So the vector file is enough to recover its own
keys: a store rebuilt from the project files re-attaches every vector whose text is unchanged
(nothing is embedded again), and a damaged row is found by its checksum and only that text is
embedded again (integrity.py). Rows appended by a build that crashed before its store commit
carry their keys too and are re-attached by the next writer.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from pathlib import Path

import numpy as np

from ktx_index.logs import write_atomic


def vector_key(fingerprint: str, text: str) -> str:
    return hashlib.sha256(f"{fingerprint}\x00{text}".encode()).hexdigest()[:32]


DTYPE = np.float16
#: Sidecar header: magic with the record format's version, then the row dimension.
MAGIC = b"KTXVKEY1"
HEADER = struct.Struct("<8sI4x")
#: One record per row: the 16-byte key (32 hex digits) and the CRC-32 of the row's bytes.
RECORD = struct.Struct("<16sI")
NO_KEY = bytes(16)


class VectorFile:
    def __init__(self, path: Path, dim: int) -> None:
        self.path = path
        self.dim = dim
        self.row_bytes = dim * np.dtype(DTYPE).itemsize
        self.keys_path = path.with_suffix(".keys")

    def rows(self) -> int:
        try:
            return self.path.stat().st_size // self.row_bytes
        except FileNotFoundError:
            return 0

    def write(self, first_row: int, vectors: np.ndarray, keys: list[str] | None = None) -> None:
        """Write rows starting at first_row (truncating any unreferenced tail), then their key records; fsync both.

        A crash between the two leaves rows without records: unknown, so never re-attached (embedded again)."""
        data = np.ascontiguousarray(vectors, dtype=DTYPE)
        if data.shape[1:] != (self.dim,):
            raise ValueError(f"vectors have shape {data.shape}, expected (n, {self.dim})")
        if keys is not None and len(keys) != len(data):
            raise ValueError(f"{len(keys)} keys for {len(data)} vectors")
        raw = data.tobytes()
        _write_at(self.path, first_row * self.row_bytes, raw)
        size = self.row_bytes
        records = b"".join(
            RECORD.pack(bytes.fromhex(key) if key else NO_KEY, zlib.crc32(raw[i * size : (i + 1) * size]))
            for i, key in enumerate(keys or [""] * len(data))
        )
        self._ensure_header()
        _write_at(self.keys_path, HEADER.size + first_row * RECORD.size, records)

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

    # ------------------------------------------------------------------ the sidecar

    def has_keys(self) -> bool:
        """The sidecar exists and is of this format for this dimension (else it describes nothing)."""
        try:
            with open(self.keys_path, "rb") as fh:
                head = fh.read(HEADER.size)
        except OSError:
            return False
        return len(head) == HEADER.size and HEADER.unpack(head) == (MAGIC, self.dim)

    def records(self) -> list[tuple[str | None, int]]:
        """(key or None when unknown, CRC-32) of each row that has a record, in row order."""
        if not self.has_keys():
            return []
        data = self.keys_path.read_bytes()[HEADER.size :]
        usable = len(data) - len(data) % RECORD.size
        return [(None if key == NO_KEY else key.hex(), crc) for key, crc in RECORD.iter_unpack(data[:usable])]

    def rewrite_keys(self, records: list[tuple[str | None, int | None]]) -> None:
        """Write the whole sidecar again, one (key or None, CRC or None) per row present; a missing CRC is
        taken from the row as it is now (used when records were lost while the store still knows the keys)."""
        raw = self.path.read_bytes() if self.path.exists() else b""
        size = self.row_bytes
        packed = [
            RECORD.pack(
                bytes.fromhex(key) if key else NO_KEY,
                zlib.crc32(raw[i * size : (i + 1) * size]) if crc is None else crc,
            )
            for i, (key, crc) in enumerate(records[: self.rows()])
        ]
        write_atomic(self.keys_path, HEADER.pack(MAGIC, self.dim) + b"".join(packed), durable=True)

    def damaged_rows(self, records: list[tuple[str | None, int]]) -> list[int]:
        """Rows whose bytes no longer match the checksum written with them (read once, block by block)."""
        bad: list[int] = []
        block_rows = max(1, (8 << 20) // self.row_bytes)
        with open(self.path, "rb") as fh:
            for first in range(0, min(len(records), self.rows()), block_rows):
                block = fh.read(block_rows * self.row_bytes)
                for i in range(min(block_rows, len(records) - first, len(block) // self.row_bytes)):
                    if zlib.crc32(block[i * self.row_bytes : (i + 1) * self.row_bytes]) != records[first + i][1]:
                        bad.append(first + i)
        return bad

    def _ensure_header(self) -> None:
        if not self.has_keys():
            with open(self.keys_path, "wb") as fh:
                fh.write(HEADER.pack(MAGIC, self.dim))


def _write_at(path: Path, offset: int, data: bytes) -> None:
    with open(path, "r+b" if path.exists() else "wb") as fh:
        fh.truncate(offset)
        fh.seek(offset)
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
