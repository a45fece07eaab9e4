"""What the ranking adds over a plain cosine, per corpus and per family, and how it answers no-answer questions.

Pure functions over scored questions (ktx_index.evaluation.metrics.QueryResult), used by quality.py. A plain cosine of
the model the product ships, over the product's own texts (naive.cosine_runner), is the bar: every stage around
the model has to earn its place against it, on every corpus. Plain cosine always returns something, so the gain
is reported over all questions (a no-answer question scores 1 when the product declines) and over the
answerable ones alone; beside it, how often an answerable question got nothing (the worst answer for an agent:
it stops looking), how often it was flagged ``confidence: "low"``, and how often a no-answer question was
declined (nothing, or flagged low).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ktx_index.evaluation.metrics import QueryResult


@dataclass(frozen=True)
class Gain:
    name: str
    n: int
    ndcg: float
    cosine: float
    answerable: int
    ndcg_answerable: float
    cosine_answerable: float
    emptied: int  # answerable questions that got no refs
    low: int  # answerable questions flagged low
    no_answer: int
    declined: int  # no-answer questions that got nothing or were flagged low

    @property
    def gain(self) -> float:
        return self.ndcg - self.cosine

    @property
    def gain_answerable(self) -> float:
        return self.ndcg_answerable - self.cosine_answerable


def _mean(values: Sequence[float]) -> float:
    return statistics.mean(values) if values else float("nan")


def gain(name: str, ours: Sequence[QueryResult], cosine: Sequence[QueryResult], tool: str = "discover_data") -> Gain:
    """One corpus's (or family's) figures for ``tool``: the two runs hold the same questions in the same order."""
    pairs = [(o, c) for o, c in zip(ours, cosine, strict=True) if o.tool == tool]
    answerable = [(o, c) for o, c in pairs if o.relevant]
    unanswerable = [o for o, _ in pairs if not o.relevant]
    return Gain(
        name=name,
        n=len(pairs),
        ndcg=_mean([o.ndcg for o, _ in pairs]),
        cosine=_mean([c.ndcg for _, c in pairs]),
        answerable=len(answerable),
        ndcg_answerable=_mean([o.ndcg for o, _ in answerable]),
        cosine_answerable=_mean([c.ndcg for _, c in answerable]),
        emptied=sum(not o.returned for o, _ in answerable),
        low=sum(o.low for o, _ in answerable),
        no_answer=len(unanswerable),
        declined=sum(not o.returned or o.low for o in unanswerable),
    )


def family_mean(name: str, rows: Sequence[Gain]) -> Gain:
    """Families weighed equally: the mean of their figures (counts summed)."""
    return Gain(
        name=name,
        n=sum(r.n for r in rows),
        ndcg=_mean([r.ndcg for r in rows]),
        cosine=_mean([r.cosine for r in rows]),
        answerable=sum(r.answerable for r in rows),
        ndcg_answerable=_mean([r.ndcg_answerable for r in rows if r.answerable]),
        cosine_answerable=_mean([r.cosine_answerable for r in rows if r.answerable]),
        emptied=sum(r.emptied for r in rows),
        low=sum(r.low for r in rows),
        no_answer=sum(r.no_answer for r in rows),
        declined=sum(r.declined for r in rows),
    )


def format_gains(title: str, rows: Sequence[Gain]) -> str:
    head = (
        f"{'':<26} {'n':>4}  {'nDCG':>5} {'cos':>5} {'gain':>6}   {'ans':>4} {'nDCG':>5} {'cos':>5} {'gain':>6}"
        f"   {'emptied':>8} {'low':>8}   {'declined':>9}"
    )
    lines = [title, head]
    for r in rows:
        lines.append(
            f"{r.name:<26} {r.n:>4}  {r.ndcg:5.3f} {r.cosine:5.3f} {r.gain:+6.3f}   {r.answerable:>4} "
            f"{r.ndcg_answerable:5.3f} {r.cosine_answerable:5.3f} {r.gain_answerable:+6.3f}   "
            f"{f'{r.emptied}/{r.answerable}':>8} {f'{r.low}/{r.answerable}':>8}   "
            f"{f'{r.declined}/{r.no_answer}':>9}"
        )
    return "\n".join(lines)
