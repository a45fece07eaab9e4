"""Ranking signals beyond the lanes: values a question names, and which connection it is about.

Pure functions over a loaded snapshot and the scored candidates, so each can be tested alone.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from indexers.models import SEARCH_KINDS
from ktx_index.analysis import RAW_TOKEN, STOPWORDS, analyze, fold, query_terms
from ktx_index.search import scoring
from ktx_index.search.candidate import Candidate
from ktx_index.search.spelling import indexed_term

if TYPE_CHECKING:
    from ktx_index.lexical import LexicalIndex
    from ktx_index.search.snapshot import Snapshot

#: Longest value looked up, in words ('New York City').
MAX_VALUE_WORDS = 4
#: A value held by more columns than this says nothing about which one is meant ('yes', 'active').
MAX_VALUE_COLUMNS = 4
WIKI = SEARCH_KINDS.index("wiki")
QUOTED = re.compile(r"[\"“‘']([^\"”’']+)[\"”’']")
PUNCTUATION = ".,;:!?\"'()[]{}«»“”‘’"
#: How sure a search is that the project answers it (signals.confidence).
Confidence = Literal["high", "low", "none"]


def value_phrases(query: str) -> list[str]:
    """Folded word n-grams of a question that could be a stored value: not filler alone, not a short number."""
    words = [fold(w.strip(PUNCTUATION)) for w in query.split()]
    out = []
    for n in range(1, MAX_VALUE_WORDS + 1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if not all(gram) or all(w in STOPWORDS for w in gram):
                continue
            phrase = " ".join(gram)
            if n == 1 and (len(phrase) < 2 or (phrase.isdigit() and len(phrase) < 4)):
                continue
            out.append(phrase)
    return list(dict.fromkeys(out))


def value_columns(snap: Snapshot, query: str) -> list[int]:
    """Document indexes of the columns (or dimensions) holding a value the question names."""
    found: list[int] = []
    for phrase in value_phrases(query):
        columns = [i for i in (snap.uid_index.get(u) for u in snap.facts.values.get(phrase, ())) if i is not None]
        if len(columns) <= MAX_VALUE_COLUMNS:
            found.extend(columns)
    return list(dict.fromkeys(found))


def coherence(snap: Snapshot, ranked: list[Candidate]) -> None:
    """When one connection holds the question's best answers, items of the others lose up to COHERENCE of
    their score, in proportion to how much less of the top they hold (wiki pages are not affected)."""
    if scoring.COHERENCE <= 0:
        return
    items = [c for c in ranked if snap.doc_kind[snap.uid_index[c.uid]] != WIKI]
    top = sorted(items, key=lambda c: -c.score)[: scoring.COHERENCE_TOP]
    mass: dict[int, float] = defaultdict(float)
    for cand in top:
        mass[int(snap.doc_conn[snap.uid_index[cand.uid]])] += cand.score
    if len(mass) < 2:
        return
    best = max(mass.values())
    for cand in items:
        share = mass.get(int(snap.doc_conn[snap.uid_index[cand.uid]]), 0.0) / best
        cand.score *= 1.0 - scoring.COHERENCE * (1.0 - share)


def value_like(query: str) -> set[str]:
    """Words of a question that look like data rather than concepts: numbers, quoted text, and capitalised
    words after the first ('when did Angela Sanders pay'): their absence from the schema says nothing."""
    out: set[str] = set()
    quoted = {m.lower() for span in QUOTED.findall(query) for m in span.split()}
    for i, match in enumerate(RAW_TOKEN.finditer(query)):
        token = match.group(0)
        if any(c.isdigit() for c in token) or token.lower() in quoted or (i > 0 and token[:1].isupper()):
            out.update(analyze(token))
    return out


def concept_coverage(known: Callable[[str], bool], idf: Callable[[str], float], query: str) -> float:
    """The idf-weighted share of a question's concept terms that the project's vocabulary holds at all
    (1.0 when it has none): low when it asks about things the project never mentions."""
    data = value_like(query)
    terms = [t for t in query_terms(query) if t not in data]
    if not terms:
        return 1.0
    weights = [(idf(t), known(t)) for t in terms]
    total = sum(w for w, _ in weights)
    return sum(w for w, known in weights if known) / total if total else 1.0


def confidence(
    lexical: LexicalIndex, query: str, ranked: list[Candidate], tool: str, noise: Callable[[], float | None]
) -> Confidence:
    """How sure the ranking is that the project answers the question: ``none`` only when the evidence says the
    project holds nothing for it (its best cosine does not clear the project's own noise level by NOISE_MARGIN,
    search/calibration.py, and no document matches its words beyond CHANCE_LEXICAL), ``high`` when an identifier
    is named, the best score alone is confident, or it clears the answer floor with the question's concepts in
    the project's vocabulary (concept_coverage), ``low`` otherwise: the best refs are returned, flagged.

    A vocabulary rule alone emptied answerable questions asked in words the schema does not use (*patrons* for
    ``customer``); here it only decides between high and low. ``noise`` gives the project's noise level (None
    without vectors), asked for only when the words leave the answer in doubt."""
    if not ranked:
        return "none"
    top = max(ranked, key=lambda c: c.score)
    if top.exact:
        return "high"
    best_lexical = max(c.lexical for c in ranked)
    cosines = [c.cosine for c in ranked if c.cosine is not None]
    if best_lexical < scoring.CHANCE_LEXICAL:  # the noise level is read only when the words do not answer
        level = noise()
        if level is None or not cosines or max(cosines) < level + scoring.NOISE_MARGIN:
            return "none"
    floor, coverage, confident = scoring.ANSWERABLE[tool]
    if top.score >= confident:
        return "high"
    if top.score >= floor and concept_coverage(vocabulary(lexical), lexical.idf, query) >= coverage:
        return "high"
    return "low"


def answer_floor(ranked: list[Candidate], level: Confidence) -> float:
    """The score a result needs to be returned: RELEVANCE_FLOOR, or for a low-confidence answer whose best
    score is under it, LOW_BAND of that best score (the nearest matches are the answer then)."""
    if level != "low" or not ranked:
        return scoring.RELEVANCE_FLOOR
    return min(scoring.RELEVANCE_FLOOR, scoring.LOW_BAND * max(c.score for c in ranked))


def vocabulary(lexical: LexicalIndex) -> Callable[[str], bool]:
    """Whether the project knows a term: indexed, or a misspelling the lexical lane corrects."""
    return lambda term: indexed_term(lexical, term) is not None
