"""Structural steps of ranking: what the scored items say about others.

A matched column brings its table in, a table its members' terms; two high-ranked tables that
join bring the key columns between them; a value the question names the column that could hold it. Each step lifts a document to at least a share of the score
of what implies it (search/scoring.py), adding it, with its semantic lane, when no lane found it.

The steps run in the order ``STAGES`` declares (``Lifts.run``), each recording what it added to every
candidate's score (``Candidate.steps``, printed by ``--explain``); docs/ranking.md says what each earns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Container

from indexers.models import CONTAINER_KINDS, MEMBER_KINDS, SEARCH_KINDS
from ktx_index.analysis import identifier_key, member_name, term_set, uid_stem
from ktx_index.search.admission import admitted
from ktx_index.search.candidate import Candidate, position
from ktx_index.search.dense import DocCosines
from ktx_index.search.query import Query
from ktx_index.search.scoring import PARAMS, Params, semantic_score
from ktx_index.search.shapes import Value, fit
from ktx_index.snapshot.snapshot import Snapshot

#: Uid prefixes of the documents that hold others (a source's measures and dimensions, a table's columns).
CONTAINERS = tuple(f"{kind}:" for kind in CONTAINER_KINDS)
#: (member index, shape, every value it holds when known)
MemberShape = tuple[int, str, frozenset[str] | None]
#: The structural steps after fusion, in the order they run.
STAGES = ("propagate", "named", "join_keys", "shaped", "namesakes", "measure_inputs", "coherence", "page_scope")


def cosine(snap: Snapshot, idx: int, cosines: DocCosines | None) -> float | None:
    """A document's cosine to this query (search/dense.py), or None when it has no vector."""
    groups = snap.doc_group
    if cosines is None or groups is None or groups[idx] < 0:
        return None
    return cosines[groups[idx]]


def coherence(snap: Snapshot, ranked: list[Candidate], p: Params = PARAMS) -> None:
    """When one connection holds the question's best answers, items of the others lose up to ``coherence`` of
    their score, in proportion to how much less of the top they hold (wiki pages are not affected)."""
    if p.coherence <= 0:
        return
    items = [c for c in ranked if SEARCH_KINDS[snap.doc_kind[position(snap, c)]] != "wiki"]
    top = sorted(items, key=lambda c: -c.score)[: p.coherence_top]
    mass: dict[int, float] = defaultdict(float)
    for cand in top:
        mass[int(snap.doc_conn[cand.idx])] += cand.score
    best = max(mass.values(), default=0.0)
    if len(mass) < 2 or best <= 0:  # one connection, or nothing scored (the dense lane's nearest score 0)
        return
    for cand in items:
        share = mass.get(int(snap.doc_conn[cand.idx]), 0.0) / best
        cand.score *= 1.0 - p.coherence * (1.0 - share)


def set_cosine(cand: Candidate, snap: Snapshot, idx: int, cosines: DocCosines | None, p: Params) -> None:
    """The candidate's cosine to the query and its semantic lane's score (scoring.semantic_score) from it."""
    cand.cosine = cosine(snap, idx, cosines)
    cand.semantic = None if cand.cosine is None else semantic_score(cand.cosine, p)


def container_stem(snap: Snapshot, member: int) -> str | None:
    """The layer stem of a member's table or source; None when it has none indexed."""
    parent = int(snap.doc_parent[member])
    return uid_stem(snap.doc_uids[parent]) if parent >= 0 else None


def member_copies(snap: Snapshot, member: int, most_stems: int) -> list[int]:
    """The members named like this one in tables of its table's stem; none when tables of more than
    ``most_stems`` stems have a member of that name (the walk stops there: `id` names thousands), or when its
    table is not indexed."""
    own = container_stem(snap, member)
    if own is None:
        return []
    stems: dict[str | None, list[int]] = {}
    for uid in snap.exact.get(identifier_key(member_name(snap.doc_uids[member])), ()):
        i = snap.uid_index.get(uid)
        if i is not None and SEARCH_KINDS[snap.doc_kind[i]] in MEMBER_KINDS:
            stems.setdefault(container_stem(snap, i), []).append(i)
            if len(stems) > most_stems:
                return []
    return stems.get(own, [])


def add_parents(snap: Snapshot, candidates: dict[str, Candidate]) -> None:
    """Every matched member brings its source or table in, so the container can be ranked too."""
    for cand in list(candidates.values()):
        parent = int(snap.doc_parent[cand.idx]) if cand.idx >= 0 else -1
        if parent >= 0 and snap.doc_uids[parent] not in candidates:
            candidates[snap.doc_uids[parent]] = Candidate(snap.doc_uids[parent], idx=parent)


