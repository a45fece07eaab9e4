"""dictionary_search: which column holds a business value, over profile samples and dbt enum values.

Matches are tiered exact > folded (case, accents) > token (words or separators differ,
the value is part of a longer one, or a shorter one the question's words name: ``PELL`` for
*federal pell grant*) > fuzzy (typos, by Damerau-Levenshtein on the separator-free form, its
digits kept), so ``finanical services`` finds ``financial_services`` > abbreviation (a code
made of the words' letters).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import accumulate

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from indexers.models import TableRef, display_name
from ktx_index.analysis import english_word, fold, letters_in_order, split_identifier, squash
from ktx_index.errors import InvalidInput, echoed, sent_back
from ktx_index.search.engine import Engine
from ktx_index.search.spelling import edit_budget
from ktx_index.tools.results import (
    MAX_VALUES,
    Coverage,
    DictionaryMatch,
    DictionaryMiss,
    DictionarySearchResult,
    Searched,
    TableRefOut,
    ValueResult,
)

MAX_MATCHES = 50
TIER_ORDER = {"exact": 0, "folded": 1, "token": 2, "fuzzy": 3, "abbreviation": 4}
#: Stored values that look like codes (upper-case letters, this long) can be matched by the words they abbreviate.
CODE_LENGTHS = range(2, 7)
CONNECTIVES = frozenset({"and", "of", "the", "&"})
#: Everything but digits (removed to compare two values' digits): a fuzzy match keeps a value's digits as they are.
NON_DIGITS = re.compile(r"\D")
#: Edits a value (separators removed) may be from a stored one: none below 4 characters, 1 from 4, 2 from 6,
#: 3 from 13; more than a query term gets, since a whole value is longer and rarely one edit from another.
VALUE_EDITS = (4, 6, 13)


def abbreviates(code: str, words: list[str]) -> bool:
    """Whether a code is made of the words' leading letters, in order, every word giving at least its first
    ('Asia Pacific' → APAC or apac, 'Europe, Middle East and Africa' → EMEA, 'Canadian dollars' → CAD); a
    single word longer than the code, and of four letters at least, may also give its first letter and later ones
    to an upper-case code ('Vermont' → VT, 'june' → JUN; not 'gbp' → GB); a code of
    three letters or more that is an English word abbreviates only a word it starts ('Sunday' → SUN, but 'SUN' and
    'SEED' are no abbreviations of 'suspended')."""
    upper = code.isupper()
    code = code.lower()
    if len(words) == 1:
        if not upper:  # 'vet' is no abbreviation of 'Vermont'; 'VT' is
            return False
        if len(code) >= 3 and english_word(code) and not words[0].startswith(code):
            return False
        word = words[0]  # a two-letter code of a word of four letters at least: 'gbp' and 'usd' are no GB or US
        return word.isalpha() and len(word) > max(len(code), 3) and letters_in_order(code, word)

    def fits(i: int, j: int) -> bool:
        if j == len(words):
            return i == len(code)
        word = words[j]
        return any(
            code[i : i + n] == word[:n] and fits(i + n, j + 1) for n in range(1, min(len(word), len(code) - i) + 1)
        )

    return len(words) <= len(code) and fits(0, 0)


def _named(words: frozenset[str]) -> bool:
    """Whether a value of these words is named when a question holds them all (DictionaryIndex._named_within)."""
    if len(words) > 1:
        return True
    (word,) = words
    return len(word) >= 3 and word.isalpha() and not english_word(word)


def abbreviation_score(code: str, words: list[str]) -> float:
    """How telling an abbreviation match is: for one made of several words' initials, 0.5 from four letters
    ('APAC', 'EMEA') and less below; for a code of one word, from 0.3 up by how much of the word it keeps, so
    'PROB' comes before 'PR' for *probation* and 'WAIT' before the state code 'WI' for *waitlisted* (every such
    code matched alike before)."""
    if len(words) > 1:  # two letters say less than four ('CR' for *City of Riverton*, 'APAC')
        return 0.4 + 0.1 * min(1.0, (len(code) - 1) / 3)
    return 0.3 + 0.2 * min(1.0, len(code) / max(1, len(words[0])))


@dataclass(frozen=True)
class Entry:
    connection: str
    value: str
    folded: str
    squashed: str
    words: frozenset[str]
    source_name: str
    column: str
    table_ref: dict | None
    cardinality: int | None
    origin: str


class DictionaryIndex:
    def __init__(self, entries: list[Entry], snapshots: dict[str, dict]) -> None:
        self.entries = entries
        self.snapshots = snapshots
        self.squashed = [e.squashed for e in entries]
        # Lookups instead of a pass over every entry per value (44k entries at 100k columns).
        self.by_value: dict[str, list[int]] = {}
        self.by_folded: dict[str, list[int]] = {}
        self.by_squashed: dict[str, list[int]] = {}
        self.by_word: dict[str, set[int]] = {}
        self.columns: dict[str, set[tuple[str, str]]] = {}
        self.codes: dict[str, list[int]] = {}  # first letter → code-like values ('APAC', 'CAD', 'QC')
        for i, e in enumerate(entries):
            if e.value.isalpha() and (e.value.isupper() or e.value.islower()) and len(e.value) in CODE_LENGTHS:
                self.codes.setdefault(e.folded[0], []).append(i)
            self.by_value.setdefault(e.value, []).append(i)
            self.by_folded.setdefault(e.folded, []).append(i)
            self.by_squashed.setdefault(e.squashed, []).append(i)
            for word in e.words:
                self.by_word.setdefault(word, set()).add(i)
            self.columns.setdefault(e.connection, set()).add((e.source_name, e.column))
        # Substring search runs in C over one joined string; offsets map a hit back to its entry.
        self.joined = "\x00".join(self.squashed)
        self.offsets = list(accumulate((len(sq) + 1 for sq in self.squashed[:-1]), initial=0))

    @classmethod
    def load(cls, engine: Engine) -> DictionaryIndex:
        entries = []
        for _uid, conn, fields in engine.store.docs.fields("dictionary_value"):
            value, column, table_ref = fields["id"], fields.get("column_name"), fields.get("table_ref")
            attrs = fields.get("attrs") or {}
            cardinality = attrs.get("cardinality")
            entries.append(
                Entry(
                    connection=conn,
                    value=value,
                    folded=fold(value).strip(),
                    squashed=squash(value),
                    words=frozenset(value_words(fold(value))),
                    source_name=attrs.get("sourceName") or "",
                    column=column or "",
                    table_ref=TableRef.model_validate(table_ref).model_dump() if table_ref else None,
                    cardinality=int(cardinality) if isinstance(cardinality, (int, float)) else None,
                    origin=attrs.get("origin", "profile"),
                )
            )
        return cls(entries, engine.store.docs.snapshot_attrs())

    def match(self, value: str, connections: set[str]) -> list[tuple[Entry, str, float]]:
        folded = fold(value).strip()
        squashed = squash(value)
        words = set(value_words(folded))
        found: dict[int, tuple[str, float]] = {}

        def add(ids: Iterable[int], tier: str, score: float) -> None:
            for i in ids:
                if i not in found and self.entries[i].connection in connections:
                    found[i] = (tier, score)

        add(self.by_value.get(value, ()), "exact", 1.0)
        add(self.by_folded.get(folded, ()), "folded", 0.95)
        if squashed:
            add(self.by_squashed.get(squashed, ()), "token", 0.85)
            if words:  # every query word is a word of the value
                postings = sorted((self.by_word.get(w, set()) for w in words), key=len)
                add(sorted(set.intersection(*postings)), "token", 0.85)
        if len(words) > 1:
            add(self._named_within(words), "token", 0.65)
        if len(squashed) >= 3:  # part of a longer value from one of its words' start, not letters inside a word
            pos = self.joined.find(squashed)
            while pos != -1:
                i = bisect_right(self.offsets, pos) - 1
                if within_words(self.entries[i], pos - self.offsets[i], len(squashed)):
                    add((i,), "token", 0.7 + 0.1 * len(squashed) / max(1, len(self.squashed[i])))
                pos = self.joined.find(squashed, pos + 1)
        if budget := fuzzy_budget(squashed, words):
            digits = NON_DIGITS.sub("", squashed)
            for choice, distance, i in process.extract(
                squashed, self.squashed, scorer=DamerauLevenshtein.distance, score_cutoff=budget, limit=200
            ):
                if NON_DIGITS.sub("", choice) == digits:  # a typo is in the letters: 'Fall 2025' is no 'Fall 2026'
                    add((i,), "fuzzy", 0.6 - 0.1 * distance / budget)
        parts = [w for w in re.split(r"[\s,/\-]+", folded) if w and w not in CONNECTIVES]
        if parts and not (len(parts) == 1 and len(parts[0]) in CODE_LENGTHS and value.isupper()):
            for i in self.codes.get(parts[0][0], ()):
                if abbreviates(self.entries[i].value, parts):
                    add((i,), "abbreviation", abbreviation_score(self.entries[i].value, parts))
        ranked = [(self.entries[i], tier, score) for i, (tier, score) in found.items()]
        ranked.sort(key=lambda m: (TIER_ORDER[m[1]], -m[2], m[0].connection, m[0].source_name, m[0].column, m[0].value))
        return one_per_column(ranked)[:MAX_MATCHES]

    def _named_within(self, words: set[str]) -> list[int]:
        """Shorter values made of the question's words: of two words or more ('Maple Ridge' in *Maple Ridge
        Apartments*), or one of three letters or more that is no English word ('PELL' in *federal pell grant*;
        not 'Grant', 'W' in *412 W Pecan St*, or '10' in *2025-10-31*)."""
        held = {i for w in words for i in self.by_word.get(w, ())}
        return sorted(i for i in held if self.entries[i].words <= words and _named(self.entries[i].words))


def one_per_column(ranked: list[tuple[Entry, str, float]]) -> list[tuple[Entry, str, float]]:
    """A value one physical column holds, once, at its best match: the profile's sample and a source's
    ``enum_values`` over the same table (a hand-written source beside the scan's entry) listed it twice (an
    outside pass). A source written as SQL has no table: its values stay its own."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for entry, tier, score in ranked:
        ref = entry.table_ref
        if ref is not None:
            table = display_name(ref.get("catalog"), ref.get("db"), ref["name"]).casefold()
            key = (entry.connection, table, (entry.column or "").casefold(), entry.value)
            if key in seen:
                continue
            seen.add(key)
        out.append((entry, tier, score))
    return out


