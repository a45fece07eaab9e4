"""The numpy tree walk gives what LightGBM's own predict gives, for a ranker and for a classifier."""

from pathlib import Path

import lightgbm
import numpy as np
import pytest

from ktx_index.search.trees import Trees

PARAMS = {"learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 5, "seed": 3, "deterministic": True}
PARAMS |= {"num_threads": 1, "verbose": -1}


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 6))
    x[:, 5] = rng.integers(0, 2, size=600)  # a 0/1 feature, as the kinds are
    y = (x[:, 0] + 0.5 * x[:, 1] * x[:, 5] > 0.3).astype(float)
    return x, y


def test_a_ranker_walks_to_lightgbms_scores(data, tmp_path: Path):
    x, y = data
    train = lightgbm.Dataset(x, label=y.astype(int), group=[20] * 30, feature_name=[f"f{i}" for i in range(6)])
    booster = lightgbm.train(PARAMS | {"objective": "lambdarank"}, train, num_boost_round=40)
    trees = Trees.from_lightgbm(booster.dump_model())
    trees.save(tmp_path / "ranker.json")
    loaded = Trees.load(tmp_path / "ranker.json")
    assert loaded.features == [f"f{i}" for i in range(6)] and not loaded.sigmoid
    probe = np.random.default_rng(1).normal(size=(50, 6))
    assert np.allclose(loaded.predict(probe), booster.predict(probe), atol=1e-9)


def test_a_classifier_gives_lightgbms_probabilities(data):
    x, y = data
    booster = lightgbm.train(PARAMS | {"objective": "binary"}, lightgbm.Dataset(x, label=y), num_boost_round=30)
    trees = Trees.from_lightgbm(booster.dump_model())
    assert trees.sigmoid
    assert np.allclose(trees.predict(x[:40]), booster.predict(x[:40]), atol=1e-9)
    assert np.allclose(trees.predict(x[0]), booster.predict(x[:1]), atol=1e-9)  # one row alone


def test_a_split_it_cannot_walk_is_refused():
    leaf = {"leaf_value": 0.0}
    dump = {
        "feature_names": ["a"],
        "objective": "lambdarank",
        "tree_info": [
            {
                "tree_structure": {
                    "split_feature": 0,
                    "threshold": "1||2",
                    "decision_type": "==",
                    "missing_type": "None",
                    "left_child": leaf,
                    "right_child": leaf,
                }
            }
        ],
    }
    with pytest.raises(ValueError, match="unsupported split"):
        Trees.from_lightgbm(dump)
