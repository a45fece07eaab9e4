"""What gets embedded: compact per-kind texts and heading-aware wiki chunks. Pure functions.

TEMPLATE_VERSION is part of the embedding fingerprint: change a template or the chunk
size, bump it, and vectors are recomputed (unchanged texts still hit the cache).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from indexers.models import MEMBER_KINDS, Diagnostic, Document
from ktx_index.analysis import STOPWORDS, expand

TEMPLATE_VERSION = 3
CHUNK_WORDS = 150  # ≈200 word pieces, under MiniLM's 256-token window
#: A page embeds its first passages up to this many words, and this many passages at most: a 50 MB page (a log or
#: an export saved as markdown) made 72,000 passages, an hour of embedding on two cores. What lies past them is
#: found by its words. Counted in words, so a glossary of many short sections is embedded whole.
MAX_PAGE_WORDS = 24_000
MAX_PAGE_CHUNKS = 1_000
#: Vocabulary words (``vocabulary_words``) are plain ASCII words of this many letters.
MIN_WORD, MAX_WORD = 3, 24
#: A semantic-layer source and its scanned table read alike (and so do a dimension and its column):
#: when their descriptions agree the texts are identical and embedded once.
KIND_LABEL = {
    "sl_source": "table",
    "table": "table",
    "sl_dimension": "column",
    "column": "column",
    "sl_measure": "measure",
}


def humanize(identifier: str) -> str:
    return re.sub(r"[_\-.]+", " ", identifier).strip()


def _owner(doc: Document) -> str:
    if doc.kind in ("sl_dimension", "column") and doc.table_ref is not None:
        return doc.table_ref.name
    return doc.display.rsplit(".", 1)[0]


def compact_text(doc: Document) -> str:
    """'kind: name — in owner — description — …' for everything but wiki pages."""
    parts = [f"{KIND_LABEL.get(doc.kind, doc.kind)}: {humanize(doc.name)}"]
    if doc.kind in MEMBER_KINDS and doc.display:
        parts.append(f"in {humanize(_owner(doc))}")
    summary = doc.summary or doc.description or doc.comment
    if summary:
        parts.append(summary)
    if doc.expr:
        parts.append(doc.expr)
    if doc.sample_values:
        parts.append("values: " + ", ".join(doc.sample_values[:5]))
    if doc.kind == "sl_source" and doc.attrs.get("measures"):
        parts.append("measures: " + ", ".join(humanize(m) for m in doc.attrs["measures"][:12]))
    columns = doc.attrs.get("columns") if doc.kind == "sl_source" else doc.body.split() if doc.kind == "table" else []
    if columns:
        parts.append("columns: " + ", ".join(humanize(c) for c in columns[:20]))
    if doc.kind == "sl_source" and doc.body:
        parts.append(doc.body)
    if doc.tags:
        parts.append("tags: " + ", ".join(doc.tags))
    return " — ".join(parts)[:1000]


def _split_words(text: str, size: int) -> list[str]:
    words = text.split()
    if len(words) <= size:
        return [text]
    step = size - size // 5  # 20 % overlap so a sentence cut at a boundary is whole in one chunk
    return [" ".join(words[i : i + size]) for i in range(0, max(1, len(words) - size // 5), step)]


def wiki_chunks(doc: Document) -> list[str]:
    """Title + summary first, then each heading section (long ones split), each prefixed by its page title; the
    first of them up to MAX_PAGE_WORDS words (the first always) and MAX_PAGE_CHUNKS passages."""
    return _embedded(_all_wiki_chunks(doc))


def _embedded(chunks: list[str]) -> list[str]:
    words = 0
    for n, chunk in enumerate(chunks[:MAX_PAGE_CHUNKS]):
        words += len(chunk.split())
        if words > MAX_PAGE_WORDS and n:
            return chunks[:n]
    return chunks[:MAX_PAGE_CHUNKS]


def _all_wiki_chunks(doc: Document) -> list[str]:
    title = humanize(doc.name)
    head = f"{title}: {doc.summary}" if doc.summary else title
    chunks = [f"{head}. tags: {', '.join(doc.tags)}" if doc.tags else head]
    for section in doc.sections or []:
        label = f"{title} — {section.heading}" if section.heading else title
        for piece in _split_words(section.text, CHUNK_WORDS):
            chunks.append(f"{label}: {piece}")
    if not doc.sections and doc.body:
        chunks.extend(f"{title}: {piece}" for piece in _split_words(doc.body, CHUNK_WORDS))
    return chunks


def embedding_warnings(documents: Iterable[Document]) -> list[Diagnostic]:
    """A warning per page too long to embed whole (``partly_embedded``), for rebuild, status and inspect."""
    return [Diagnostic(path=d.path, message=note, code="warning") for d in documents if (note := partly_embedded(d))]


def partly_embedded(doc: Document) -> str | None:
    """What a page too long to embed whole (past MAX_PAGE_WORDS or MAX_PAGE_CHUNKS) tells ``status``, else None."""
    if doc.kind != "wiki":
        return None
    chunks = _all_wiki_chunks(doc)
    total, kept = len(chunks), len(_embedded(chunks))
    if kept == total:
        return None
    return (
        f"page too long to embed whole: its first {kept} of {total} passages (about {MAX_PAGE_WORDS:,} words) are "
        "matched by meaning, all of it by words (split it into pages to have the rest found by meaning too)"
    )


def embedding_texts(doc: Document) -> list[str]:
    """The texts embedded for one document (several for a wiki page, one otherwise, none for other kinds)."""
    if doc.kind == "wiki":
        return wiki_chunks(doc)
    if doc.kind in KIND_LABEL:
        return [compact_text(doc)]
    return []


def vocabulary_words(doc: Document) -> set[str]:
    """The words a document names things with (identifier parts, descriptions and comments; a wiki page's
    title and tags), each embedded once on its own so a question's word the project never uses can be
    bridged to the nearest one it does (search/bridge.py)."""
    if doc.kind == "wiki":
        texts = [doc.name, doc.display, " ".join(doc.tags)]
    elif doc.kind in KIND_LABEL:
        texts = [doc.name, doc.display, doc.description, doc.comment]
    else:
        return set()
    return {w for w in (t.lower() for text in texts if text for t in expand(text)) if _is_word(w)}


def _is_word(token: str) -> bool:
    return token.isascii() and token.isalpha() and MIN_WORD <= len(token) <= MAX_WORD and token not in STOPWORDS
