import numpy as np
import pytest

from ktx_index.search import scoring


def test_fusion_is_bounded_monotone_and_exact_first():
    grid = np.linspace(0, 1, 11)
    for lex in grid:
        for sem in grid:
            score = scoring.fuse(lex, sem, exact=False)
            assert 0.0 <= score <= scoring.PARAMS.non_exact_ceiling
            assert scoring.fuse(min(1, lex + 0.1), sem, False) >= score
            assert scoring.fuse(lex, min(1, sem + 0.1), False) >= score
            assert scoring.fuse(lex, sem, exact=True) >= scoring.PARAMS.exact_floor > score


def test_lanes_map_to_unit_interval():
    assert scoring.lexical_score(5.0, 10.0) == 0.5
    assert scoring.lexical_score(50.0, 10.0) == 1.0
    assert scoring.lexical_score(1.0, 0.0) == 0.0
    assert scoring.semantic_score(scoring.PARAMS.cos_low) == 0.0 and scoring.semantic_score(1.0) == 1.0
    assert scoring.semantic_score(-1.0) == 0.0 and scoring.semantic_score(scoring.PARAMS.cos_high) == pytest.approx(1.0)


def test_lexical_only_scale_when_vectors_missing():
    assert scoring.fuse(0.5, None, False) == scoring.PARAMS.non_exact_ceiling * 0.5
