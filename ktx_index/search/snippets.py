"""Explaining a hit: which field matched (``matchedOn``) and the matched words in context.

Pure functions over a document and the query's analyzed terms; only called for the
handful of results returned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from indexers.models import Document, Section
from ktx_index.analysis import RAW_TOKEN, term_set
from ktx_index.index.lexical import FIELD_BOOSTS, field_texts

#: tantivy field → KTX matchedOn value
MATCHED_ON = {
    "name": "name",
    "display": "display",
    "description": "description",
    "tags": "description",
    "comment": "comment",
    "sample_values": "sample_value",
    "expr": "expr",
    "body": "body",
}
SNIPPET_CHARS = 200
#: A hit is explained from its first this many characters: a 10 MB page took 3 s to explain, analysing all of it.
EXPLAINED_CHARS = 200_000
MARK_OPEN, MARK_CLOSE = "<mark>", "</mark>"


def matched_field(doc: Document, terms: set[str]) -> str | None:
    """The field with the largest boosted share of the query terms, or None when no term matches."""
    best, best_score = None, 0.0
    for field, text in field_texts(doc).items():
        if not text:
            continue
        found = terms.intersection(term_set(text[:EXPLAINED_CHARS]))
        score = len(found) * FIELD_BOOSTS[field]
        if score > best_score:
            best, best_score = field, score
    return best


#: The fields KTX explains each kind by (reference §2.5), and a dimension's values, which it does not index.
KTX_FIELDS = {
    "wiki": ("name", "description", "body"),
    "sl_source": ("name", "description", "display"),
    "sl_measure": ("name", "description", "expr"),
    "sl_dimension": ("name", "display", "description", "expr", "sample_value"),
    "table": ("name", "display", "description", "comment"),
    "column": ("name", "display", "description", "comment", "sample_value"),
}


def as_ktx_field(kind: str, matched: str) -> str:
    """``matched`` as one of the fields KTX gives ``kind``: a table's column names (``body``: its snippet lists
    them) and a measure's or page's display (``source.measure``, the key spaced) as its name; a source's usage
    notes, and the scan's comment on a table or column merged into its semantic-layer twin, as its description."""
    if matched in KTX_FIELDS[kind]:
        return matched
    if matched == "display" or (kind, matched) == ("table", "body"):
        return "name"
    return "description"


def matched_on(doc: Document, terms: set[str]) -> str:
    """KTX's ``matchedOn`` for a hit: the best-matching field, as one of those KTX gives the kind."""
    return ktx_matched_on(doc, matched_field(doc, terms))


def ktx_matched_on(doc: Document, field: str | None) -> str:
    """KTX's ``matchedOn`` for a hit whose best-matching field is ``field`` (None: no term matched)."""
    if field is not None:
        return as_ktx_field(doc.kind, MATCHED_ON[field])
    if doc.kind == "wiki":
        return "body"
    return as_ktx_field(doc.kind, "description" if doc.description else ("comment" if doc.comment else "name"))


_SPACES = re.compile(r"\s+")


