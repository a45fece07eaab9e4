"""How close an unrelated question comes to this project: the noise level a real answer must clear.

A fixed score threshold does not transfer between projects: a scan of bare identifiers puts every question's
best cosine lower than a wiki written in prose does, and the same off-topic question comes closer to a big
project than to a small one. So the evidence that a project holds *nothing* for a question is measured against
the project itself: off-topic probe questions (below, about nothing a warehouse holds) are matched against the
project's own vectors, and a percentile of their best cosines is the project's noise level. A question whose
best cosine does not clear it, and that matches the project's words no better than by chance, has no answer
here; anything above that is answered (with ``confidence: "low"`` when the ranking's own rule is not sure,
signals.assess).

Which percentile depends on the question's words. A question with an English word (``Query.in_english``) is
answered once it comes closer than three probes in four: an answerable question asked in words far from the
schema's (*renters flagged as troublesome* for a ``good_or_bad_customer`` column) can sit below the 90th
percentile, and an empty answer is the worst one for an agent, while a no-answer question answered ``low`` is
declined all the same. A question in no English word (*zxqv blorp*, *kubernetes*) must clear the 90th
percentile: its cosine measures word pieces, not a meaning, and comes out higher than a real off-topic
question's.
"""

from __future__ import annotations

from dataclasses import dataclass

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
#: The percentile of the probes' best cosines a question must clear: one with an English word, one without.
ENGLISH_PERCENTILE = 75
NOT_ENGLISH_PERCENTILE = 90


@dataclass(frozen=True)
class NoiseLevel:
    english: float  # what a question with an English word must clear
    not_english: float  # what a question in none must clear

    def of(self, in_english: bool) -> float:
        return self.english if in_english else self.not_english


def noise_level(matrix: np.ndarray, probes: np.ndarray) -> NoiseLevel:
    """The two percentiles of the probes' best cosines over the rows of ``matrix`` (at most MAX_ROWS of them,
    evenly spaced): how close a question about nothing here comes to the project's texts."""
    sample = matrix[:: max(1, -(-len(matrix) // MAX_ROWS))]
    if not len(sample) or not len(probes):
        return NoiseLevel(0.0, 0.0)
    best = (sample @ probes.T).max(axis=0)
    english, not_english = np.percentile(best, [ENGLISH_PERCENTILE, NOT_ENGLISH_PERCENTILE])
    return NoiseLevel(float(english), float(not_english))