def fuzzy_budget(squashed: str, words: set[str]) -> int:
    """Edits a value may be from a stored one (VALUE_EDITS), but one at most for a value of English words spelt
    right: two edits turn a word into another ('denied' → 'Daniel', 'stale' → 'state'), one mostly spells it
    otherwise ('cancelled' → 'CANCELED', 'colour')."""
    budget = edit_budget(len(squashed), VALUE_EDITS)
    if words and all(english_word(w) for w in words):
        return min(budget, 1)
    return budget


def within_words(entry: Entry, start: int, length: int) -> bool:
    """Whether the ``length`` characters of the entry's squashed value from ``start`` begin where a word, a part of
    a camelCase one or a run of digits begins (``9001`` in ``ISO-9001``, ``York`` in ``NewYorkCity``, ``2019`` in
    ``FY2019``; not *late* in ``chocolates``), and, ending in a digit, end where the digits do (not ``2019`` in
    ``20190``)."""
    text, end = entry.squashed, start + length
    starts, at = {0}, 0
    for word in VALUE_WORD.findall(entry.value):
        for part in split_identifier(word):
            at += len(squash(part))
            starts.add(at)
    begins = start in starts or text[start].isdigit() != text[start - 1].isdigit()
    return begins and not (end < len(text) and text[end].isdigit() and text[end - 1].isdigit())


