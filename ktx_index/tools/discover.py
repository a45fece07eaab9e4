"""discover_data: one ranked list of refs across wiki, semantic layer and warehouse scans."""

from __future__ import annotations

from indexers.models import CONTAINER_OF, SEARCH_KINDS, Document
from ktx_index.errors import InvalidInput
from ktx_index.search import carried, learned
from ktx_index.search.engine import Candidate, Engine
from ktx_index.search.lexical_lane import bridges
from ktx_index.search.query import Query
from ktx_index.search.signals import answer_order, assess
from ktx_index.search.snippets import MATCHED_ON, as_ktx_field, ktx_matched_on, matched_field, snippet
from ktx_index.snapshot.snapshot import Snapshot, curated
from ktx_index.tools.answer_joins import joins_between
from ktx_index.tools.results import MAX_RESULTS, DiscoverRef, DiscoverResult, JoinOut, LaneScores, TableRefOut

#: A semantic-layer kind and the scan kind it duplicates when both describe one physical object.
TWINS = {"sl_source": "table", "sl_dimension": "column"}
#: A container kind → the kind of its members that may have a twin (a scanned column, a semantic-layer dimension).
MEMBER_KIND = {CONTAINER_OF[kind]: kind for kind in (*TWINS, *TWINS.values()) if kind in CONTAINER_OF}


def normalize_kinds(kinds: list[str] | None) -> list[str]:
    """The kinds asked for; none, or an empty list, is every kind (upstream answers ``[]`` with nothing, which an
    agent reads as "no data": an outside pass)."""
    if not kinds:
        return list(SEARCH_KINDS)
    unknown = sorted({k for k in kinds if k not in SEARCH_KINDS})
    if unknown:
        raise InvalidInput(f"unknown kind(s) {', '.join(unknown)}", f"use any of: {', '.join(SEARCH_KINDS)}")
    return list(dict.fromkeys(kinds))


def physical_key(doc: Document) -> tuple[str, ...] | None:
    """Identity of the physical table/column behind a document, for de-duplication."""
    ref = doc.table_ref
    if ref is None or doc.connection_id is None:
        return None
    table = ref.display.casefold()
    if doc.kind in MEMBER_KIND:  # a table or a source
        return ("table", doc.connection_id, table)
    if doc.kind in MEMBER_KIND.values() and doc.column_name:  # a column or a dimension
        return ("column", doc.connection_id, table, doc.column_name.casefold())
    return None


def container_of(doc: Document) -> str | None:
    """The source or table a member belongs to (for the per-container cap)."""
    if doc.kind in ("sl_measure", "sl_dimension"):
        return f"{doc.connection_id}:{doc.id.rsplit('.', 1)[0]}"
    if doc.kind == "column" and doc.table_ref is not None:
        return f"{doc.connection_id}:{doc.table_ref.display}"
    return None


def discover(
    engine: Engine,
    query: str,
    connection_id: str | None = None,
    kinds: list[str] | None = None,
    limit: int = 10,
    explain: bool = False,
) -> DiscoverResult:
    limit = max(1, min(int(limit), MAX_RESULTS))
    wanted = normalize_kinds(kinds)
    snap = engine.snapshot
    q = engine.abbreviated(Query.parse(query), wanted)
    vector = engine.vector_ahead(snap, q.dense_text, wanted)
    if vector is not None:  # behind the question's vector on the worker, while ranking runs here
        engine.query_vectors.prefetch(carried.foreseen(engine.lexical, q))
    ranked = engine.rank(q, wanted, connection_id, vector=vector)
    p = engine.params
    # The answer is ordered and its refs built before the verdict: the carried check the verdict may ask for
    # embeds question variants on the worker, and this work overlaps them instead of following them. Wasted
    # only when the verdict is "none".
    ranker = learned.model(learned.ranker_name(snap, p))  # curated projects have a model of their own
    ordered = answer_order(learned.learned_order(q, ranked, ranker, p.ranker_weight))
    if limit > p.dense_nearest:  # the lanes' candidates may not fill a longer answer
        ordered += engine.nearest(snap, vector, wanted, connection_id, limit * 2, {c.uid for c in ordered})
    refs, joins = _answer(engine, snap, q, ordered, wanted, limit, explain)
    verdict = assess(
        engine.lexical, q, ranked, "discover_data", lambda: engine.noise(snap, q), p,
        lambda: carried.weakest(engine, snap, q, ranked), bridging=bridges(wanted),
        curated=vector is not None and curated(snap),  # the floor was chosen, and its drop is measured, with vectors
    )  # fmt: skip
    reason = verdict.reason if explain else None
    gap = semantic_gap(engine, snap)
    if verdict.level == "none":
        return DiscoverResult(refs=[], confidenceReason=reason, semantic=gap)
    low = "low" if verdict.level == "low" else None
    return DiscoverResult(refs=refs, joins=joins or None, confidence=low, confidenceReason=reason, semantic=gap)


