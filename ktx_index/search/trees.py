"""A boosted-tree model evaluated with numpy: what the learned order (learned.py) runs at query time.

Why not LightGBM itself: importing it pulls scipy, scikit-learn and dask into the server (+96 MB resident,
+0.6 s to start, measured), for one small model (a 100-tree ranker of 15 leaves). LightGBM
trains it (tests/training/train_ranker.py, a dev dependency) and ``from_lightgbm`` turns its JSON dump into
flat arrays; ``predict`` walks every tree for every row at once, one level per step, dropping the pairs
that reached a leaf. Tests check it agrees with LightGBM's own ``predict`` on a ranker and a classifier they train.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Trees:
    """Every tree's nodes in one set of arrays: a node splits on ``feature`` at ``threshold`` (``<=`` goes
    ``left``), or is a leaf (``feature`` -1) worth ``value``. ``roots`` index each tree's first node."""

    features: list[str]
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    roots: np.ndarray
    depth: int
    sigmoid: bool  # a binary classifier: predict returns a probability

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The model's output for each row of ``x`` (columns in ``features`` order)."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        count = len(x)
        by_feature = x.T.ravel()  # feature f of row r at f * count + r
        node = np.repeat(self.roots, count)  # tree t's node for row r at t * count + r
        row = np.tile(np.arange(count), len(self.roots))
        walking = np.arange(len(node))  # the (tree, row) pairs not yet at a leaf
        for _ in range(self.depth):
            at = node[walking]
            feature = self.feature[at]
            inner = feature >= 0
            if not inner.all():
                walking, at, feature = walking[inner], at[inner], feature[inner]
                if not len(walking):
                    break
            goes_left = by_feature[feature * count + row[walking]] <= self.threshold[at]
            node[walking] = np.where(goes_left, self.left[at], self.right[at])
        raw = self.value[node].reshape(len(self.roots), count).sum(axis=0)
        return 1.0 / (1.0 + np.exp(-raw)) if self.sigmoid else raw

    def save(self, path: Path) -> None:
        arrays = ("feature", "threshold", "left", "right", "value", "roots")
        body = {name: getattr(self, name).tolist() for name in arrays}
        body |= {"features": self.features, "depth": self.depth, "sigmoid": self.sigmoid}
        path.write_text(json.dumps(body, separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Trees:
        body = json.loads(path.read_text(encoding="utf-8"))
        return cls(
            features=body["features"],
            feature=np.array(body["feature"], dtype=np.int64),
            threshold=np.array(body["threshold"], dtype=np.float64),
            left=np.array(body["left"], dtype=np.int64),
            right=np.array(body["right"], dtype=np.int64),
            value=np.array(body["value"], dtype=np.float64),
            roots=np.array(body["roots"], dtype=np.int64),
            depth=int(body["depth"]),
            sigmoid=bool(body["sigmoid"]),
        )

    @classmethod
    def from_lightgbm(cls, dump: dict[str, Any]) -> Trees:
        """From ``Booster.dump_model()``: numerical ``<=`` splits only, no missing values (what training makes)."""
        feature: list[int] = []
        threshold: list[float] = []
        left: list[int] = []
        right: list[int] = []
        value: list[float] = []

        def add(node: dict[str, Any], depth: int) -> tuple[int, int]:
            at = len(feature)
            feature.append(-1)
            threshold.append(0.0)
            left.append(at)
            right.append(at)
            value.append(float(node.get("leaf_value", 0.0)))
            if "split_feature" not in node:
                return at, depth
            if node["decision_type"] != "<=" or node["missing_type"] not in ("None", "NaN"):
                raise ValueError(f"unsupported split {node['decision_type']} / missing {node['missing_type']}")
            feature[at], threshold[at] = int(node["split_feature"]), float(node["threshold"])
            (left[at], low), (right[at], high) = add(node["left_child"], depth + 1), add(node["right_child"], depth + 1)
            return at, max(low, high)

        roots, depth = [], 0
        for tree in dump["tree_info"]:
            root, tree_depth = add(tree["tree_structure"], 0)
            roots.append(root)
            depth = max(depth, tree_depth)
        return cls(
            features=list(dump["feature_names"]),
            feature=np.array(feature, dtype=np.int64),
            threshold=np.array(threshold),
            left=np.array(left, dtype=np.int64),
            right=np.array(right, dtype=np.int64),
            value=np.array(value),
            roots=np.array(roots, dtype=np.int64),
            depth=depth,
            sigmoid=str(dump["objective"]).startswith("binary"),
        )
