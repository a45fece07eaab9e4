"""The joins a discover_data answer lists: how the tables and sources behind its refs join each other, written as
conditions that paste into SQL, through the tables the refs leave out where two of them join no other way.

Pure functions over a snapshot's join facts (snapshot/joins.py, snapshot/facts.py), so each can be tested alone.
"""

from __future__ import annotations

import re
from collections import Counter

from ktx_index.snapshot.joins import QUALIFIED, Edge, JoinEdge, condition_key
from ktx_index.snapshot.snapshot import Snapshot
from ktx_index.tools.results import JoinOut


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
