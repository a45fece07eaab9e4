"""Typo tolerance: an analyzed query term that is in no field is replaced by the nearest
indexed term (Damerau-Levenshtein, 1 edit up to 7 characters, 2 beyond), looked up in
tantivy's term dictionary under the same two-letter prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from ktx_index.analysis import english_word, regional_spellings, stem

if TYPE_CHECKING:
    from ktx_index.index.lexical import LexicalIndex

#: Fields whose vocabulary typos are corrected against (identifiers and prose).
VOCABULARY_FIELDS = ("name", "display", "description", "comment", "body")
CANDIDATES_PER_FIELD = 4000

#: Word lengths at which a query term may have one more edit: below 4 none (too many short words are one
#: edit apart), 1 from 4, 2 from 8.
TERM_EDITS = (4, 8)


def edit_budget(length: int, steps: tuple[int, ...]) -> int:
    """How many edits a word of ``length`` characters may have: one per step it reaches.

    Every fuzzy match (query terms, exact identifiers, dictionary values) asks this one function, so a
    budget is read as thresholds in one place; each caller keeps its own ``steps`` because their words
    differ (a stored value is compared whole, separators removed, and tolerates more).
    """
    return sum(length >= step for step in steps)


def nearest_term(term: str, vocabulary: dict[str, int]) -> str | None:
    """The closest vocabulary term within the edit budget; ties go to the more frequent term."""
    budget = 0 if term.isdigit() else edit_budget(len(term), TERM_EDITS)
    if not budget or not vocabulary:
        return None
    matches = process.extract(term, list(vocabulary), scorer=DamerauLevenshtein.distance, score_cutoff=budget, limit=20)
    if not matches:
        return None
    best = min(matches, key=lambda m: (m[1], -vocabulary[m[0]], m[0]))
    return best[0]


def indexed_term(lexical: LexicalIndex, term: str, word: str | None = None) -> str | None:
    """The term as the index holds it: itself when indexed, else its nearest correction, else None.

    A term from an English ``word`` (analysis.english_word) is not corrected but to its other regional spelling
    (*centre* → center): a typo seldom makes another word, and a real word one edit from an indexed one means
    something else (*sales* → same, *shot* → show). Callers
    pass ``word`` only where nothing bridges the term (a wiki-only search): where the bridge (search/bridge.py)
    runs, correcting such words ranks better held out than bridging them (docs/benchmarks.md, thirty-sixth
    session)."""
    if lexical.holds(term):
        return term
    if word is not None and english_word(word):  # only its other regional spelling is the same word
        return next((t for t in map(stem, regional_spellings(word)) if t and lexical.holds(t)), None)
    return nearest_term(term, lexical.vocabulary(term[:2], VOCABULARY_FIELDS, CANDIDATES_PER_FIELD))