def term_context(snap: Snapshot, candidates: dict[str, Candidate], p: Params = PARAMS) -> None:
    """A container matches, at ``member_context``, the query terms its members match and it does not (a table
    covering a question's several concepts through its columns)."""
    members: dict[str, dict[str, float]] = {}
    for cand in candidates.values():
        parent = int(snap.doc_parent[cand.idx]) if cand.idx >= 0 else -1
        if parent >= 0 and cand.terms:
            best = members.setdefault(snap.doc_uids[parent], {})
            for term, share in cand.terms.items():
                best[term] = max(best.get(term, 0.0), share)
    for uid, terms in members.items():
        cand = candidates.get(uid)
        if cand is not None:
            extra = sum(v for t, v in terms.items() if t not in cand.terms)
            cand.lexical = min(1.0, cand.lexical + p.member_context * extra)


class Lifts:
    """One query's structural lifts over its scored candidates (``ranked`` grows as documents are added)."""

    def __init__(
        self,
        snap: Snapshot,
        ranked: list[Candidate],
        kinds: set[str],
        connection: str | None,
        cosines: DocCosines | None,
        params: Params = PARAMS,
    ) -> None:
        self.snap, self.ranked, self.kinds, self.connection, self.cosines = snap, ranked, kinds, connection, cosines
        self.p = params
        self.by_uid = {c.uid: c for c in ranked}

    def run(self, query: Query, shapes: Callable[[int], list[MemberShape]]) -> None:
        """Every step of STAGES in order, each candidate's ``steps`` recording what the step changed of its score.
        ``shapes`` gives a table's shaped members (the engine reads them from its store, once per table and
        snapshot: the lifts themselves read none)."""
        steps = {
            "propagate": self.propagate,
            "named": lambda: self.named(query.named),
            "join_keys": self.join_keys,
            "shaped": lambda: self.shaped(shapes, query.values + ((Value("date", "", None),) if query.by_time else ())),
            "namesakes": self.namesakes,
            "measure_inputs": self.measure_inputs,
            "coherence": lambda: coherence(self.snap, self.ranked, self.p),
            "page_scope": self.page_scope,
        }
        for stage in STAGES:
            before = {c.uid: c.score for c in self.ranked}
            steps[stage]()
            for cand in self.ranked:
                change = cand.score - before.get(cand.uid, 0.0)
                if change:
                    cand.steps[stage] = round(cand.steps.get(stage, 0.0) + change, 6)

    def wanted(self, idx: int) -> bool:
        """Whether the search may return this document (its kind, its connection)."""
        return admitted(self.snap, idx, self.kinds, self.connection)

    def lift(self, idx: int, score: float) -> Candidate:
        """The document's candidate (added with its semantic lane if no lane found it), at least ``score``."""
        uid = self.snap.doc_uids[idx]
        cand = self.by_uid.get(uid)
        if cand is None:
            cand = self.by_uid[uid] = Candidate(uid, idx=idx)
            set_cosine(cand, self.snap, idx, self.cosines, self.p)
            self.ranked.append(cand)
        cand.score = max(cand.score, score)
        return cand

    def propagate(self) -> None:
        """A source or table scores at least ``parent_share`` of its best-matching member."""
        best: dict[int, float] = {}
        for cand in self.ranked:
            parent = int(self.snap.doc_parent[position(self.snap, cand)])
            if parent >= 0:
                best[parent] = max(best.get(parent, 0.0), cand.score)
        for parent, score in best.items():
            cand = self.by_uid.get(self.snap.doc_uids[parent])
            if cand is not None:
                cand.score = max(cand.score, self.p.parent_share * score)

    def named(self, keys: frozenset[str]) -> None:
        """A table or source the question names by one of its own nouns ('patients' → Patient, 'gas stations'
        → gasstations) is what it is about: found by any lane, it scores at least ``named_share`` of the best
        table's or source's score, whatever its columns matched."""
        if self.p.named_share <= 0:
            return
        containers = [c for c in self.ranked if c.uid.startswith(CONTAINERS)]
        if not containers:
            return
        floor = self.p.named_share * max(c.score for c in containers)
        for key in keys:
            for uid in self.snap.exact.get(key, ()):
                cand = self.by_uid.get(uid)
                if cand is not None and uid.startswith(CONTAINERS):
                    cand.score = max(cand.score, floor)

    def namesakes(self) -> None:
        """A table is often copied layer to layer (raw → staging → mart, and its dbt definition): among the
        ``namesake_top`` best results, a table or source lifts its other layers (same stem), and a column,
        dimension or measure its same-named members there, to ``namesake_share`` of its score. A member name that
        tables of more than ``namesake_max`` stems share (`id`, `created_at`) lifts none."""
        snap, p = self.snap, self.p
        if p.namesake_share <= 0:
            return
        for cand in sorted(self.ranked, key=lambda c: -c.score)[: p.namesake_top]:
            idx = position(snap, cand)
            if cand.uid.startswith(CONTAINERS):
                copies = [snap.uid_index[uid] for uid in snap.stems.get(uid_stem(cand.uid), ())]
            elif SEARCH_KINDS[snap.doc_kind[idx]] in MEMBER_KINDS:
                copies = member_copies(snap, idx, p.namesake_max)
            else:
                continue
            for i in copies:
                if i != idx and self.wanted(i) and snap.doc_uids[i] not in snap.shadowed:
                    self.lift(i, p.namesake_share * cand.score)

    def measure_inputs(self) -> None:
        """A measure among the ``measure_top`` best results lifts the dimensions its SQL reads (``sum(closing_bal_gbp)``
        → closing_bal_gbp) to ``measure_share`` of its score: the columns an agent writing the query needs, which
        its words often do not name (*money held in wallets*). After the namesakes step, so a copy of the measure's
        source in another layer is not lifted through them."""
        snap, p = self.snap, self.p
        if p.measure_share <= 0:
            return
        for cand in sorted(self.ranked, key=lambda c: -c.score)[: p.measure_top]:
            for uid in snap.facts.inputs.get(cand.uid, ()):
                idx = snap.uid_index.get(uid)
                if idx is not None and self.wanted(idx):
                    self.lift(idx, p.measure_share * cand.score)

    def top_containers(self, among: Container[str] | None = None) -> list[Candidate]:
        """The ``join_containers`` best tables and sources (of ``among``) above the floor: what the question is
        about."""
        floor = self.p.join_floor
        containers = [c for c in self.ranked if c.uid.startswith(CONTAINERS)]
        containers = [c for c in containers if c.score >= floor and (among is None or c.uid in among)]
        return sorted(containers, key=lambda c: -c.score)[: self.p.join_containers]

    def join_keys(self) -> None:
        """The key columns between two high-ranked tables (or sources) that join answer the question too:
        a question spanning both needs the JOIN. Lifted to ``join_share`` of the weaker table's score."""
        joins = self.snap.facts.joins
        scores = {c.uid: c.score for c in self.top_containers(among=joins)}
        for container, score in scores.items():
            for edge in joins[container]:
                other = scores.get(edge.other)
                if other is None:
                    continue
                for uid in edge.keys:
                    key = self.snap.uid_index.get(uid)
                    if key is not None and self.wanted(key):
                        self.lift(key, self.p.join_share * min(score, other))

    def shaped(self, shapes: Callable[[int], list[MemberShape]], values: tuple[Value, ...]) -> None:
        """A question naming a value ('by Ahmed Samir Farag', 'molecule TR004') needs the column holding such
        values, in a table it is about or one joined to it: per value, the column of its shape that could hold
        it (not one whose every value is known and other), in the best-scoring table and closest to the
        question, is lifted to ``shape_share`` of the score of the top table it is or joins, and its table with it."""
        if not values or self.p.shape_share <= 0:
            return
        snap, joins = self.snap, self.snap.facts.joins
        reach: dict[int, float] = {}  # table index → score of the best top container it is or joins
        for anchor in self.top_containers():
            for uid in (anchor.uid, *(e.other for e in joins.get(anchor.uid, []))):
                idx = snap.uid_index.get(uid)
                if idx is not None:
                    reach[idx] = max(reach.get(idx, 0.0), anchor.score)
        for value in values:
            best: tuple[float, int, int, float] | None = None
            for container, anchor_score in reach.items():
                table_terms = term_set(snap.doc_uids[container].split(":", 2)[2])
                lift = self.p.shape_share * anchor_score
                for member, member_shape, closed in shapes(container):
                    if member_shape != value.shape or (closed is not None and value.text not in closed):
                        continue
                    if not self.wanted(member):
                        continue
                    column_terms = term_set(member_name(snap.doc_uids[member]))
                    semantic = semantic_score(cosine(snap, member, self.cosines) or 0.0, self.p)
                    score = lift * (1 + semantic) * fit(value, column_terms, table_terms)
                    if best is None or score > best[0]:
                        best = (score, member, container, lift)
            if best is not None:
                _score, member, container, lift = best
                self.lift(member, lift)
                self.lift(container, lift)

    def page_scope(self) -> None:
        """With a connection asked for, a wiki page whose ``connections`` frontmatter names only other connections
        keeps ``other_connection_page`` of its score: it is about another warehouse, so the pages that apply rank
        first; demoted, never dropped (KTX leaves this lane unscoped, so its answers stay a subset)."""
        if self.connection is None:
            return
        for cand in self.ranked:
            tagged = self.snap.wiki_connections.get(cand.uid)
            if tagged and self.connection not in tagged:
                cand.score *= self.p.other_connection_page
