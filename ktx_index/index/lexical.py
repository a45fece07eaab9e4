"""The lexical index: one tantivy index for every searchable kind, one field per role.

Text is tokenised in Python (analysis.expand) and stemmed/folded by tantivy's analyzer,
and queries are built from terms (never parsed), so agent-typed syntax cannot break them.
A reserved ``__meta__`` document carries the store generation the index was committed at.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import tantivy

from indexers.models import SEARCH_KINDS, SHARED_KIND, Document
from ktx_index.analysis import ANALYZER, build_analyzer, index_text

#: Field → BM25 boost. Names and identifiers first, prose next, long bodies last.
FIELD_BOOSTS: dict[str, float] = {
    "name": 3.0,
    "display": 2.0,
    "description": 1.5,
    "tags": 1.2,
    "comment": 1.2,
    "sample_values": 1.0,
    "expr": 0.8,
    "body": 0.5,
}
META_UID = "__meta__"
#: Hit uids remembered per searcher, the least recently hit dropped first: ~100 bytes each.
UID_CACHE = 200_000
#: Document counts of terms kept per searcher (LexicalIndex.doc_freq).
TERM_CACHE = 65_536
#: The share of deleted documents past which a commit writes the index again (index/commit.py). tantivy counts a
#: deleted document in its terms' document frequencies until its segment merges, and its merge policy seldom
#: merges the large first segment, so every edit moves idf away from a clean build's: held-out projects whose
#: documents were all replaced once flagged 63 answerable questions of 158 `low`, against 55 built clean
#: (docs/benchmarks.md, forty-third session). At 10 % a project is written again after a tenth of it changed.
REWRITE_DELETED_SHARE = 0.1


def _doc_freq(searcher: tantivy.Searcher, term: str) -> int:
    return max(searcher.doc_freq(field, term) for field in FIELD_BOOSTS)


def _stored_uid(searcher: tantivy.Searcher, segment_ord: int, doc: int) -> str:
    """The uid stored with the document at this address of the searcher."""
    return searcher.doc(tantivy.DocAddress(segment_ord, doc)).get_first("uid")


def build_schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("uid", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("kind", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("connection", stored=False, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("meta", stored=True, tokenizer_name="raw", index_option="basic")
    for field in FIELD_BOOSTS:
        builder.add_text_field(field, stored=False, tokenizer_name=ANALYZER, index_option="freq")
    return builder.build()


def field_texts(doc: Document) -> dict[str, str]:
    return {
        "name": doc.name,
        "display": doc.display,
        "description": doc.description,
        "tags": " ".join(doc.tags),
        "comment": doc.comment,
        "sample_values": " ".join(doc.sample_values),
        "expr": doc.expr,
        "body": doc.body,
    }


@dataclass
class LexicalHit:
    uid: str
    score: float


class LexicalIndex:
    def __init__(self, path: Path, create: bool = True) -> None:
        """Open (or, for the writer, create) the index. Readers never create: a missing meta.json is damage."""
        self.path = path
        self.schema = build_schema()
        if create:
            path.mkdir(parents=True, exist_ok=True)
            self.index = tantivy.Index(self.schema, path=str(path))
        else:
            if not (path / "meta.json").is_file():
                raise ValueError(f"{path / 'meta.json'} is missing")
            self.index = tantivy.Index.open(str(path))
        self.index.register_tokenizer(ANALYZER, build_analyzer())
        self._use(self.index.searcher())

    # ------------------------------------------------------------------ writing

    def writer(self) -> tantivy.IndexWriter:
        """A writer, after clearing the files a killed writer left behind: tantivy names a commit's deletes file by
        its segment and opstamp, so a writer killed before its commit landed leaves one that the next commit of
        the same changes would write again, and fails on (``FileAlreadyExists``). Its garbage collection removes
        the files no committed state uses, as every commit does after the fact."""
        writer = self.index.writer(heap_size=128_000_000, num_threads=1)
        writer.garbage_collect_files()
        return writer

    def add(self, writer: tantivy.IndexWriter, doc: Document) -> None:
        fields = {name: index_text(text) for name, text in field_texts(doc).items() if text}
        writer.add_document(tantivy.Document(uid=doc.uid, kind=doc.kind, connection=doc.connection_id or "", **fields))

    @staticmethod
    def delete(writer: tantivy.IndexWriter, uid: str) -> None:
        writer.delete_documents_by_term("uid", uid)

    def deleted_share(self, deleting: int = 0, adding: int = 0) -> float:
        """The share of the documents that will be deleted ones once a commit ``deleting`` and ``adding`` this many
        lands, from tantivy's ``meta.json`` (each segment's ``max_doc`` and ``deletes.num_deleted_docs``) for the
        committed ones; 0.0 when the file cannot be read as that."""
        try:
            segments = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))["segments"]
            total = sum(int(segment["max_doc"]) for segment in segments)
            deleted = sum(int((segment.get("deletes") or {}).get("num_deleted_docs", 0)) for segment in segments)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return 0.0
        return (deleted + deleting) / (total + adding) if total + adding else 0.0

    @staticmethod
    def set_generation(writer: tantivy.IndexWriter, generation: int) -> None:
        writer.delete_documents_by_term("uid", META_UID)
        writer.add_document(tantivy.Document(uid=META_UID, kind=META_UID, meta=str(generation)))

    # ------------------------------------------------------------------ reading

    def reload(self) -> None:
        self.index.reload()
        self._use(self.index.searcher())

    def _use(self, searcher: tantivy.Searcher) -> None:
        """A searcher, with the uids of its hits remembered by address (fetching a stored document for each
        hit was ~350 fetches per query on a large index); swapped as one, so a search uses one pair."""
        self.searcher = searcher
        uid_at = functools.lru_cache(maxsize=UID_CACHE)(functools.partial(_stored_uid, searcher))
        self._with_uids: tuple[tantivy.Searcher, Callable[[int, int], str]] = (searcher, uid_at)
        #: A searcher is a fixed point in time, so its counts can be kept with it: a question asks ~100 of them
        #: (idf, spelling, the bridge), one call per field each.
        self._doc_freq = functools.lru_cache(maxsize=TERM_CACHE)(functools.partial(_doc_freq, searcher))

    def generation(self) -> int:
        searcher = self.searcher  # one searcher per lookup: reload() may swap it (addresses are per searcher)
        hits = searcher.search(tantivy.Query.term_query(self.schema, "uid", META_UID), 1).hits
        if not hits:
            return -1
        return int(searcher.doc(hits[0][1]).get_first("meta") or -1)

    def num_docs(self) -> int:
        return max(0, self.searcher.num_docs - 1)

    def doc_freq(self, term: str) -> int:
        """Documents holding the term in their most common field (a conservative document frequency)."""
        return self._doc_freq(term)

    def holds(self, term: str) -> bool:
        """Whether any document holds the term."""
        return self.doc_freq(term) > 0

    def idf(self, term: str) -> float:
        """BM25 idf over the whole index; a term in no document gets the largest idf."""
        n = max(1, self.searcher.num_docs)
        df = self.doc_freq(term)
        return math.log(1 + (n - df + 0.5) / (df + 0.5))

    def vocabulary(self, prefix: str, fields: tuple[str, ...], limit: int) -> dict[str, int]:
        """Indexed terms starting with prefix, with document counts (for spelling correction)."""
        out: dict[str, int] = {}
        for field in fields:
            for term, count in self.searcher.terms_with_prefix(field, prefix, limit=limit):
                out[term] = max(out.get(term, 0), count)
        return out

    def count(self, terms: list[str], kinds: list[str]) -> int:
        """How many documents of these kinds hold any of the analyzed terms, in any field: posting lists
        are counted, no document is loaded or scored (cheap whatever the number of matches)."""
        query = self._query(terms, kinds, None)
        return 0 if query is None else self.searcher.search(query, 1, count=True).count

    def search(
        self, terms: list[str], kinds: list[str], connection: str | None = None, limit: int = 100
    ) -> list[LexicalHit]:
        """Top hits for analyzed terms (OR over boosted fields), filtered by kind and connection."""
        query = self._query(terms, kinds, connection)
        if query is None:
            return []
        searcher, uid_at = self._with_uids  # one searcher per search: reload() may swap it (addresses are per searcher)
        return [
            LexicalHit(uid_at(addr.segment_ord, addr.doc), score)
            for score, addr in searcher.search(query, limit, count=False).hits
        ]

    def _query(self, terms: list[str], kinds: list[str], connection: str | None) -> tantivy.Query | None:
        schema = self.schema
        clauses = [
            (tantivy.Occur.Should, tantivy.Query.boost_query(tantivy.Query.term_query(schema, field, term), boost))
            for term in terms
            for field, boost in FIELD_BOOSTS.items()
        ]
        if not clauses:
            return None
        filters = [(tantivy.Occur.Must, tantivy.Query.boolean_query(clauses)), *_kind_filter(schema, kinds)]
        if connection is not None:
            scoped = tantivy.Query.boolean_query(
                [
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "connection", connection)),
                    (tantivy.Occur.Should, tantivy.Query.term_query(schema, "kind", SHARED_KIND)),
                ]
            )
            filters.append((tantivy.Occur.Must, _const(scoped)))
        return tantivy.Query.boolean_query(filters)


def _kind_filter(schema: tantivy.Schema, kinds: list[str]) -> list[tuple[tantivy.Occur, tantivy.Query]]:
    """Clauses keeping only these kinds, in the cheaper of two forms: one posting list each for the kinds kept,
    or for the kinds left out (tantivy seeks in them); none when every kind is kept. A term-set filter instead
    gathers every matching document first: at 100k columns it cost 1.2 of a term search's 1.5 ms."""
    left_out = [k for k in SEARCH_KINDS if k not in kinds]
    if not left_out:
        return []
    if len(left_out) < len(kinds):
        return [(tantivy.Occur.MustNot, tantivy.Query.term_query(schema, "kind", k)) for k in left_out]
    kept = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, "kind", k)) for k in kinds]
    return [(tantivy.Occur.Must, _const(tantivy.Query.boolean_query(kept)))]


def _const(query: tantivy.Query) -> tantivy.Query:
    return tantivy.Query.const_score_query(query, 0.0)