def value_words(folded: str) -> list[str]:
    """A folded value's words, split at anything but letters and digits (``SLE, SjS``: sle, sjs)."""
    return VALUE_WORD.findall(folded)


VALUE_WORD = re.compile(r"[^\W_]+")


def _index(engine: Engine) -> DictionaryIndex:
    """The value index of the engine's generation, built once per commit and kept by the engine."""
    return engine.per_generation("dictionary", lambda: DictionaryIndex.load(engine))


def check_values(values: list[str]) -> None:
    """1 to MAX_VALUES values, none of spaces alone (a miss would read as "not in the data"): each error says what
    to send."""
    if not values:
        raise InvalidInput("values is empty", f'send 1 to {MAX_VALUES} values, e.g. ["Acme Corp"]')
    if len(values) > MAX_VALUES:
        raise InvalidInput(f"{len(values)} values sent", f"send at most {MAX_VALUES} per call")
    blank = [i for i, value in enumerate(values) if not value.strip()]
    if blank:
        named = ", ".join(f'values[{i}] ("{echoed(values[i])}")' for i in blank)
        raise InvalidInput(
            f"{named} {'holds' if len(blank) == 1 else 'hold'} no characters but spaces",
            'send the business values to look up, e.g. ["Acme Corp", "enterprise"].',
        )


