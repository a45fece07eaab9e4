"""Tokenising that understands identifiers. Pure functions, used on both sides of the index.

``customerOrderID`` → ``customer order id customerorderid``; ``orbit_raw.accounts`` →
``orbit raw accounts orbit_raw orbit_raw.accounts``. Every part and the whole identifier
are kept, so an exact identifier is a rare (high-IDF) term while its words still match
prose. Irregular word forms become their lemma first, on both sides (``paid`` → ``pay``,
``children`` → ``child``: a stemmer cannot relate those); lowercasing, ASCII folding and
English stemming then happen in tantivy's analyzer (registered under ANALYZER), which
``stem`` also calls for query terms. Question filler is dropped from queries before stemming.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import NamedTuple

import tantivy
from lemminflect import getAllLemmas

ANALYZER = "ktx"
#: Bump when tokenising changes: the lexical index is rebuilt on mismatch.
ANALYSIS_VERSION = 3

RAW_TOKEN = re.compile(r"[^\W_]+(?:[_.\-$][^\W_]+)*", re.UNICODE)
MAX_TOKEN_CHARS = 60

#: Words a question is made of that name nothing in a project, compared lowercased before stemming.
STOPWORDS = frozenset(
    """a an and are as at be by for from how i in is it of on or the to what when where which who whom whose why
    with does do did doing done show me find give list all our we my per each vs s was were been being has have
    had having am this that these those there their they them its it's his her he she you your us any some
    many much more most less least than then also only just can could would should will shall may might must
    into onto about among between within without through during out up down off over under again further
    please tell name names get got want need know let lets one ones other another such both either neither
    not no nor yes if else so very same own too here
    acronym acronyms abbreviation abbreviations abbreviated faq faqs
    t ll ve re didn doesn don isn aren wasn weren hasn haven hadn couldn wouldn shouldn mustn needn""".split()
)  # the last two lines: words that ask what an answer should be, not what it is about (*what does DMA stand
#   for*, *the FAQ on refunds*), and what a contraction leaves once its apostrophe splits it (didn't → didn, t)
#: Phrases of question filler whose words alone are not (*stand for*: a stand is a thing).
FILLER_PHRASES = re.compile(r"\b(?:stands?|stood) for\b", re.IGNORECASE)
#: Words a question leans on that name nothing a project could hold (indefinite pronouns, adverbs of degree and
#: frequency: *can someone really cancel*, *how often*). They stay question terms, which ranking reads as it was
#: tuned, but the confidence rule does not count them as concepts the project must know (search/signals.py,
#: search/carried.py).
VAGUE_WORDS = frozenset(
    """someone somebody anyone anybody everyone everybody something anything everything nothing nobody
    really actually basically usually often always never ever sometimes quite rather""".split()
)


def build_analyzer() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace())
        .filter(tantivy.Filter.remove_long(MAX_TOKEN_CHARS))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .filter(tantivy.Filter.stemmer("english"))
        .build()
    )


_ANALYZER = build_analyzer()


def _camel_parts(piece: str) -> list[str]:
    """'HTTPServer2Go' → HTTP, Server, 2, Go (Unicode-aware: 'Montréal' stays whole)."""
    if piece.isalpha() and (piece[1:].islower() or piece.isupper()):  # most words: no boundary, no char loop
        return [piece] if piece else []
    parts: list[str] = []
    start = 0
    for i in range(1, len(piece)):
        prev, cur = piece[i - 1], piece[i]
        nxt = piece[i + 1] if i + 1 < len(piece) else ""
        if (
            (prev.isdigit() != cur.isdigit())
            or (prev.islower() and cur.isupper())
            or (prev.isupper() and cur.isupper() and nxt.islower())
        ):
            parts.append(piece[start:i])
            start = i
    parts.append(piece[start:])
    return [p for p in parts if p]


def split_identifier(token: str) -> list[str]:
    """Parts of one identifier: separators, camelCase and letter/digit boundaries."""
    return list(_identifier_parts(token))


@lru_cache(maxsize=1 << 17)
def _identifier_parts(token: str) -> tuple[str, ...]:
    """split_identifier, cached: the same names recur in every field, query and snippet that is analysed."""
    parts: list[str] = []
    for piece in re.split(r"[_.\-$]+", token):
        parts.extend(_camel_parts(piece))
    return tuple(parts)


@lru_cache(maxsize=1 << 16)
def lemma(word: str) -> str:
    """The lemma of an irregular form ('paid' → 'pay', 'children' → 'child'); any other word as it is.

    A noun reading wins over a verb over an adjective; a lemma the stemmer already reaches is not
    needed, so regular forms stay as written and identifiers keep their spelling."""
    if not word.isalpha() or len(word) < 3:
        return word
    lower = word.lower()
    lemmas = getAllLemmas(lower)
    for pos in ("NOUN", "VERB", "ADJ"):
        candidates = lemmas.get(pos)
        if candidates:
            found = candidates[0].lower()
            return found if found != lower and stem(found) != stem(lower) else word
    return word


@lru_cache(maxsize=1 << 16)
def english_word(word: str) -> bool:
    """Whether ``word`` is in lemminflect's English lexicon, in any form ('renters', 'flagged', 'troublesome'):
    unlike made-up words and most jargon ('zxqv', 'kubernetes'), it has a meaning the model can place."""
    return word.isalpha() and bool(getAllLemmas(word.lower()))


def letters_in_order(short: str, word: str) -> bool:
    """Whether ``short`` starts as ``word`` does and its other letters follow in ``word`` in order: how a code is
    made from a word ('VT' → Vermont)."""
    return bool(short) and short[:1] == word[:1] and _within(short[1:], word[1:])


def _within(letters: str, text: str) -> bool:
    """Whether the letters occur in the text in order, others between them."""
    rest = iter(text)
    return all(c in rest for c in letters)


#: A project word abbreviates a question word only from this many letters ('dt', 'cd' and 'nm' stand for too many).
MIN_ABBREVIATION = 3


#: What an abbreviation drops first (``y`` it keeps: ``pymt``).
VOWELS = frozenset("aeiou")


def abbreviates(short: str, word: str) -> bool:
    """Whether a project word abbreviates a question word, as warehouses name things: the word's start, then
    consonants of the rest in order, skipping at most one other consonant, and perhaps its last letter ('cust' →
    customer, 'pymt' → payment, 'rdg' → reading, 'whse' → warehouse, 'divd' → dividend).

    From three letters and at least a third of the word, two letters shorter than it at least ('lat' is no
    'last'); of an English word or two run together (a typo is corrected, not abbreviated) and not itself one
    ('tot', 'port' and 'snap' mean something else); keeping the consonants the word opens with ('crs' is no
    'chairs'). One that skips to a vowel (*lat* in 'located') or over more consonants (*ast* in 'against', *pol*
    in 'portfolio') is most often another word's abbreviation. One letter shorter, it drops one vowel inside the
    word, not in its last two letters ('hydrnt' → hydrant, 'plnt' → plant; 'stats' is statistics as often as
    status, 'stat' status as often as state)."""
    if len(short) == len(word) - 1 and len(short) > MIN_ABBREVIATION and _drops_a_vowel(short, word):
        return (english_word(word) or english_compound(word)) and not english_word(short)  # 'hydrnt', 'plnt'
    if not (MIN_ABBREVIATION <= len(short) <= len(word) - 2 and len(word) <= 3 * len(short)) or short[0] != word[0]:
        return False
    if len(short) == MIN_ABBREVIATION and word.startswith(short):  # 'min' starts minimum and minutes alike
        return False
    opening = next((i for i, c in enumerate(word) if c in VOWELS or c == "y"), len(word))
    if not short.startswith(word[:opening]):  # the consonants a word opens with stay together
        return False
    for start in range(len(short), 0, -1):  # the longest shared start first
        if short[:start] != word[:start]:
            continue
        rest, body = short[start:], word[start:]
        if rest[-1:] in VOWELS and rest[-1:] == word[-1] and len(short) > MIN_ABBREVIATION:  # its last ('whse')
            rest, body = rest[:-1], body[:-1]
        if not VOWELS.intersection(rest) and _skipped_consonants(rest, body) <= 1:
            return (english_word(word) or english_compound(word)) and not english_word(short)
    return False


def _drops_a_vowel(short: str, word: str) -> bool:
    """Whether ``short`` is ``word`` without one of its vowels, neither its first letter nor one of its last two."""
    return any(word[i] in VOWELS and word[:i] + word[i + 1 :] == short for i in range(1, len(word) - 2))


def english_compound(word: str) -> bool:
    """Whether a word is two English words of three letters or more run together ('putaway', 'stockout',
    'timesheet'), which the lexicon does not list: a word all the same, where most typos ('languague') are not."""
    return any(english_word(word[:i]) and english_word(word[i:]) for i in range(3, len(word) - 2))


#: An abbreviation is embedded beside its word only when it keeps this many of its consonants (``pymt``, ``rdg``):
#: the model reads shorter ones (``amt``, ``abr``) as other words, and on bird-dev they cost answers the lexical
#: bridge alone does not (docs/benchmarks.md, thirty-eighth session).
TELLING_CONSONANTS = 3


def telling(short: str) -> bool:
    """Whether the model reads an abbreviation as its word (``TELLING_CONSONANTS``)."""
    return sum(c not in VOWELS for c in short) >= TELLING_CONSONANTS


def _skipped_consonants(letters: str, text: str) -> int:
    """How many consonants of ``text`` are passed over to find ``letters`` in it in order (each at its first
    place); more than any abbreviation skips when they are not all there."""
    skipped, at = 0, 0
    for c in letters:
        found = text.find(c, at)
        if found < 0:
            return len(text) + 1
        skipped += sum(1 for x in text[at:found] if x not in VOWELS)
        at = found + 1
    return skipped


#: Word endings British and American English spell differently, each pair in both directions (centre/center,
#: colour/color, organise/organize, analyse/analyze, licence/license, catalogue/catalog, programme/program);
#: ``-our`` only from six letters on (four, hour and tour are words of their own).
REGIONAL_ENDINGS = (
    ("tre", "ter"), ("tres", "ters"), ("our", "or"), ("ours", "ors"), ("ise", "ize"), ("ised", "ized"),
    ("ises", "izes"), ("ising", "izing"), ("isation", "ization"), ("isations", "izations"), ("yse", "yze"),
    ("ysed", "yzed"), ("ysing", "yzing"), ("ence", "ense"), ("ogue", "og"), ("ogues", "ogs"), ("mme", "m"),
    ("mmes", "ms"),
)  # fmt: skip


def regional_spellings(word: str) -> list[str]:
    """The word as the other side of the Atlantic spells it (``centre`` → center, ``color`` → colour), if its
    ending is one they spell differently: the same word, which a stemmer does not relate."""
    lower = word.lower()
    out = []
    for british, american in REGIONAL_ENDINGS:
        for ending, other in ((british, american), (american, british)):
            if lower.endswith(ending) and len(lower) > len(ending) + 1 and (ending != "our" or len(lower) >= 6):
                out.append(lower[: -len(ending)] + other)
    return list(dict.fromkeys(out))


def expand(text: str) -> list[str]:
    """Raw tokens of a text with identifier parts (irregular forms lemmatised) and wholes, in order.

    A whole is written with underscores where it had hyphens, so a hyphenated word meets the identifier it names
    (*no-show* and ``no_show``): its parts alone may all be filler, dropped from a question (*no*, *show*)."""
    out: list[str] = []
    for match in RAW_TOKEN.finditer(text):
        token = match.group(0)
        parts = _identifier_parts(token)
        out.extend(lemma(p) for p in parts)
        if len(parts) > 1:
            whole = token.replace("-", "_")
            out.append(whole)
            if "." in whole:  # dotted names: each segment that is itself compound
                out.extend(seg for seg in whole.split(".") if len(_identifier_parts(seg)) > 1)
    return out


def index_text(text: str) -> str:
    """What is handed to tantivy for one field: whitespace-joined expanded tokens."""
    return " ".join(expand(text))


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    analyzed = _ANALYZER.analyze(token)
    return analyzed[0] if analyzed else ""


def analyze(text: str) -> list[str]:
    """Index terms of a text exactly as tantivy stores them (order kept, duplicates kept)."""
    return [s for s in (stem(t) for t in expand(text)) if s]


@lru_cache(maxsize=16384)
def term_set(text: str) -> frozenset[str]:
    """Distinct index terms of a text, cached: result explanation analyzes the same fields again and again."""
    return frozenset(analyze(text))


def fold(text: str) -> str:
    """Case- and accent-insensitive form: 'Montréal' → 'montreal'."""
    if text.isascii():  # the common case, and hot: every identifier key goes through here
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def squash(text: str) -> str:
    """Folded with every separator removed: 'Financial-Services' → 'financialservices'."""
    return re.sub(r"[\W_]+", "", fold(text))


def query_terms(query: str) -> list[str]:
    """Distinct analyzed terms of a query, question filler dropped (before stemming) unless nothing else is left."""
    return question_terms(query).terms


class QuestionTerms(NamedTuple):
    terms: list[str]  # query_terms
    filler_only: bool  # the query held nothing but filler (its terms are then the filler itself)
    in_english: bool  # one of its words besides filler, or a part of an identifier, is English (english_word)


def question_terms(query: str) -> QuestionTerms:
    """What a question's words are, from one pass over its tokens."""
    tokens = expand(FILLER_PHRASES.sub(" ", query))
    content = [t for t in tokens if t.lower() not in STOPWORDS]
    terms = list(dict.fromkeys(s for s in (stem(t) for t in content or tokens) if s))
    return QuestionTerms(terms, not content, any(english_word(t) for t in content))


