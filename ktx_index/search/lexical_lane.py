"""The lexical lane: per question term, the share of it each document matches, the terms no field holds looked
for as their typo correction, else as the project word nearest in meaning (search/bridge.py), and a term the
index holds also as the project's abbreviation of it (*payment* in a comment, ``PYMT_TXN`` the table). A wiki-only
search does not bridge, nor take an English word for a typo (spelling.indexed_term).

A function over the lexical index and the question, so the lane reads the same in a test as in ranking; the
engine hands in its bridge (which needs the model and the project's embedded vocabulary).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from ktx_index.index.lexical import LexicalIndex
from ktx_index.search.candidate import Candidate
from ktx_index.search.query import Query
from ktx_index.search.scoring import Params, term_score
from ktx_index.search.spelling import indexed_term

#: The word each question term came from and its unknown terms → per term, the nearest project term and the two
#: words' cosine.
Bridged = Callable[[Mapping[str, str], list[str]], dict[str, tuple[str, float]]]
#: A question word → the term of the project's abbreviation of it the index holds (Engine.abbreviation), or None.
Abbreviation = Callable[[str], str | None]


def bridges(kinds: Collection[str]) -> bool:
    """Whether a search over ``kinds`` bridges the words the index lacks, and so may take an English word for a
    typo (the bridge would otherwise meet it): not a wiki-only one. Pages are matched on their whole text by the
    dense lane; a bridge moved no judged wiki_search question and costs an embedding per word. The lane, the
    engine's abbreviations and the vocabulary rule (signals.assess) all read it; ``bridged_term`` 0 switches off
    the lane's bridge alone (the ablation of tests/benchmarks/stages.py)."""
    return set(kinds) != {"wiki"}


def searched_term(lexical: LexicalIndex, query: Query, term: str, bridging: bool) -> str | None:
    """A question term as the lane searches it: itself when indexed, else its typo correction, an English word
    taken for a typo only where the search bridges (spelling.indexed_term); None when neither. The wiki's count of
    matching pages reads it the same way."""
    return indexed_term(lexical, term, None if bridging else query.term_words.get(term))


def lexical_lane(
    lexical: LexicalIndex,
    query: Query,
    kinds: list[str],
    connection: str | None,
    pool: int,
    out: dict[str, Candidate],
    *,
    p: Params,
    bridged: Bridged,
    abbreviation: Abbreviation = lambda _word: None,
) -> None:
    """Add to ``out`` (a candidate per document found) each document's share of every question term it matches
    (saturating per term, idf-weighted): ``Candidate.lexical`` and, per term, ``Candidate.terms``. A term no field
    holds and no correction finds weighs its own idf in the shares, bridged or not: a bridge earns most of it
    back, an unknown term none. A document that matches a term the index holds only through the project's
    abbreviation of it (``abbreviation``; the word in a comment, the abbreviation naming the table) earns the share
    a bridged term would, under the abbreviation's term."""
    weighted: list[tuple[str, float, float, float]] = []  # (indexed term, weight, factor, its own idf)
    unknown: list[str] = []
    bridging = p.bridged_term > 0 and bridges(kinds)
    for term in query.terms:
        fixed = searched_term(lexical, query, term, bridging)
        if fixed is None:
            unknown.append(term)
            continue
        idf = lexical.idf(fixed)
        weighted.append((fixed, idf, 1.0 if fixed == term else p.corrected_term, idf))
    near_terms = bridged(query.term_words, unknown) if unknown and bridging else {}
    for term in unknown:  # the unknown term's weight counts against coverage; a bridge earns most of it back
        near = near_terms.get(term)
        if near is not None and near[1] >= p.bridge_min:
            weighted.append((near[0], lexical.idf(term), p.bridged_term, lexical.idf(near[0])))
        else:
            weighted.append((term, lexical.idf(term), 0.0, 0.0))
    total = sum(weight for _, weight, _, _ in weighted)
    for term, weight, factor, idf in weighted:
        if factor == 0.0:
            continue
        _add_shares(lexical.search([term], kinds, connection, pool), term, weight * factor / total, idf, out, p)
        word = query.term_words.get(term) if bridging and factor == 1.0 else None
        short = abbreviation(word) if word else None
        if short is not None and short != term:  # its documents that lack the term itself
            hits = [h for h in lexical.search([short], kinds, connection, pool) if not _holds(out, h.uid, term)]
            _add_shares(hits, short, weight * p.bridged_term / total, lexical.idf(short), out, p)


def _holds(out: dict[str, Candidate], uid: str, term: str) -> bool:
    cand = out.get(uid)
    return cand is not None and cand.terms.get(term, 0.0) > 0


def _add_shares(
    hits: Iterable[Any], term: str, weight: float, idf: float, out: dict[str, Candidate], p: Params
) -> None:
    """Each hit's share of a term (saturating, ``weight`` its part of the question), on its candidate."""
    norm = idf * p.reference_boost
    for hit in hits:
        cand = out.setdefault(hit.uid, Candidate(hit.uid))
        share = weight * term_score(hit.score, norm, p)
        cand.lexical += share
        cand.terms[term] = cand.terms.get(term, 0.0) + share
