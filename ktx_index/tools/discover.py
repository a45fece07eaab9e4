"""discover_data: one ranked list of refs across wiki, semantic layer and warehouse scans."""

from __future__ import annotations

import re
from collections import Counter

from indexers.models import SEARCH_KINDS, Document
from ktx_index.errors import InvalidInput, require_words
from ktx_index.search import carried, learned
from ktx_index.search.engine import Candidate, Engine
from ktx_index.search.lexical_lane import bridges
from ktx_index.search.query import Query
from ktx_index.search.signals import answer_order, assess
from ktx_index.search.snippets import matched_on, snippet
from ktx_index.snapshot.joins import QUALIFIED, Edge, JoinEdge, condition_key
from ktx_index.snapshot.snapshot import Snapshot, curated
from ktx_index.tools.results import DiscoverRef, DiscoverResult, JoinOut, LaneScores, TableRefOut

MAX_LIMIT = 50
#: A semantic-layer kind and the scan kind it duplicates when both describe one physical object.
TWINS = {"sl_source": "table", "sl_dimension": "column"}


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
    if doc.kind in ("sl_source", "table"):
        return ("table", doc.connection_id, table)
    if doc.kind in ("sl_dimension", "column") and doc.column_name:
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
    limit = max(1, min(int(limit), MAX_LIMIT))
    wanted = normalize_kinds(kinds)
    require_words(query)
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
    refs, joins = _answer(engine, snap, q, ordered, wanted, limit, explain)
    verdict = assess(
        engine.lexical, q, ranked, "discover_data", lambda: engine.noise(snap, q), p,
        lambda: carried.weakest(engine, snap, q, ranked), bridging=bridges(wanted, p),
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
        ref.stale = stale.get(doc.uid)
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


def joins_between(snap: Snapshot, refs: list[list[str]]) -> list[JoinOut]:
    """How the tables and sources behind the returned refs join each other (refs given as the uids each
    stands for), and through one table they leave out where two of them join no other way (the one joining the
    most of them first), else through two that join each other. Ids are the containers' ref ids: a table's display
    name, a source's name. A table and its semantic-layer source (twins) are one end, named as the refs name it
    (the source when either is returned as one), and a join both declare is listed once (the source's condition
    first)."""

    def parent_uid(uid: str) -> str | None:
        idx = snap.uid_index.get(uid)
        if idx is None:
            return None
        parent = int(snap.doc_parent[idx])
        return snap.doc_uids[parent] if parent >= 0 else uid

    containers = {c for uids in refs for uid in uids if (c := parent_uid(uid)) is not None}
    named: dict[object, str] = {}  # a physical table → the container its end is named by (as the refs name it)
    for c in sorted(containers, key=lambda c: (not c.startswith("sl_source:"), c)):
        named.setdefault(snap.facts.table_of.get(c, c), c)

    def end_of(c: str) -> str:
        return named.get(snap.facts.table_of.get(c, c), c)

    out: list[JoinOut] = []
    keys: list[set[str]] = []  # each join's key columns
    seen: dict[tuple[frozenset[str], str], int] = {}  # a join → where it is in ``out``
    renamed: set[int] = set()  # the joins in ``out`` whose condition names a source where its table is meant
    group = {c: c for c in containers}  # which tables already join one another (union-find, by representative)

    def root(c: str) -> str:
        while group[c] != c:
            c = group[c]
        return c

    for c in containers:  # twins are one table
        if end_of(c) in group:
            group[root(c)] = root(end_of(c))

    def add(a: str, b: str, edge: JoinEdge | Edge) -> None:
        """``from`` is the end that declares the join (the table holding the foreign key); the edge's key tells
        it from the others (joins.condition_key). Of one join declared twice, the first listed (a source's) gives
        the condition, unless only the other names the joined table by an alias (a scanned role, a ``parent``),
        whose direction then comes with it (the alias names ``to``). A scanned foreign key to a column the scan no
        longer holds (a table file edited since) is no join to paste."""
        if any(k.startswith("column:") and k not in snap.uid_index for k in edge.keys):
            return
        physical = as_tables(snap, edge)
        a, b = end_of(a), end_of(b)
        a, b = (a, b) if getattr(edge, "declared", True) else (b, a)
        join = JoinOut(from_=a.split(":", 2)[2], to=b.split(":", 2)[2], on=edge.on, alias=edge.alias)
        key = (frozenset((a, b)), physical)
        if key in seen:
            at = seen[key]
            if (edge.alias and not out[at].alias) or (at in renamed and physical == edge.key):
                out[at], keys[at] = join, set(edge.keys)  # the condition that pastes into SQL
                renamed.discard(at)
            return
        seen[key] = len(out)
        if physical != edge.key:
            renamed.add(len(out))
        out.append(join)
        keys.append(set(edge.keys))

    via: dict[str, list[tuple[str, JoinEdge]]] = {}  # a table the refs leave out → the refs' tables joining it
    for container in sorted(containers):
        for twin in (container, *sorted(snap.facts.twins(container))):  # a row and its parent row (a manager)
            for edge in snap.facts.itself.get(twin, ()):
                add(container, container, edge)
        # its own joins, then its twin's (a source's table's foreign keys: the condition that pastes into SQL when
        # the source is named otherwise than its table, as_tables)
        twin_edges = [e for twin in sorted(snap.facts.twins(container)) for e in snap.facts.joins.get(twin, [])]
        for edge in [*snap.facts.joins.get(container, []), *twin_edges]:
            other = end_of(edge.other)  # the refs' own end when they hold its twin (orders' key to a source)
            if other in containers:
                add(container, other, edge)
                group[root(other)] = root(container)
            else:
                via.setdefault(other, []).append((container, edge))
    # Two of them that join only through a table the refs leave out (trips and zones, through stations): the
    # two joins to it, so the JOIN can still be written; the tables that join most of them first (a fact table
    # between three of them before a bridge between two), then by name.
    for middle in sorted(via, key=lambda m: (-len({root(c) for c, _ in via[m]}), m)):
        ends: dict[str, tuple[str, JoinEdge]] = {}
        for container, edge in via[middle]:
            ends.setdefault(root(container), (container, edge))
        if len(ends) < 2:
            continue
        first = next(iter(ends))
        for end, (container, edge) in ends.items():
            add(container, middle, edge)
            group[end] = first
    # Two that still join no other way, through two tables the refs leave out that join each other (customers and
    # products, through orders and their lines): the three joins, so the JOIN can be written from this answer.
    for near in sorted(via):
        edges = snap.facts.joins.get(near, [])
        if len({root(c) for c in containers}) < 2:
            break  # all of them join already
        if len(edges) > MOST_BRIDGE_JOINS:
            continue
        for edge in edges:
            far = end_of(edge.other)
            if far == near or far in containers or far not in via:
                continue
            first = {root(c): (c, e) for c, e in reversed(via[near])}  # one way in per group, the first listed
            second = {root(c): (c, e) for c, e in reversed(via[far])}
            pair = next(((first[x], second[y]) for x in first for y in second if x != y), None)
            if pair is not None:
                (a, to_near), (b, to_far) = pair
                add(a, near, to_near)
                add(near, far, edge)
                add(b, far, to_far)
                group[root(b)] = root(a)
    return fewest_roles(out, keys, {uid for uids in refs for uid in uids})


def as_tables(snap: Snapshot, edge: JoinEdge | Edge) -> str:
    """A join's condition_key with each source it names named as its table instead: a source's join and the foreign
    key of the tables under it are one join (``trip_otp.rte_id = routes.rte_id`` over ``mart.fct_trip_otp`` and
    ``raw.rte`` is ``fct_trip_otp.rte_id = rte.rte_id``), listed once (an outside agent pass got both)."""
    if edge.alias or any(k.startswith("column:") for k in edge.keys):  # a scanned key: named as its tables already
        return edge.key
    conn = edge.other.split(":", 2)[1]

    def table(match: re.Match[str]) -> str:
        found = snap.facts.table_of.get(f"sl_source:{conn}:{match.group(1)}")
        return f"{found[1].rpartition('.')[2] if found else match.group(1)}.{match.group(2)}"

    return condition_key(QUALIFIED.sub(table, edge.on))


#: A table the refs leave out joined to more tables than this (a calendar every fact table references) is not
#: looked at as the first of two tables between two of them: its joins would be read on every answer.
MOST_BRIDGE_JOINS = 1000
#: Past this many roles of one table in another (a match's 22 player slots), a join lists those its refs hold.
MOST_ROLES = 4


def fewest_roles(joins: list[JoinOut], keys: list[set[str]], returned: set[str]) -> list[JoinOut]:
    """The joins, a table referenced more than MOST_ROLES times by another cut to the roles whose own key column
    the refs hold (or its first two when they hold none): every role of every slot buried the one join that
    mattered, and entity_details lists each foreign key. A role's own columns are its key columns but those every
    role of the pair shares (the key they reference, on either table when a table references itself)."""
    pairs = Counter((j.from_, j.to) for j in joins)
    crowded = {pair for pair, n in pairs.items() if n > MOST_ROLES}
    if not crowded:
        return joins
    shared: dict[tuple[str, str], set[str]] = {}
    for join, key_columns in zip(joins, keys, strict=True):
        pair = (join.from_, join.to)
        if pair in crowded:
            shared[pair] = shared[pair] & key_columns if pair in shared else set(key_columns)
    own = [k - shared.get((j.from_, j.to), set()) for j, k in zip(joins, keys, strict=True)]
    held = {pair for j, k in zip(joins, own, strict=True) if (pair := (j.from_, j.to)) in crowded and k & returned}
    out, kept = [], Counter()
    for join, key_columns in zip(joins, own, strict=True):
        pair = (join.from_, join.to)
        if pair in crowded and not (key_columns & returned if pair in held else kept[pair] < 2):
            continue
        kept[pair] += 1
        out.append(join)
    return out


#: A container kind → the kind of its members that may have a twin (a scanned column, a semantic-layer dimension).
MEMBER_KIND = {"table": "column", "sl_source": "sl_dimension"}


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
        kept.summary = twin.summary or kept.summary  # the layer's description, a user's first, as alone
    else:
        kept.summary = kept.summary or twin.summary
    if twin.table_ref is not None and twin.kind in TWINS.values():
        kept.tableRef = TableRefOut(**twin.table_ref.model_dump())


def _ref(doc: Document, cand: Candidate, terms: set[str], explain: bool) -> DiscoverRef:
    matched = matched_on(doc, terms)
    ref = DiscoverRef(
        kind=doc.kind,  # type: ignore[arg-type]
        id=doc.id,
        score=round(cand.score, 4),
        summary=doc.summary,
        snippet=snippet(doc, matched, terms),
        matchedOn=matched,  # type: ignore[arg-type]
        connectionId=doc.connection_id,
        columnName=doc.column_name if doc.kind in ("column", "sl_dimension") else None,
    )
    if doc.table_ref is not None:  # a semantic-layer item's: the table its source reads, whatever kinds were asked
        ref.tableRef = TableRefOut(**doc.table_ref.model_dump())
    if explain:
        ref.lanes = LaneScores.of(cand)
    return ref