def identifier_key(text: str) -> str:
    """Normal form for exact-identifier matching: 'Orbit_Raw.Accounts ' → 'orbitrawaccounts'."""
    return squash(text)


@lru_cache(maxsize=1 << 18)
def identifier_part_key(part: str) -> str:
    """identifier_key of one dotted part, cached: schema and table names repeat across every column."""
    return squash(part)


#: English words ending in "id" that name a column's content, not a key (is_key_name).
_NOT_KEYS = frozenset(
    {"valid", "invalid", "solid", "fluid", "rapid", "humid", "hybrid", "liquid", "squid", "android", "vivid",
     "orchid", "pyramid", "candid", "splendid", "prepaid", "unpaid", "postpaid", "overpaid", "underpaid", "mermaid",
      "paid", "void", "avoid", "said", "laid", "maid", "raid", "braid", "afraid", "acid", "lucid", "timid", "stupid",
     "covid", "rigid", "tepid", "morbid", "placid", "rancid", "sordid", "lurid", "druid", "fetid", "torrid"}
)  # fmt: skip
#: Question words that ask for identifiers (also as the last part of an identifier, ``customer_id``); "key" alone is
#: left out, being an adjective as often ("the key drivers of churn").
KEY_WORDS = frozenset({"id", "ids", "identifier", "identifiers", "uuid", "guid", "pk", "fk"})
_NAMES_KEYS = re.compile(r"\b(primary|foreign|join|surrogate)\s+keys?\b", re.IGNORECASE)