def _collapse(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


def highlight(text: str, terms: set[str], limit: int = SNIPPET_CHARS) -> str:
    """Wrap words whose analyzed form is a query term in <mark>, keeping the result within limit."""
    out, used, pos = [], 0, 0
    for match in RAW_TOKEN.finditer(text):
        word = match.group(0)
        hit = not terms.isdisjoint(term_set(word))
        plain = text[pos : match.start()]
        extra = len(MARK_OPEN) + len(MARK_CLOSE) if hit else 0
        if used + len(plain) + len(word) + extra > limit:
            remaining = max(0, limit - used)
            out.append((plain + word)[:remaining])
            return "".join(out).rstrip()
        out.append(plain + (f"{MARK_OPEN}{word}{MARK_CLOSE}" if hit else word))
        used += len(plain) + len(word) + extra
        pos = match.end()
    out.append(text[pos : pos + max(0, limit - used)])
    return "".join(out)


def snippet_around(text: str, terms: set[str]) -> str | None:
    """KTX's window (60 before, 140 after the first match), collapsed, highlighted, ≤ 200 chars."""
    if not text:
        return None
    first = None
    for match in RAW_TOKEN.finditer(text):
        if not terms.isdisjoint(term_set(match.group(0))):
            first = match.start()
            break
    start = max(0, (first or 0) - 60)
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < (first or 0) else start
    window = _collapse(text[start : start + 400])
    return highlight(window, terms) or None


def warm(docs: Iterable[Document], room: int) -> int:
    """Analyse documents' fields, sections and words ahead of the first queries (term_set caches them):
    explaining a hit analyses every field of it, and cutting and highlighting a snippet each of its words.
    A fresh server's first answers otherwise pay that (~2 ms a query on orbit). Stops once about ``room``
    texts are cached, so warming a large project does not evict what queries already use; returns the
    documents warmed."""
    warmed = 0
    for doc in docs:
        if term_set.cache_info().currsize >= room:
            break
        texts = [text[:EXPLAINED_CHARS] for text in field_texts(doc).values() if text]
        texts += [section.text for section in _first_sections(doc)]
        for text in texts:
            term_set(text)
            for word in RAW_TOKEN.findall(text):
                term_set(word)
        warmed += 1
    return warmed


def _first_sections(doc: Document) -> list[Section]:
    """A page's sections within its first EXPLAINED_CHARS characters (the first always)."""
    out, seen = [], 0
    for section in doc.sections:
        if out and seen + len(section.text) > EXPLAINED_CHARS:
            break
        out.append(section)
        seen += len(section.text)
    return out


def cap(text: str | None) -> str | None:
    if not text:
        return None
    return _collapse(text)[:SNIPPET_CHARS]


def snippet(doc: Document, matched: str, terms: set[str]) -> str | None:
    """Per kind, as KTX builds it (reference §2.5), with the matched words highlighted; ``matched``: the field that
    matched (MATCHED_ON's name for it, ``body`` included: a source's usage notes are cut from where they match)."""
    attrs = doc.attrs
    if doc.kind == "wiki":
        best = max(_first_sections(doc), key=lambda s: len(terms.intersection(term_set(s.text))), default=None)
        source = best.text if best is not None and terms.intersection(term_set(best.text)) else doc.body
        return snippet_around(source[:EXPLAINED_CHARS], terms) or cap(doc.summary)
    if doc.kind == "sl_source":
        if matched == "description":
            return snippet_around(doc.description, terms)
        if matched == "body":  # its usage notes
            return snippet_around(doc.body, terms)
        members = [*attrs.get("measures", []), *attrs.get("columns", [])][:3]
        return highlight(cap(f"{doc.name}: " + ", ".join(members)) or "", terms) or None
    if doc.kind == "sl_measure":
        return highlight(cap(doc.expr) or "", terms) or None
    if doc.kind == "sl_dimension":
        if matched == "description":
            return snippet_around(doc.description, terms)
        return highlight(cap(f"{doc.name} ({attrs.get('type') or 'unknown'})") or "", terms)
    if doc.kind == "table":
        if matched in ("description", "comment"):
            return snippet_around(doc.description or doc.comment, terms)
        columns = doc.body.split()
        matching = [c for c in columns if not terms.isdisjoint(term_set(c))]
        shown = (matching + [c for c in columns if c not in matching])[:5]  # the columns that matched first
        return highlight(cap(", ".join(shown)) or "", terms) or None
    if doc.kind == "column":
        native = attrs.get("nativeType") or ""
        if matched == "sample_value" and doc.sample_values:
            return highlight(cap(f"{native} - samples: " + ", ".join(doc.sample_values[:5])) or "", terms)
        if matched in ("description", "comment"):
            return snippet_around(doc.description or doc.comment, terms)
        return cap(native)
    return None
