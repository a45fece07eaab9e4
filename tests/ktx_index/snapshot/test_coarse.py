"""The coarse projection (snapshot/coarse.py): only for matrices large enough to need one, a basis that is
the same for the same index, and deltas that project only their new rows, into spare room when there is some
(the dense lane's use of it: tests/ktx_index/search/test_dense.py)."""

from __future__ import annotations

import numpy as np
import pytest

from ktx_index.snapshot.coarse import COARSE_DIMS, COARSE_MIN_ROWS, coarse_for

DIM = COARSE_DIMS + 8


@pytest.fixture(scope="module")
def matrix() -> np.ndarray:
    rows = np.random.default_rng(0).normal(size=(COARSE_MIN_ROWS + 100, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_small_or_narrow_matrices_are_scored_exactly(matrix):
    assert coarse_for(matrix[: COARSE_MIN_ROWS - 1]) is None
    assert coarse_for(np.zeros((COARSE_MIN_ROWS, COARSE_DIMS), dtype=np.float32)) is None


def test_the_basis_is_orthonormal_and_the_same_for_the_same_matrix(matrix):
    first, second = coarse_for(matrix), coarse_for(matrix)
    assert first.basis.shape == (DIM, COARSE_DIMS)
    assert np.allclose(first.basis.T @ first.basis, np.eye(COARSE_DIMS), atol=1e-4)
    assert np.array_equal(first.basis, second.basis) and np.allclose(first.matrix, matrix @ first.basis, atol=1e-5)


def test_a_delta_projects_its_new_rows_into_the_spare_room_then_grows(matrix):
    head = matrix[:-100]
    coarse = coarse_for(head, spare=60)
    assert coarse.rows == len(head) and len(coarse.buffer) == len(head) + 60
    within = coarse.extended(matrix[:-40])
    assert within.buffer is coarse.buffer and within.rows == len(matrix) - 40  # no copy of the whole buffer
    assert np.allclose(within.matrix, matrix[:-40] @ coarse.basis, atol=1e-5)
    grown = within.extended(matrix)
    assert grown.buffer is not within.buffer and len(grown.buffer) > len(matrix)
    assert np.allclose(grown.matrix, matrix @ coarse.basis, atol=1e-5)
    assert coarse.matrix.shape == (len(head), COARSE_DIMS)  # the old snapshot's view is unchanged
    assert np.allclose(coarse.matrix, head @ coarse.basis, atol=1e-5)
