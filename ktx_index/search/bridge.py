"""Bridging a question's words to the project's own: a word no field holds ('movie', 'shoppers') is
matched to the project word that abbreviates it ('payment' → ``pymt``, 'warehouse' → ``whse``: legacy warehouses
name things so, and the model places such fragments nowhere near the word), else to the one nearest to it in
meaning ('film', 'customer'), by the cosine of the two words embedded alone with the index's model.

The project's words are its identifiers' parts, descriptions and comments (``texts.vocabulary_words``),
embedded once by the writer beside the documents' texts. Typo correction (spelling.py) comes first, so a
misspelling is never taken for a synonym, and only words in no field are bridged: a question in the
project's own words ranks exactly as before. Pure functions over a loaded vocabulary, testable alone.
"""

from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from cachetools import LRUCache

from ktx_index.analysis import MIN_ABBREVIATION, abbreviates, stem, telling
from ktx_index.index.store import DocStore
from ktx_index.index.texts import MAX_WORD
from ktx_index.index.vectors import VectorFile
from ktx_index.search.query import Query

#: Neighbours of a word looked at, best first, for one whose term the lexical index still holds.
NEIGHBOURS = 5
#: Question words whose neighbours are remembered per vocabulary, the least recently asked dropped first.
CACHE_WORDS = 4096


@dataclass
class Bridge:
    words: list[str]
    stems: list[str]
    matrix: np.ndarray  # one unit row per word
    _nearest: LRUCache[str, list[tuple[str, float]]] = field(default_factory=lambda: LRUCache(CACHE_WORDS))
    _short: LRUCache[str, tuple[str, ...]] = field(default_factory=lambda: LRUCache(CACHE_WORDS))
    _by_letter: dict[str, str] | None = None  # first letter → the words a stem keeps whole, one per line
    _lock: threading.Lock = field(default_factory=threading.Lock)  # engine threads share one bridge

    def abbreviations(self, word: str) -> tuple[str, ...]:
        """The project words that abbreviate ``word`` (analysis.abbreviates), those keeping most of it first, then
        by spelling: a caller takes the first the index still holds (the vocabulary keeps a renamed column's word).
        Only words their stem keeps at full length (the stem of 'mins' is 'min', which the index holds for
        'minimum' too; that of 'ptwy' is 'ptwi'): callers search the stem. The words made of the word's letters in
        order are found by one regular expression over the words of its first letter (1 ms for 200,000 words,
        where testing each in Python took 10); a run of one letter is one bounded repeat, so it cannot backtrack."""
        word = word.lower()
        if not word.isalpha() or len(word) > MAX_WORD:
            return ()
        with self._lock:
            if word in self._short:
                return self._short[word]
            if self._by_letter is None:
                by_letter: dict[str, list[str]] = {}
                for w, s in zip(self.words, self.stems, strict=True):
                    if len(w) == len(s) and w.isalpha():
                        by_letter.setdefault(w[:1], []).append(w)
                self._by_letter = {letter: "\n".join(ws) for letter, ws in by_letter.items()}
            lines = self._by_letter.get(word[:1], "")
        runs = [(c, len(list(group))) for c, group in itertools.groupby(word[1:])]
        in_order = re.compile("^" + word[0] + "".join(f"{c}{{0,{n}}}" for c, n in runs) + "$", re.MULTILINE)
        found = tuple(sorted({w for w in in_order.findall(lines) if abbreviates(w, word)}, key=lambda w: (-len(w), w)))
        with self._lock:
            self._short[word] = found
        return found

    def nearest(self, word: str, vector: np.ndarray) -> list[tuple[str, float]]:
        """The NEIGHBOURS project terms nearest to a word (``vector`` is its embedding), as (stem, cosine),
        best first; one entry per stem."""
        with self._lock:
            cached = self._nearest.get(word)
        if cached is not None:
            return cached
        out: list[tuple[str, float]] = []
        if len(self.words):
            sims = self.matrix @ vector
            count = min(len(sims), NEIGHBOURS * 3)
            best = np.argpartition(-sims, count - 1)[:count]
            for i in best[np.argsort(-sims[best], kind="stable")]:
                if all(self.stems[i] != s for s, _ in out):
                    out.append((self.stems[i], float(sims[i])))
                if len(out) == NEIGHBOURS:
                    break
        with self._lock:
            self._nearest[word] = out
        return out


EMPTY = Bridge([], [], np.zeros((0, 1), dtype=np.float32))


def load_bridge(store: DocStore, vectors: VectorFile) -> Bridge:
    """The embedded vocabulary words and their vectors (an empty bridge when the file does not match)."""
    rows = store.words.rows()
    if not rows:
        return EMPTY
    try:
        matrix = vectors.read_rows(np.array([row for _, row in rows], dtype=np.int64))
    except ValueError:
        return EMPTY  # the vector lane reports the mismatch; a bridge is only ever an extra
    words = [word for word, _ in rows]
    return Bridge(words, [stem(w) for w in words], matrix)


def bridged_terms(
    bridge: Bridge,
    word_vector: Callable[[str], np.ndarray | None],
    held: Callable[[str], bool],
    words: Mapping[str, str],
    terms: list[str],
) -> dict[str, tuple[str, float]]:
    """Each of ``terms`` (a question's terms no field holds) → the project term that abbreviates its word, with
    cosine 1 (the same word), else the nearest project term that the index holds (``held``) and is not the term
    itself, with the cosine of the two words; ``words`` gives the word each term came from (Query.term_words),
    ``word_vector`` embeds a word (None: no vector, the term stays unbridged)."""
    out: dict[str, tuple[str, float]] = {}
    for term in terms:
        word = words.get(term)
        short = held_abbreviation(bridge, word, held) if word else None
        if short is not None and stem(short) != term:
            out[term] = (stem(short), 1.0)
            continue
        vector = word_vector(word) if word else None
        if vector is None:
            continue
        for near, cos in bridge.nearest(word, vector):
            if near != term and held(near):
                out[term] = (near, cos)
                break
    return out


def telling_abbreviations(bridge: Bridge, q: Query, held: Callable[[str], bool]) -> tuple[tuple[str, str], ...]:
    """(word, project abbreviation) for each of the question's words the index holds no term of (``held``)
    and the project abbreviates tellingly (analysis.telling), in the question's order: what ``Query.dense_text``
    embeds beside each word. The lexical lane bridges these terms, and the less telling ones, the same way."""
    found = []
    for term in q.terms:
        word = q.term_words.get(term)
        if word and not held(term):
            short = held_abbreviation(bridge, word, held)
            if short is not None and telling(short):
                found.append((word, short))
    return tuple(found)


#: A word the index holds is also searched as the project's abbreviation of it only from four letters (``pymt``,
#: ``acct``): three-letter ones (``int``, ``avg``) also name types and other words in projects whose names are
#: words (judged-blind −0.001 with them; docs/benchmarks.md, thirty-eighth session).
MIN_EXPANSION = 4


def held_abbreviation(
    bridge: Bridge, word: str, held: Callable[[str], bool], shortest: int = MIN_ABBREVIATION
) -> str | None:
    """The first of the project's abbreviations of ``word`` (Bridge.abbreviations) of ``shortest`` letters or more
    whose term the index holds (``held``): the vocabulary keeps a renamed column's word."""
    return next((w for w in bridge.abbreviations(word) if len(w) >= shortest and held(stem(w))), None)
