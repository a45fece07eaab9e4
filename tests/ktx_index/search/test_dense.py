"""The dense lane's arithmetic: exact and coarse-then-exact cosines give the same scores."""

from __future__ import annotations

import numpy as np
import pytest

from ktx_index.search import dense
from ktx_index.search.dense import best_per_group, doc_cosines, group_cosine, groups_of
from ktx_index.snapshot import coarse as coarse_module
from ktx_index.snapshot.coarse import Coarse, coarse_for


@pytest.fixture
def small_coarse(monkeypatch: pytest.MonkeyPatch) -> None:
    """A coarse pass on every matrix, on 16 dimensions: the test matrices are small."""
    monkeypatch.setattr(coarse_module, "COARSE_MIN_ROWS", 1)
    monkeypatch.setattr(coarse_module, "COARSE_DIMS", 16)


def clustered(rows: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    """Unit vectors around a few dozen centres, like embeddings of one project's texts."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, dim))
    scale = 0.9 ** np.arange(dim)  # a decaying spectrum, as real embeddings have
    m = (centres[rng.integers(0, 40, rows)] + 0.5 * rng.normal(size=(rows, dim))) * scale
    return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)


def layout(groups: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """chunk_rows / chunk_starts with most groups of one chunk and a few of several (wiki pages)."""
    rng = np.random.default_rng(seed)
    sizes = np.where(rng.random(groups) < 0.05, rng.integers(2, 6, groups), 1)
    starts = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    return rng.integers(0, groups, int(sizes.sum())).astype(np.int64), starts


def reference(matrix: np.ndarray, vector: np.ndarray, rows: np.ndarray, starts: np.ndarray) -> np.ndarray:
    cosines = (matrix @ vector)[rows]
    ends = np.r_[starts[1:], len(rows)]
    return np.array([group_cosine(cosines[a:b]) for a, b in zip(starts, ends, strict=True)], dtype=np.float32)


def test_a_page_blends_its_two_best_sections() -> None:
    assert group_cosine(np.array([0.2, 0.8, 0.4], dtype=np.float32), 0.5) == pytest.approx(0.6)
    assert group_cosine(np.array([0.8, 0.1, 0.8], dtype=np.float32), 0.5) == pytest.approx(0.8)  # a tie for best
    assert group_cosine(np.array([0.3], dtype=np.float32), 0.5) == pytest.approx(0.3)
    rows, starts = np.array([0, 1, 2, 3, 4, 5]), np.array([0, 1, 4])  # one chunk; three with a tie; two
    scores = np.array([0.3, 0.7, 0.2, 0.7, 0.9, 0.5], dtype=np.float32)
    assert best_per_group(scores, groups_of(rows, starts), 0.5) == pytest.approx([0.3, 0.7, 0.7])
    assert best_per_group(scores, groups_of(rows, starts), 0.0) == pytest.approx([0.3, 0.7, 0.9])


def test_best_per_group_equals_the_blend_of_every_group_alone() -> None:
    matrix = clustered(500)
    rows, starts = layout(400)
    vector = matrix[7]
    got = best_per_group(matrix @ vector, groups_of(rows, starts))
    assert np.array_equal(got, reference(matrix, vector, rows, starts))


def test_coarse_shortlist_keeps_the_exact_top_and_scores_are_exact(small_coarse: None) -> None:
    matrix = clustered(6000)
    rows, starts = layout(5000)
    groups = groups_of(rows, starts)
    coarse = coarse_for(matrix)
    assert coarse is not None and coarse.matrix.shape == (6000, 16)
    allowed = np.ones(len(starts), dtype=bool)
    allowed[::7] = False
    recalls = []
    for q in range(20):
        vector = clustered(1, seed=100 + q)[0]
        exact = np.where(allowed, reference(matrix, vector, rows, starts), -1.0)
        cosines, top = doc_cosines(matrix, coarse, groups, rows, starts, vector, allowed, 50, -1.0)
        assert allowed[top].all()
        np.testing.assert_allclose(cosines.values[top], exact[top], rtol=1e-5, atol=1e-6)
        truth = set(np.argsort(-exact)[:50].tolist())
        recalls.append(len(truth & set(top.tolist())) / 50)
        some = np.flatnonzero(allowed)[:30]  # documents outside the shortlist are exact once asked for
        assert [cosines[g] for g in some] == pytest.approx(exact[some].tolist(), abs=1e-6)
    assert np.mean(recalls) >= 0.95


def test_small_matrices_are_scored_exactly() -> None:
    matrix = clustered(300)
    rows, starts = layout(300)
    assert coarse_for(matrix) is None
    vector = matrix[3]
    cosines, top = doc_cosines(matrix, None, groups_of(rows, starts), rows, starts, vector, np.ones(300, bool), 10, 0.0)
    exact = reference(matrix, vector, rows, starts)
    assert np.array_equal(cosines.values, exact) and set(top) <= set(np.argsort(-exact)[:10])


def test_extending_a_projection_equals_projecting_the_whole_matrix(small_coarse: None) -> None:
    matrix = clustered(3000)
    head = coarse_for(matrix[:2000])
    assert head is not None
    grown = head.extended(matrix)
    np.testing.assert_allclose(grown.matrix, matrix @ head.basis, rtol=1e-5, atol=1e-6)
    assert isinstance(grown, Coarse) and head.rows == 2000  # the old projection still reads its own head


def test_a_projection_with_spare_rows_extends_in_place(small_coarse: None) -> None:
    matrix = clustered(3000)
    head = coarse_for(matrix[:2000], spare=1000)
    assert head is not None and head.matrix.shape == (2000, 16)
    grown = head.extended(matrix)
    assert grown.buffer is head.buffer  # no copy of the rows already projected
    np.testing.assert_allclose(grown.matrix, matrix @ head.basis, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(head.matrix, matrix[:2000] @ head.basis, rtol=1e-5, atol=1e-6)


def test_no_mask_means_every_group_is_allowed(small_coarse: None) -> None:
    matrix = clustered(3000)
    rows, starts = layout(2500)
    groups = groups_of(rows, starts)
    vector = clustered(1, seed=7)[0]
    for coarse in (None, coarse_for(matrix)):
        masked = doc_cosines(matrix, coarse, groups, rows, starts, vector, np.ones(len(starts), bool), 40, 0.1)[1]
        unmasked = doc_cosines(matrix, coarse, groups, rows, starts, vector, None, 40, 0.1)[1]
        assert sorted(masked.tolist()) == sorted(unmasked.tolist()) and len(masked) == 40


def test_top_picks_the_largest_and_handles_edges() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.7, 0.3], dtype=np.float32)
    assert sorted(dense._top(scores, 2).tolist()) == [1, 3]
    assert dense._top(scores, 0).tolist() == [] and sorted(dense._top(scores, 9).tolist()) == [0, 1, 2, 3, 4]


def test_the_nearest_groups_are_kept_below_the_floor_but_never_a_masked_one() -> None:
    matrix = clustered(300)
    rows, starts = layout(300)
    groups = groups_of(rows, starts)
    vector = -matrix[3]  # far from most: few cosines clear a high floor
    exact = reference(matrix, vector, rows, starts)
    allowed = np.ones(300, bool)
    allowed[np.argsort(-exact)[:2]] = False  # the two nearest are out of scope
    _, none = doc_cosines(matrix, None, groups, rows, starts, vector, allowed, 50, 0.99)
    _, nearest = doc_cosines(matrix, None, groups, rows, starts, vector, allowed, 50, 0.99, nearest=5)
    assert len(none) == 0
    assert set(nearest) == set(np.argsort(-exact)[2:7])
