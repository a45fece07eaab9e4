"""How sure an answer is: the question's concepts in the project's vocabulary, the verdict (``assess``), and the
order an answer returns its candidates in.

Pure functions over a loaded snapshot and the scored candidates, so each can be tested alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ktx_index.search.candidate import Candidate
from ktx_index.search.query import Query
from ktx_index.search.scoring import PARAMS, Params
from ktx_index.search.spelling import indexed_term

if TYPE_CHECKING:
    from ktx_index.index.lexical import LexicalIndex

#: How sure a search is that the project answers it (signals.assess).
Confidence = Literal["high", "low", "none"]
#: What the carried check (search/carried.py) reports when the best answers match every content word of a
#: question by their terms.
CARRIED = 1.0


def concept_coverage(known: Callable[[str], bool], idf: Callable[[str], float], query: str | Query) -> float:
    """The idf-weighted share of a question's concept terms that the project's vocabulary holds at all
    (1.0 when it has none): low when it asks about things the project never mentions. A word that looks like data
    (a name, a number, an acronym: value_like) counts only when the project holds it: absent, it says nothing; nor
    does a vague word (Query.vague: *really*, *someone*)."""
    q = Query.of(query)
    terms = [t for t in q.terms if t not in q.vague and (t not in q.data_words or known(t))]
    if not terms:
        return 1.0
    weights = [(idf(t), known(t)) for t in terms]
    total = sum(w for w, _ in weights)
    return sum(w for w, known in weights if known) / total if total else 1.0


@dataclass(frozen=True)
class Verdict:
    """How sure a search is (``level``) and why, in a sentence with the figures it was read from (``--explain``)."""

    level: Confidence
    reason: str


def assess(
    lexical: LexicalIndex,
    query: str | Query,
    ranked: list[Candidate],
    tool: str,
    noise: Callable[[], float | None],
    p: Params = PARAMS,
    least_carried: Callable[[], float | None] = lambda: None,
    *,
    bridging: bool = True,
    curated: bool = False,
) -> Verdict:
    """How sure the ranking is that the project answers the question: ``none`` only when the evidence says the
    project holds nothing for it (its best cosine does not clear the project's own noise level, search/calibration.py,
    and no document matches its words beyond ``chance_lexical``), ``high`` when an identifier is named, ``low``
    for a question of filler alone; otherwise ``high`` when the best score alone is confident, or it clears the
    answer floor with the question's concepts in the project's vocabulary (concept_coverage), ``low`` if not, and
    then (for the tools ``Params.carried`` names) turned by whether the best answers carry the question's words:
    ``least_carried`` gives how far their cosine drops without the least-carried of those the index lacks a term of
    (search/carried.py), or CARRIED when the answers match every word by its terms.

    A vocabulary rule alone emptied answerable questions asked in words the schema does not use (*patrons* for
    ``customer``); here it only decides between high and low. ``noise`` gives the noise level this question must
    clear (search/calibration.py; None without vectors), asked for only when the words leave the answer in doubt;
    ``least_carried`` is asked for only when a tool turns on it (None: not known, the level stands). ``bridging``
    says whether the search's lexical lane bridged (lexical_lane.bridges): where it did not, the vocabulary rule does
    not take an English word for a typo either. On a ``curated`` project (snapshot.curated, with vectors:
    discover_data says so) an answer under ``Params.curated_floor`` is confident only when its words are shown
    carried (a drop of ``Params.curated_carried`` at least; None, nothing measured, does not show it)."""
    if not ranked:
        return Verdict("none", "nothing matches the question's words or meaning")
    top = max(ranked, key=lambda c: c.score)
    if top.exact:
        return Verdict("high", f"the question names {top.uid} exactly")
    best_lexical = max(c.lexical for c in ranked)
    best_cosine = max((c.cosine for c in ranked if c.cosine is not None), default=None)
    cleared = ""
    if best_lexical < p.chance_lexical:  # the noise level is read only when the words do not answer
        level = noise()
        chance = f"no document matches its words beyond chance ({best_lexical:.2f} < {p.chance_lexical})"
        if level is None:
            return Verdict("none", f"{chance} and there are no vectors to match its meaning")
        if best_cosine is None or best_cosine < level:
            best = "none" if best_cosine is None else f"{best_cosine:.3f}"
            return Verdict("none", f"{chance}; its best cosine ({best}) is below the noise level {level:.3f}")
        cleared = f"its best cosine {best_cosine:.3f} clears the noise level {level:.3f}; "
    if Query.of(query).filler_only:  # 'the of and', '1 = 1': whatever matched, matched by chance
        return Verdict("low", "the question holds nothing but filler words or single characters")
    floor, coverage, confident = p.answerable[tool]
    if top.score >= confident:
        sure, why = True, f"best score {top.score:.3f} >= {confident}, confident alone"
    elif top.score < floor:
        sure, why = False, f"best score {top.score:.3f} < the answer floor {floor}"
    else:
        covered = concept_coverage(vocabulary(lexical, None if bridging else query), lexical.idf, query)
        sure = covered >= coverage
        why = (
            f"best score {top.score:.3f} clears the answer floor {floor} and {covered:.0%} of the question's "
            f"concepts are in the project's vocabulary ({'>=' if sure else '<'} {coverage:.0%})"
        )
    drop = least_carried() if tool in p.carried else None
    if drop is not None:
        threshold = p.carried[tool][0 if sure else 1]
        turned = sure != (drop >= threshold)
        sure = drop >= threshold
        if drop >= CARRIED:
            carried = "the best answers match every word of the question"
        else:
            carried = (
                f"the best answers' cosine drop without its least-carried word is {drop:+.3f} "
                f"({'>=' if sure else '<'} {threshold:+.3f})"
            )
        why += f", but {carried}, so {'high' if sure else 'low'}" if turned else f"; {carried}"
    if curated and sure and top.score < p.curated_floor and (drop is None or drop < p.curated_carried):
        sure = False
        why += (
            f", but on a project with a hand-written semantic layer a best score under {p.curated_floor} needs its "
            f"words carried (a drop of {p.curated_carried:+.2f} at least), so low"
        )
    return Verdict("high" if sure else "low", cleared + why)


def answer_order(ranked: list[Candidate]) -> list[Candidate]:
    """What an answer returns, best first (the caller takes up to its limit): every candidate that scored, then
    those the fusion gave nothing (a cosine below ``cos_low``, no word matched), nearest first.

    No floor trims a confident answer and no answer stops short while the project holds more: a trimmed list
    dropped the second relevant table or column that plain cosine returns, and every family gains or ties held
    out without the trim (docs/benchmarks.md). How sure the answer is rides on ``confidence``, and each ref's
    score says how far down the list turned weak. A container added only for its members (no cosine, never
    lifted) stays out."""
    scored = [c for c in ranked if c.score > 0]
    rest = [c for c in ranked if c.score <= 0 and c.cosine is not None]
    return scored + sorted(rest, key=lambda c: (-(c.cosine or 0.0), c.uid))


def vocabulary(lexical: LexicalIndex, unbridged: str | Query | None = None) -> Callable[[str], bool]:
    """Whether the project knows a term: indexed, or a misspelling the lexical lane corrects (in a question it
    does not bridge, ``unbridged``, an English word is never taken for a misspelling: spelling.indexed_term)."""
    words = Query.of(unbridged).term_words if unbridged is not None else {}
    return lambda term: indexed_term(lexical, term, words.get(term)) is not None
