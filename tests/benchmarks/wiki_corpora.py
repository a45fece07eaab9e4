"""Wiki-only projects for ``wiki_search``: company wikis that no ranking choice was made on when written.

    python tests/benchmarks/quality.py --only wiki-tuning,wiki-heldout,wiki-more

Before them, ``wiki_search`` was judged on 42 questions over two projects (demo and orbit), both tuned on: too
few to tell a change that generalises from one that fits. Each project here (``tests/benchmarks/wiki/<name>/``,
a ``ktx.yaml`` and ``wiki/global/*.md``) is a company's internal wiki written by one helper, in a domain none
of the other projects has; its questions (``tests/benchmarks/judged/wiki/<name>.yaml``) were written by another
helper from the pages alone, in a user's words rather than the pages', before any index was built on them.

* ``wiki-tuning``: a wiki choice may be made on these three (with demo and orbit);
* ``wiki-heldout``: reported, never tuned on: a choice is kept only if this family does not lose;
* ``wiki-more``: the eight wikis of ``tests/training/more/wikis/`` (written as training data, which the shipped
  model does not train on: that README says why), judged on their 24 colleague-style questions each
  (``questions.jsonl``) and on four no-answer questions each (``no-answer.jsonl``, written by other helpers from
  the pages alone). Reported, never tuned on, like ``wiki-heldout``; no longer held out if they are ever
  trained on.
"""

from __future__ import annotations

import json
from pathlib import Path

from ktx_index.evaluation.judged import JudgedQuery, load_judged

HERE = Path(__file__).resolve().parent
PROJECTS = HERE / "wiki"
QUESTIONS = HERE / "judged" / "wiki"
MORE = HERE.parent / "training" / "more" / "wikis"
WIKI_FAMILIES: dict[str, tuple[str, ...]] = {
    "wiki-tuning": ("riverside-health", "pixelforge-games", "brightpath-learning"),
    "wiki-heldout": ("northbound-freight", "harbor-credit-union", "solstice-energy"),
    "wiki-more": (
        "brightwater-charity",
        "craftnook-marketplace",
        "ironpeak-fitness",
        "metrolink-transit",
        "oakhaven-property",
        "roadrunner-rentals",
        "signalwave-mobile",
        "valley-gazette",
    ),
}


def _rows(path: Path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if any(row["wiki"] != path.parent.name for row in rows):
        raise ValueError(f"{path}: a question of another wiki")
    return rows


def more_questions(project: Path) -> list[JudgedQuery]:
    """A ``wiki-more`` project's questions, as judged ``wiki_search`` questions: the training-shaped pairs of
    ``questions.jsonl`` (``{"wiki", "query", "relevant": {page: grade}}``, each answered by a page) and the
    no-answer questions of ``no-answer.jsonl`` (``{"wiki", "query", "why_unanswered"}``)."""
    answered = [
        JudgedQuery(
            id=f"{project.name}-{n:02d}",
            tool="wiki_search",
            type="paraphrase",
            query=row["query"],
            relevant={f"wiki::{page}": grade for page, grade in row["relevant"].items()},
        )
        for n, row in enumerate(_rows(project / "questions.jsonl"), start=1)
    ]
    unanswered = [
        JudgedQuery(id=f"{project.name}-na{n}", tool="wiki_search", type="no_answer", query=row["query"])
        for n, row in enumerate(_rows(project / "no-answer.jsonl"), start=1)
    ]
    return answered + unanswered


def wiki_corpora(family: str) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(name, project path, questions, family) for each project of one of ``WIKI_FAMILIES``."""
    if family == "wiki-more":
        return [
            (f"{family}/{name}", MORE / name, more_questions(MORE / name), family) for name in WIKI_FAMILIES[family]
        ]
    return [
        (f"{family}/{name}", PROJECTS / name, load_judged(QUESTIONS / f"{name}.yaml").queries, family)
        for name in WIKI_FAMILIES[family]
    ]