def dictionary_search(
    engine: Engine,
    values: list[str],
    connection_id: str | None,
    known_connections: list[str],
    on_progress: Callable[[str, int, int], None] | None = None,
) -> DictionarySearchResult:
    """``values`` as ``check_values`` admits them, ``connection_id`` None (every one of ``known_connections``) or one
    of them: the service checks both before a first build."""
    index = _index(engine)
    conns = [connection_id] if connection_id else sorted(known_connections)
    searched = [_searched(index, conn) for conn in conns]
    status = {s.connectionId: s.status for s in searched}
    results = []
    for done, value in enumerate(values, 1):
        if on_progress is not None:
            on_progress("dictionary", done, len(values))
        matches = index.match(value, set(conns))
        hit_conns = {m[0].connection for m in matches}
        misses = [
            DictionaryMiss(connectionId=c, reason="value_not_in_sample" if status[c] == "ready" else status[c])
            for c in conns
            if c not in hit_conns
        ]
        results.append(
            ValueResult(
                value=sent_back(value),  # 20 values of 45 KB each came back whole
                matches=[
                    DictionaryMatch(
                        connectionId=e.connection,
                        sourceName=e.source_name,
                        columnName=e.column,
                        matchedValue=e.value,
                        cardinality=e.cardinality,
                        tableRef=TableRefOut(**e.table_ref) if e.table_ref else None,
                        matchType=tier,  # type: ignore[arg-type]
                        score=round(score, 3),
                        origin=e.origin,  # type: ignore[arg-type]
                    )
                    for e, tier, score in matches
                ],
                misses=misses,
            )
        )
    return DictionarySearchResult(searched=searched, results=results)


def _searched(index: DictionaryIndex, conn: str) -> Searched:
    snapshot = index.snapshots.get(conn) or {}
    columns = index.columns.get(conn, set())
    has_profile = bool(snapshot.get("profileSyncIds"))
    status = "ready" if columns else ("no_candidate_columns" if has_profile else "no_profile_artifact")
    return Searched(
        connectionId=conn,
        coverage=Coverage(
            sampledRows=snapshot.get("sampledRows"),
            valuesPerColumn=snapshot.get("valuesPerColumn"),
            profiledColumns=len(columns),
            syncId=(snapshot.get("profileSyncIds") or [None])[0],
            # the profile's own scan's time (an older scan's when the newest has none); no profile, no time
            profiledAt=snapshot.get("profiledAt") if has_profile or columns else None,
        ),
        status=status,  # type: ignore[arg-type]
    )
