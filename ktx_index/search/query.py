"""A question analysed once: every step of ranking reads what it needs from here.

The lanes, the structural steps and the answerability rule each used to analyse the question's text again;
``Query.parse`` does it once, and the engine, the lifts and the signals take the ``Query``. What depends on the
index (a term's typo correction, the project word a term is bridged to) stays with the lexical lane
(lexical_lane.py), but for the project's abbreviations of the question's words (``abbreviations``), which the
engine adds once (Engine.abbreviated) so that the dense lane embeds them beside the words.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import NamedTuple

from ktx_index.analysis import (
    FILLER_PHRASES,
    RAW_TOKEN,
    STOPWORDS,
    VAGUE_WORDS,
    analyze,
    asks_for_keys,
    expand,
    identifier_key,
    question_terms,
    stem,
)
from ktx_index.search.shapes import Value, question_values

#: A question that groups by time (*by month*, *monthly*, *over time*, *trend*) needs a date column to group by.
TIME_GROUPING = re.compile(
    r"\b(?:(?:by|per|each|every)\s+(?:day|week|month|quarter|year|hour|date)s?|daily|weekly|monthly|quarterly|"
    r"yearly|annually|hourly|over\s+time|trends?)\b",
    re.IGNORECASE,
)
QUOTED = re.compile(r"[\"“‘']([^\"”’']+)[\"”’']")


class ContentWord(NamedTuple):
    """A word of the question that names something, every spelling of it (*volunteer*, *volunteers*) and the
    analysed terms it yields (question_terms, filler dropped)."""

    spellings: tuple[str, ...]  # as the question writes it, in order of first appearance
    terms: tuple[str, ...]

    @property
    def word(self) -> str:
        return self.spellings[0]


#: A question is read up to this many characters: far beyond any question an agent asks, and beyond what the model
#: reads (256 tokens); a 100k-character one took 3 s, one search per distinct word.
MAX_QUESTION_CHARS = 2_000


@dataclass(frozen=True)
class Query:
    text: str
    #: Distinct analysed terms, question filler dropped (analysis.query_terms): what the lexical lane matches.
    terms: tuple[str, ...]
    #: Terms of words that look like data, not concepts (value_like): never counted as missing vocabulary.
    data_words: frozenset[str]
    #: Identifier keys of the question's phrases (named_keys): the tables it names by their own nouns.
    named: frozenset[str]
    #: Values it names (shapes.question_values): the columns that could hold them are lifted.
    values: tuple[Value, ...]
    #: The whole question as an identifier key: an exact name or id puts the item in the exact tier.
    identifier: str
    #: It asks for identifiers (analysis.asks_for_keys): key columns then keep their full weight (Params.key_member).
    asks_keys: bool = False
    #: It groups by time (TIME_GROUPING): a date column of the tables it is about is lifted as for a date it names.
    by_time: bool = False
    #: Nothing but question filler ('the of and') or single characters (``' OR 1=1 --``, a stray accent):
    #: ``terms`` then holds them, and what they match they match by chance (signals.assess never answers it
    #: confidently).
    filler_only: bool = False
    #: One of its words besides filler, or a part of an identifier it names (``monthly_revenue``), is English
    #: (analysis.english_word): its cosine then measures a meaning, and it is held to the lower of the project's
    #: two noise levels (search/calibration.py).
    in_english: bool = False
    #: Its words the project lacks but abbreviates (lowercased word, the project's abbreviation: *payments*,
    #: ``pymt``), found by the engine (Engine.abbreviated): the model embeds each beside its word (``dense_text``).
    abbreviations: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> Query:
        text = text[:MAX_QUESTION_CHARS]
        words = question_terms(text)
        return cls(
            text=text,
            terms=tuple(words.terms),
            data_words=frozenset(value_like(text)),
            named=frozenset(named_keys(text)),
            values=tuple(question_values(text)),
            identifier=identifier_key(text),
            asks_keys=asks_for_keys(text),
            filler_only=words.filler_only or all(len(term) < 2 for term in words.terms),
            by_time=bool(TIME_GROUPING.search(text)),
            in_english=words.in_english,
        )

    @classmethod
    def of(cls, query: str | Query) -> Query:
        return query if isinstance(query, Query) else cls.parse(query)

    @functools.cached_property
    def dense_text(self) -> str:
        """What the dense lane embeds: the question with each abbreviated word followed by the project's
        abbreviation of it ('payments pymt'), so it meets a column named ``PYMT_AMT`` in meaning too; the text
        itself when there is none."""
        return with_abbreviations(self.text, dict(self.abbreviations))

    @functools.cached_property
    def term_words(self) -> dict[str, str]:
        """Each analysed term → the word it came from (question_words): what a term is corrected or bridged as."""
        return question_words(self.text)

    @functools.cached_property
    def vague(self) -> frozenset[str]:
        """Its terms from words that name nothing a project could hold (VAGUE_WORDS: *really*, *someone*): terms
        ranking reads, concepts the confidence rule does not."""
        return frozenset(t for t in self.terms if self.term_words.get(t) in VAGUE_WORDS)

    @functools.cached_property
    def words(self) -> tuple[ContentWord, ...]:
        """Its words that name something, one per set of terms, in order (what the confidence rule's carried check
        may leave out, search/carried.py); a word whose terms are all filler (*gave* → give) or vague is none.
        Worked out on first use: only discover_data asks."""
        kept = set(self.terms) - self.vague
        spellings: dict[tuple[str, ...], list[str]] = {}
        for word in content_words(self.text):
            terms = tuple(t for t in question_terms(word).terms if t in kept)
            if terms:
                spellings.setdefault(terms, []).append(word)
        return tuple(ContentWord(tuple(words), terms) for terms, words in spellings.items())


def with_abbreviations(text: str, abbreviations: dict[str, str]) -> str:
    """``text`` with each word of ``abbreviations`` (lowercased) followed by its abbreviation."""
    if not abbreviations:
        return text

    def beside(match: re.Match[str]) -> str:
        short = abbreviations.get(match.group(0).lower())
        return match.group(0) if short is None else f"{match.group(0)} {short}"

    return RAW_TOKEN.sub(beside, text)


def question_words(text: str) -> dict[str, str]:
    """Each analysed term of a question → the word it came from, lowercased (the first, when several)."""
    out: dict[str, str] = {}
    for token in expand(text):
        word = token.lower()
        if word not in STOPWORDS and word.isalpha():
            out.setdefault(stem(token), word)
    return out


def content_words(text: str) -> list[str]:
    """The question's words that name something (a letter in them, not filler), each once (first spelling)."""
    words: dict[str, str] = {}
    for match in RAW_TOKEN.finditer(FILLER_PHRASES.sub(" ", text)):
        word = match.group(0)
        if word.casefold() not in STOPWORDS and any(ch.isalpha() for ch in word):
            words.setdefault(word.casefold(), word)
    return list(words.values())


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


def named_keys(query: str, longest: int = 3) -> set[str]:
    """Identifier keys of the question's phrases of up to ``longest`` words, singular and plural ('gas stations'
    → gasstations, gasstation): what a table named by the question's own nouns answers to."""
    words = [m.group(0) for m in RAW_TOKEN.finditer(query)]
    keys: set[str] = set()
    for n in range(1, longest + 1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if gram[0].lower() in STOPWORDS or gram[-1].lower() in STOPWORDS:
                continue
            key = identifier_key("".join(gram))
            if not key or key.isdigit():
                continue
            keys.add(key)
            keys.add(key[:-1] if key.endswith("s") else key + "s")
            if key.endswith("ies"):
                keys.add(key[:-3] + "y")
    return keys