def asks_for_keys(text: str) -> bool:
    """Whether a question asks for identifiers: an id word, alone or ending an identifier (``customer_id``,
    ``orderID``), or a primary/foreign/join key."""
    if _NAMES_KEYS.search(text):
        return True
    for match in RAW_TOKEN.finditer(text):
        parts = split_identifier(match.group(0))
        if parts and parts[-1].casefold() in KEY_WORDS:
            return True
    return False


@lru_cache(maxsize=1 << 16)
def is_key_name(column: str) -> bool:
    """Whether a column's name says it holds a key (``id``, ``artist_id``, ``customerID``, ``custid``, ``order_key``,
    ``uuid``) rather than a fact about the row: its last word is ``id``, ``key``, ``uuid``, ``guid``, ``pk`` or
    ``fk``, or ends in ``id`` after a stem of three letters or more that is no English word ending so (``paid``,
    ``valid``, ``covid``, ``-oid`` words such as ``thyroid``)."""
    parts = split_identifier(column.replace(" ", "_"))
    last = (parts[-1] if parts else column).casefold()
    if last in ("id", "key", "uuid", "guid", "pk", "fk"):
        return True
    return last.endswith("id") and not last.endswith("oid") and len(last) >= 5 and last not in _NOT_KEYS


#: dbt's layer prefixes: stg_orders, int_orders, fct_orders are one table's copies (layer_stem).
LAYER_PREFIXES = frozenset({"raw", "src", "base", "stg", "int", "fct", "fact", "dim", "mart"})


def layer_stem(name: str) -> str:
    """The key of a table's or source's name without its schema and dbt layer prefixes (raw.customers,
    analytics.dim_customers and stg_customers → customers): the same data, copied layer to layer."""
    parts = name.rsplit(".", 1)[-1].casefold().split("_")
    while len(parts) > 1 and parts[0] in LAYER_PREFIXES:
        parts = parts[1:]
    return identifier_key("_".join(parts))


def member_name(uid: str) -> str:
    """A column's, dimension's or measure's own name from its uid ('column:conn:schema.table.name' → name)."""
    return uid.rsplit(".", 1)[-1]


@lru_cache(maxsize=1 << 17)
def uid_stem(uid: str) -> str:
    """A table's or source's layer stem by its uid ('kind:connection:name'), cached: a snapshot derives them
    for every table, and a delta again for the tables it changes."""
    return layer_stem(uid.split(":", 2)[2])
