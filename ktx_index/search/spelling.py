"""Typo tolerance: an analyzed query term that is in no field is replaced by the nearest
indexed term (Damerau-Levenshtein, 1 edit up to 7 characters, 2 beyond), looked up in
tantivy's term dictionary under the same two-letter prefix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

if TYPE_CHECKING:
    from ktx_index.index.lexical import LexicalIndex

#: Fields whose vocabulary typos are corrected against (identifiers and prose).
VOCABULARY_FIELDS = ("name", "display", "description", "comment", "body")
CANDIDATES_PER_FIELD = 4000


def edit_budget(term: str) -> int:
    if len(term) < 4 or term.isdigit():
        return 0
    return 1 if len(term) < 8 else 2


def nearest_term(term: str, vocabulary: dict[str, int]) -> str | None:
    """The closest vocabulary term within the edit budget; ties go to the more frequent term."""
    budget = edit_budget(term)
    if not budget or not vocabulary:
        return None
    matches = process.extract(term, list(vocabulary), scorer=DamerauLevenshtein.distance, score_cutoff=budget, limit=20)
    if not matches:
        return None
    best = min(matches, key=lambda m: (m[1], -vocabulary[m[0]], m[0]))
    return best[0]


def indexed_term(lexical: LexicalIndex, term: str) -> str | None:
    """The term as the index holds it: itself when indexed, else its nearest correction, else None."""
    if lexical.doc_freq(term) > 0:
        return term
    return nearest_term(term, lexical.vocabulary(term[:2], VOCABULARY_FIELDS, CANDIDATES_PER_FIELD))
