"""Value shapes: which columns could hold a value a question names, when the value itself is not stored.

A profile keeps five or ten sample values per column, so 'Ahmed Samir Farag' or 'TR004' is almost
never among them; but the samples show what the column holds: names ('Danilo', 'Joao Pedro'),
codes ('TR000_1'), dates, times. A question naming a value of one shape points at a column of
that shape in the tables it is about (search/lifts.py lifts the best one).
Pure functions, tested alone.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

from ktx_index.analysis import STOPWORDS, analyze, fold, split_identifier

#: Shapes a question's values are matched on (numbers are in every table: they say nothing).
SHAPES = ("name", "code", "date", "time")
#: Share of a column's samples that must have one shape for the column to have it.
MAJORITY = 0.6
#: Among the columns that could hold a value, one named for the word that introduces it ('the set Coldsnap':
#: sets.name) or for its shape ('name', 'code', 'date') fits that much better.
CUE_FIT = 0.5
NAMED_FIT = 0.25
SHAPE_WORDS = {"name": {"name", "titl"}, "code": {"code", "id"}, "date": {"date", "day"}, "time": {"time"}}

DATE = re.compile(
    r"^(\d{4}[-/.]\d{1,2}([-/.]\d{1,2})?|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})([ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?)?$"
)
TIME = re.compile(r"^\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?$")
NUMBER = re.compile(r"^[-+]?[\d,]*\.?\d+%?$")
CODE = re.compile(r"^(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[\w-]+$")  # letters and digits, no spaces: TR004_8_9, A12
#: a quoted span (double quotes, or single quotes not inside a word: "Ajax's" is no quote) or a word
TOKEN = re.compile(r"\"([^\"]+)\"|“([^”]+)”|(?<!\w)['‘]([^'’]+)['’](?!\w)|[^\W\d_][\w'’.&-]*|\d[\w:./-]*", re.UNICODE)
SENTENCE_END = re.compile(r"[.!?]\s*$")
DATE_TYPE = re.compile(r"date|timestamp")
TIME_TYPE = re.compile(r"\btime\b")
NUMERIC_TYPE = re.compile(r"int|num|dec|float|double|real|bool")
#: the last word of a column name that says it holds names, when no samples show it
NAME_PARTS = {"name", "title"}


def value_shape(value: str) -> str | None:
    """The shape of one stored or asked-for value, or None when it has none that helps."""
    text = value.strip()
    if not text:
        return None
    if DATE.match(text):
        return "date"
    if TIME.match(text):
        return "time"
    if NUMBER.match(text):
        return "number"
    if CODE.match(text):
        return "code"
    if text[0].isupper() and any(c.islower() for c in text):
        return "name"
    if text.isupper() and text.isalpha() and len(text) <= 5:
        return "code"
    return None


def column_shape(samples: list[str], types: tuple[str, ...] = (), name: str = "") -> str | None:
    """A column's shape: the one most of its sample values share (MAJORITY), if it is a matched one;
    without samples, a date or time type says it, and a text column named for names ('Customer Name',
    'title') holds names."""
    shapes = Counter(value_shape(s) for s in samples if s.strip())
    if not shapes:
        declared = " ".join(types).lower()
        if DATE_TYPE.search(declared):
            return "date"
        if TIME_TYPE.search(declared):
            return "time"
        parts = split_identifier(name.replace(" ", "_"))
        named = bool(parts) and parts[-1].lower() in NAME_PARTS
        return "name" if named and not NUMERIC_TYPE.search(declared) else None
    shape, count = shapes.most_common(1)[0]
    return shape if shape in SHAPES and count >= MAJORITY * sum(shapes.values()) else None


def closed_values(samples: list[str], distinct: object) -> frozenset[str] | None:
    """Every value a column holds, folded, when its samples are all of them (a question naming another
    value cannot mean it); None when they are not known to be."""
    if isinstance(distinct, (int, float)) and 0 < distinct <= len(samples):
        return frozenset(fold(s.strip()) for s in samples)
    return None


class Value(NamedTuple):
    shape: str
    text: str  # folded
    cue: str | None  # the index term of the content word before it ('the set Coldsnap' → set), if any


def fit(value: Value, column_terms: frozenset[str], table_terms: frozenset[str]) -> float:
    """How much a column of the value's shape looks meant for it, by name: 1, or more when it or its table is
    named for the value's cue, or it is named for the shape."""
    cued = value.cue is not None and (value.cue in column_terms or value.cue in table_terms)
    named = not SHAPE_WORDS[value.shape].isdisjoint(column_terms)
    return (1 + CUE_FIT * cued) * (1 + NAMED_FIT * named)


#: Capitalised words that name a time, not a person or a place (*hired in June 2016*): no name value.
CALENDAR_WORDS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday".split()
)


def question_values(query: str) -> list[Value]:
    """The values a question names: quoted text, dates, times, codes, and runs of capitalised words that do
    not start a sentence ('did Angela Sanders attend', 'Ajax's'), each with the word that introduces it."""
    found: list[Value] = []
    name: list[str] = []
    cue: str | None = None
    name_cue: str | None = None
    for match in TOKEN.finditer(query):
        quoted = next((g for g in match.groups() if g), None)
        token = (quoted or match.group(0)).strip().rstrip(".'’")
        before = query[: match.start()]
        starts_sentence = not before.strip() or bool(SENTENCE_END.search(before)) or before.rstrip().endswith(",")
        shape = value_shape(token)
        if shape == "name" and token.lower() in CALENDAR_WORDS:
            shape = None
        if quoted is None and shape == "name" and token.lower() not in STOPWORDS and (name or not starts_sentence):
            name_cue = cue if not name else name_cue
            name.append(token)
            continue
        if name:
            found.append(Value("name", fold(" ".join(name)), name_cue))
            name = []
        unquoted_value = shape in ("code", "date", "time") and not (shape == "code" and token.isalpha())
        if shape in SHAPES and (quoted is not None or unquoted_value):
            found.append(Value(shape, fold(token), cue))
        elif token.lower() not in STOPWORDS and shape is None:
            terms = [t for t in analyze(token) if t.isalnum()]  # 'long-shot' → shot
            cue = terms[-1] if terms else cue
    if name:
        found.append(Value("name", fold(" ".join(name)), name_cue))
    return found
