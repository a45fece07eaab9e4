"""How close an unrelated question comes to this project: the noise level a real answer must clear.

A fixed score threshold does not transfer between projects: a scan of bare identifiers puts every question's
best cosine lower than a wiki written in prose does, and the same off-topic question comes closer to a big
project than to a small one. So the evidence that a project holds *nothing* for a question is measured against
the project itself: off-topic probe questions (below, about nothing a warehouse holds) are matched against the
project's own vectors, and the 90th percentile of their best cosines is the project's noise level. A question
whose best cosine does not clear it by a margin, and that matches the project's words no better than by chance,
has no answer here; anything above that is answered (with ``confidence: "low"`` when the ranking's own rule is
not sure, signals.confidence).
"""

from __future__ import annotations

import numpy as np

#: Questions about things no data warehouse holds, in the plain English a user types.
PROBES = (
    "how do I bake sourdough bread at home",
    "symptoms of seasonal flu in children",
    "how to tie a bowline knot",
    "best hiking trails in the Alps",
    "who won the football world cup in 1998",
    "how to change a flat bicycle tyre",
    "what is the capital of Australia",
    "lyrics of a famous Beatles song",
    "how do black holes form",
    "tips for learning to play the violin",
    "when is the best time to plant tulip bulbs",
    "how to train a puppy to sit",
    "what causes the northern lights",
    "recommended dosage of vitamin D",
    "how to knit a wool scarf",
    "history of the Roman empire",
    "rules of chess castling",
    "how to meditate for beginners",
    "weather forecast for the weekend",
    "how to repair a leaking kitchen tap",
)
#: Rows of the matrix the probes are matched against at most (evenly spaced beyond it): the noise level of a
#: million-column project is read in milliseconds, and a sample can only place it lower, which answers more.
MAX_ROWS = 16384
NOISE_PERCENTILE = 90


def noise_level(matrix: np.ndarray, probes: np.ndarray) -> float:
    """The NOISE_PERCENTILE of the probes' best cosines over the rows of ``matrix`` (at most MAX_ROWS of them,
    evenly spaced): how close a question about nothing here comes to the project's texts."""
    sample = matrix[:: max(1, -(-len(matrix) // MAX_ROWS))]
    if not len(sample) or not len(probes):
        return 0.0
    return float(np.percentile((sample @ probes.T).max(axis=0), NOISE_PERCENTILE))
