"""The noise level (search/calibration.py): how close questions about nothing in the project come to its
vectors, measured on the project itself."""

import numpy as np
import pytest

from ktx_index.search.calibration import MAX_ROWS, PROBES, NoiseLevel, noise_level
from ktx_index.search.query import Query


def unit_rows(rng: np.random.Generator, n: int, dim: int = 16) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_noise_level_is_how_close_off_topic_probes_come():
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(500, 16)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    probes = rng.normal(size=(20, 16)).astype(np.float32)
    probes /= np.linalg.norm(probes, axis=1, keepdims=True)
    level = noise_level(matrix, probes)
    best = (matrix @ probes.T).max(axis=0)
    assert np.percentile(best, 50) <= level.english <= level.not_english <= best.max()
    assert (level.english, level.not_english) == pytest.approx((np.percentile(best, 75), np.percentile(best, 90)))
    # a project holding a probe's text verbatim: that probe alone does not move the 90th percentile to 1
    matrix[0] = probes[0]
    assert noise_level(matrix, probes).not_english < 0.99


def test_a_question_in_english_words_is_held_to_the_lower_level():
    level = NoiseLevel(english=0.2, not_english=0.3)
    assert Query.parse("discs brought back late").in_english
    assert level.of(Query.parse("renters flagged as troublesome").in_english) == 0.2
    assert Query.parse("monthly_revenue").in_english  # an identifier's parts are words too
    assert not Query.parse("zxqv blorp frobnicate").in_english
    assert not Query.parse("zxqv_blorp").in_english
    assert not Query.parse("the of and").in_english  # filler is no word of the question's own
    assert level.of(Query.parse("zxqv blorp").in_english) == 0.3


def test_nothing_to_compare_is_no_noise():
    rng = np.random.default_rng(1)
    assert noise_level(np.empty((0, 16), dtype=np.float32), unit_rows(rng, 5)) == NoiseLevel(0.0, 0.0)
    assert noise_level(unit_rows(rng, 5), np.empty((0, 16), dtype=np.float32)) == NoiseLevel(0.0, 0.0)


def test_a_big_matrix_is_sampled_evenly_and_the_sample_can_only_place_the_level_lower():
    rng = np.random.default_rng(2)
    matrix, probes = unit_rows(rng, MAX_ROWS * 2 + 5), unit_rows(rng, len(PROBES))
    sample = matrix[::3]  # ceil(32773 / 16384) = 3: every third row, at most MAX_ROWS of them
    assert len(sample) <= MAX_ROWS
    assert noise_level(matrix, probes) == noise_level(sample, probes)
    assert noise_level(matrix, probes).not_english <= float(np.percentile((matrix @ probes.T).max(axis=0), 90))