def _answer(
    engine: Engine, snap: Snapshot, q: Query, ranked: list[Candidate], wanted: list[str], limit: int, explain: bool
) -> tuple[list[DiscoverRef], list[JoinOut]]:
    """The refs of an answer ordered best first (``ranked``), up to ``limit``, and the joins between them: twins
    merged, at most ``max_per_container`` members of one source or table in an answer of the default length (so
    one table's columns do not crowd out everything else; up to half of a longer one)."""
    p = engine.params
    head = ranked[: limit * 3 + 10]
    docs = engine.documents([c.uid for c in head])
    dedupe = any(k in wanted and TWINS[k] in wanted for k in TWINS)
    cap = max(p.max_per_container, limit // 2)
    chosen: list[tuple[Candidate, Document, list[Document]]] = []
    seen: dict[tuple[str, ...], int] = {}
    per_container: dict[str, int] = {}
    for cand in head:  # choose first, explain after
        doc = docs.get(cand.uid)
        if doc is None:  # committed to the lexical index, not yet visible in the store: skip
            continue
        key = physical_key(doc) if dedupe else None
        if key is not None and key in seen:
            chosen[seen[key]][2].append(doc)
            continue
        container = container_of(doc)
        if container is not None:
            if per_container.get(container, 0) >= cap:
                continue
            per_container[container] = per_container.get(container, 0) + 1
        if len(chosen) >= limit:  # full (chosen never holds more); with twins, the rest may still merge into it
            if not dedupe:
                break
            continue
        if key is not None:
            seen[key] = len(chosen)
        chosen.append((cand, doc, []))
    if dedupe:
        twins_beyond(engine, snap, chosen, wanted)
    terms = set(q.terms)
    stale = engine.stale()
    refs = []
    for cand, doc, twins in chosen:
        ref = _ref(doc, cand, terms, explain)
        # one ref stands for its twins: stale when any of them is served from a last good version
        ref.stale = next((reason for d in (doc, *twins) if (reason := stale.get(d.uid))), None)
        for twin in twins:
            _merge_twin(ref, twin)
        refs.append(ref)
    # the joins between the refs that matched: leads at score 0 (answer_order) joined each other into noise
    matched = [[doc.uid, *(t.uid for t in twins)] for cand, doc, twins in chosen if cand.score > 0]
    return refs, joins_between(snap, matched)


def semantic_gap(engine: Engine, snap: Snapshot) -> str | None:
    """Why search by meaning left part of the project out of an answer ranked on ``snap`` (vectors still being
    embedded, a model that failed), or None: an agent asking on a first start otherwise takes a lexical answer for
    the whole one. Nothing to say of an empty project, or when embeddings are off in ktx.yaml."""
    if not snap.doc_uids:
        return None
    status, why = engine.semantic_status(snap)
    return why if status in ("partial", "failed") or (status == "skipped" and engine.embedder is not None) else None


def twins_beyond(
    engine: Engine, snap: Snapshot, chosen: list[tuple[Candidate, Document, list[Document]]], wanted: list[str]
) -> None:
    """A chosen table, source, column or dimension whose twin ranked below the candidates read gets it too, so an
    item's kind and id do not depend on ``limit`` (the semantic layer's name wins wherever the scan's ranks). The
    facts pair the containers (``Facts.twins``); a member's twin is its container twin's member of the same column,
    looked up by its id and kept only when it is the same physical column."""
    guesses: dict[str, list[tuple[Document, list[Document]]]] = {}
    for _cand, doc, twins in chosen:
        if twins or doc.kind not in (*MEMBER_KIND, *MEMBER_KIND.values()):
            continue
        for twin in _twin_uids(snap, doc):
            if twin.split(":", 1)[0] in wanted:
                guesses.setdefault(twin, []).append((doc, twins))
    if not guesses:
        return
    found = engine.documents(sorted(guesses))
    for uid, owners in guesses.items():
        twin = found.get(uid)
        for doc, twins in owners:
            if twin is not None and physical_key(twin) == physical_key(doc) and not twins:
                twins.append(twin)


def _twin_uids(snap: Snapshot, doc: Document) -> list[str]:
    """Where a document's twin would be: a container's are known (``Facts.twins``); a member's is guessed as its
    column in each of its container's twins."""
    if doc.kind in MEMBER_KIND:
        return sorted(snap.facts.twins(doc.uid))
    if not doc.column_name:
        return []
    parent_kind = next(k for k, member in MEMBER_KIND.items() if member == doc.kind)
    parent = f"{parent_kind}:{doc.uid.split(':', 1)[1].rsplit('.', 1)[0]}"
    out = []
    for twin in sorted(snap.facts.twins(parent)):
        kind, conn, name = twin.split(":", 2)
        out.append(f"{MEMBER_KIND[kind]}:{conn}:{name}.{doc.column_name}")
    return out


def _merge_twin(kept: DiscoverRef, twin: Document) -> None:
    """The higher-ranked of two twins is kept; the SL one wins the kind, id and summary, the scan one gives tableRef
    (the table as entity_details reads it)."""
    if twin.kind in TWINS and kept.kind == TWINS[twin.kind]:
        kept.kind = twin.kind  # type: ignore[assignment]
        kept.id = twin.id
        kept.matchedOn = as_ktx_field(twin.kind, kept.matchedOn)  # type: ignore[assignment]
        kept.summary = twin.summary or kept.summary  # the layer's description, a user's first, as alone
    else:
        kept.summary = kept.summary or twin.summary
    if twin.table_ref is not None and twin.kind in TWINS.values():
        kept.tableRef = TableRefOut(**twin.table_ref.model_dump())


def _ref(doc: Document, cand: Candidate, terms: set[str], explain: bool) -> DiscoverRef:
    field = matched_field(doc, terms)
    matched = ktx_matched_on(doc, field)  # KTX's name for it; the snippet is cut from the field itself
    ref = DiscoverRef(
        kind=doc.kind,  # type: ignore[arg-type]
        id=doc.id,
        score=round(cand.score, 4),
        summary=doc.summary,
        snippet=snippet(doc, MATCHED_ON[field] if field else matched, terms),
        matchedOn=matched,  # type: ignore[arg-type]
        connectionId=doc.connection_id,
        columnName=doc.column_name if doc.kind in MEMBER_KIND.values() else None,
    )
    if doc.table_ref is not None:  # a semantic-layer item's: the table its source reads, whatever kinds were asked
        ref.tableRef = TableRefOut(**doc.table_ref.model_dump())
    if explain:
        ref.lanes = LaneScores.of(cand)
    return ref
