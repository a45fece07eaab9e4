"""A baseline that ranks like KTX does today (reference §2.2, §2.5, §3.3), over the same documents.

- discover_data: per field, the fraction of query terms that occur as substrings, times the
  field weight; best field per item; each lane (wiki, semantic layer, raw schema) sorted on
  its own and interleaved by rank; score = 61 / (60 + rank). Raw tables and columns only see
  what production scan files hold (names and DB comments; no descriptions, no samples).
- wiki_search: FTS-style BM25 (unicode61-like tokens, no stemming) RRF-fused with the
  substring token lane (weights 1.5 / 0.75, k = 60); embeddings off (KTX's default).
- dictionary_search: case-insensitive substring containment.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from indexers.models import Document

FIELD_WEIGHTS = {
    "wiki": {"name": 1.1, "description": 1.0, "body": 0.8},
    "sl_source": {"name": 1.2, "description": 1.0, "display": 0.8},
    "sl_measure": {"name": 1.2, "description": 1.0, "expr": 0.9},
    "sl_dimension": {"name": 1.2, "display": 1.1, "description": 1.0, "expr": 0.9},
    "table": {"name": 1.2, "display": 1.1, "comment": 1.0},
    "column": {"name": 1.2, "display": 1.1, "comment": 1.0},
}
LANE = {"wiki": "wiki", "sl_source": "sl", "sl_measure": "sl", "sl_dimension": "sl", "table": "raw", "column": "raw"}


def terms(query: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9_]+", query.lower()) if t]


def field_text(doc: Document, field: str) -> str:
    return {
        "name": doc.name,
        "display": doc.display,
        "description": doc.description if doc.kind not in ("table", "column") else "",
        "comment": doc.comment,
        "expr": doc.expr,
        "body": doc.body,
    }[field]


@dataclass
class BaselineRef:
    uid: str
    kind: str
    connection_id: str | None
    id: str
    score: float


class KtxBaseline:
    def __init__(self, docs: list[Document]) -> None:
        self.docs = [d for d in docs if d.kind in FIELD_WEIGHTS]
        self.wiki = [d for d in self.docs if d.kind == "wiki" and d.attrs.get("scope") in ("GLOBAL", "USER")]
        self.values = [d for d in docs if d.kind == "dictionary_value"]
        tokenized = [_fts_tokens(_wiki_text(d)) for d in self.wiki]
        self.wiki_tf = [Counter(t) for t in tokenized]
        self.wiki_len = [len(t) for t in tokenized]
        self.avg_len = sum(self.wiki_len) / max(1, len(self.wiki_len))
        self.df = Counter(term for tf in self.wiki_tf for term in tf)

    # ------------------------------------------------------------------ wiki_search

    def wiki_search(self, query: str, limit: int = 10) -> list[Document]:
        q = terms(query)
        if not q:
            return []
        n = len(self.wiki)
        lexical = []
        fts_terms = set(_fts_tokens(" ".join(q)))
        for i, tf in enumerate(self.wiki_tf):
            score = 0.0
            for t in fts_terms:
                if t in tf:
                    idf = math.log((n - self.df[t] + 0.5) / (self.df[t] + 0.5) + 1)
                    f = tf[t]
                    score += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self.wiki_len[i] / self.avg_len))
            if score > 0:
                lexical.append((score, self.wiki[i].path, i))
        lexical.sort(key=lambda x: (-x[0], x[1]))
        token = []
        for i, doc in enumerate(self.wiki):
            text = _wiki_text(doc).lower()
            score = sum(1 for t in q if t in text) / len(q)
            if score > 0:
                token.append((score, doc.path, i))
        token.sort(key=lambda x: (-x[0], x[1]))
        fused: dict[int, float] = {}
        for weight, ranked in ((1.5, lexical[:30]), (0.75, token[:30])):
            for rank, (_s, _p, i) in enumerate(ranked, 1):
                fused[i] = fused.get(i, 0.0) + weight / (60 + rank)
        order = sorted(fused, key=lambda i: (-fused[i], self.wiki[i].path))
        return [self.wiki[i] for i in order[:limit]]

    # ------------------------------------------------------------------ discover_data

    def discover(
        self, query: str, connection: str | None = None, kinds: list[str] | None = None, limit: int = 10
    ) -> list[BaselineRef]:
        q = terms(query)
        if not q:
            return []
        wanted = set(kinds or FIELD_WEIGHTS)
        lanes: dict[str, list[tuple[float, str, Document]]] = {"wiki": [], "sl": [], "raw": []}
        wiki_rank = {d.uid: 1.0 / (60 + r) for r, d in enumerate(self.wiki_search(query, max(limit, 25)), 1)}
        for doc in self.docs:
            if doc.kind not in wanted or (connection and doc.kind != "wiki" and doc.connection_id != connection):
                continue
            best = 0.0
            for field, weight in FIELD_WEIGHTS[doc.kind].items():
                text = field_text(doc, field).lower()
                if text:
                    best = max(best, sum(1 for t in q if t in text) / len(q) * weight)
            if doc.kind == "wiki":
                if doc.uid not in wiki_rank:
                    continue
                best += wiki_rank[doc.uid]
            elif best <= 0:
                continue
            ref_id = f"{doc.kind}:{doc.connection_id or ''}:{doc.id}"
            lanes[LANE[doc.kind]].append((best, ref_id, doc))
        fused = []
        for ranked in lanes.values():
            ranked.sort(key=lambda x: (-x[0], x[1]))
            fused.extend((1.0 / (60 + rank), ref_id, doc) for rank, (_s, ref_id, doc) in enumerate(ranked, 1))
        fused.sort(key=lambda x: (-x[0], x[1]))
        top = fused[:limit]
        best = top[0][0] if top else 1.0
        return [BaselineRef(doc.uid, doc.kind, doc.connection_id, doc.id, round(s / best, 3)) for s, _i, doc in top]

    # ------------------------------------------------------------------ dictionary_search

    def dictionary(self, value: str, connection: str | None = None) -> list[Document]:
        needle = value.lower()
        hits = [
            d for d in self.values if needle in d.id.lower() and (connection is None or d.connection_id == connection)
        ]
        return sorted(hits, key=lambda d: (d.connection_id or "", d.display, d.id))


def _wiki_text(doc: Document) -> str:
    return "\n".join([doc.id, doc.summary or "", doc.body, " ".join(doc.tags)])


def _fts_tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())
