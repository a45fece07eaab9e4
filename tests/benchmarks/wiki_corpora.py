"""Wiki-only projects for ``wiki_search``: six company wikis that no ranking choice was made on when written.

    python tests/benchmarks/quality.py --only wiki-tuning,wiki-heldout

Before them, ``wiki_search`` was judged on 42 questions over two projects (demo and orbit), both tuned on: too
few to tell a change that generalises from one that fits. Each project here (``tests/benchmarks/wiki/<name>/``,
a ``ktx.yaml`` and ``wiki/global/*.md``) is a company's internal wiki written by one helper, in a domain none
of the other projects has; its questions (``tests/benchmarks/judged/wiki/<name>.yaml``) were written by another
helper from the pages alone, in a user's words rather than the pages', before any index was built on them.

* ``wiki-tuning``: a wiki choice may be made on these three (with demo and orbit);
* ``wiki-heldout``: reported, never tuned on: a choice is kept only if this family does not lose.
"""

from __future__ import annotations

from pathlib import Path

from ktx_index.evaluation.judged import JudgedQuery, load_judged

HERE = Path(__file__).resolve().parent
PROJECTS = HERE / "wiki"
QUESTIONS = HERE / "judged" / "wiki"
WIKI_FAMILIES: dict[str, tuple[str, ...]] = {
    "wiki-tuning": ("riverside-health", "pixelforge-games", "brightpath-learning"),
    "wiki-heldout": ("northbound-freight", "harbor-credit-union", "solstice-energy"),
}


def wiki_corpora(family: str) -> list[tuple[str, Path, list[JudgedQuery], str]]:
    """(name, project path, questions, family) for each project of one of ``WIKI_FAMILIES``."""
    return [
        (f"{family}/{name}", PROJECTS / name, load_judged(QUESTIONS / f"{name}.yaml").queries, family)
        for name in WIKI_FAMILIES[family]
    ]
