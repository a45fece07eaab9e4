"""Pure scoring: the ranking's constants in one frozen object, lane normalisation and fusion.

Every lane is mapped to [0, 1] by a query-independent rule, so the fused score means
the same thing from query to query (the confidence rule reads it against fixed thresholds):
- lexical: for each query term, the document's BM25 for that term over the term's idf times
  ``reference_boost`` (capped at 1), averaged over the terms weighted by idf — the share of the
  query the document matches, discounted when a term only appears in weak fields (body);
- semantic: cosine mapped linearly from [cos_low, cos_high] to [0, 1] (MiniLM puts
  unrelated texts below ~0.25 and paraphrases around 0.5–0.7);
- exact: the query is the item's name or id, which puts it in a tier above the rest.

The constants were chosen by leave-one-group-out cross-validation on the judged sets (docs/ranking.md); a
benchmark or a tuning script tries others by building another ``Params`` (``dataclasses.replace``) and handing it
to the engine, never by editing this module at run time.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _answerable() -> dict[str, tuple[float, float, float]]:
    return {"discover_data": (0.36, 0.15, 0.55), "wiki_search": (0.2, 0.7, 0.45)}


def _carried() -> dict[str, tuple[float, float]]:
    return {"discover_data": (-0.03, 0.08)}


def _kind_prior() -> dict[str, float]:
    return {"wiki": 1.0, "sl_source": 1.0, "sl_measure": 1.0, "table": 0.97, "sl_dimension": 0.92, "column": 0.88}


@dataclass(frozen=True)
class Params:
    """The ranking's constants (docs/ranking.md says what each step does and what it earns held out)."""

    #: Each lane hands ranking its best ``pool`` documents (per term for the lexical lane).
    pool: int = 50
    #: A term matched once in a field of this boost (description) counts fully; stronger fields saturate.
    reference_boost: float = 1.5
    #: Share of a term's weight earned by containing it at all (the rest depends on where).
    match_base: float = 0.5
    #: A misspelt query term corrected to an indexed one counts at this share.
    corrected_term: float = 0.8
    #: A query word no field holds is bridged to the project word nearest in meaning (search/bridge.py) when their
    #: cosine is at least ``bridge_min``, and then counts at ``bridged_term`` of its weight (0: no bridging).
    bridge_min: float = 0.6
    bridged_term: float = 0.9
    #: A table or source matches ``member_context`` × the query terms its members match and it does not.
    member_context: float = 1.5
    cos_low: float = 0.22
    cos_high: float = 0.62
    #: A document of several chunks (a wiki page) takes its best chunk's cosine moved this share of the way toward
    #: its second best: a page that speaks of the question in two sections ranks above one that mentions it once.
    second_chunk: float = 0.5
    lexical_weight: float = 0.55
    semantic_weight: float = 0.75
    exact_floor: float = 0.9
    non_exact_ceiling: float = 0.88
    #: Containers and curated definitions answer more questions than single columns do.
    kind_prior: dict[str, float] = field(default_factory=_kind_prior)
    #: A column or dimension whose name says it holds a key (analysis.is_key_name) answers fewer questions than the
    #: one carrying the question's concept: it keeps this share of its kind prior unless the question asks for
    #: identifiers (chosen leaving one project out on the tuning families: docs/benchmarks.md). The join-key step
    #: still lifts the keys between two tables that answer.
    key_member: float = 0.85
    #: The join-key and value-shape steps look at tables and sources scoring at least this: what the question is
    #: about (Lifts.top_containers).
    join_floor: float = 0.18
    #: A source or table scores at least this share of its best-matching measure, dimension or column (0.9 → 0.95
    #: chosen by every discover fold, families weighed equally; no held-out family loses: docs/benchmarks.md).
    parent_share: float = 0.95
    #: A table or source named by a noun of the question scores at least this share of the best one.
    named_share: float = 0.95
    #: Key columns between two of the ``join_containers`` best tables that join score at least this share of the
    #: weaker.
    join_share: float = 0.9
    join_containers: int = 4
    #: A column shaped like a value the question names (search/shapes.py) scores at least this share of its table.
    shape_share: float = 0.85
    #: Among the ``namesake_top`` best results, a table or source lifts its copies in other layers and a member its
    #: same-named members there, to this share of its score, unless tables of more than ``namesake_max`` stems have
    #: a member of that name (`id`).
    namesake_share: float = 0.9
    namesake_top: int = 5
    namesake_max: int = 3
    #: Among the ``measure_top`` best results, a measure lifts the dimensions its expression and filter read to this
    #: share of its score (held out, every KTX-style family gains: docs/benchmarks.md, forty-fourth session).
    measure_share: float = 0.9
    measure_top: int = 3
    #: With ``connectionId``, a wiki page tagged (``connections`` frontmatter) with other connections only keeps this
    #: share of its score in discover_data (wiki_search drops such pages, as KTX does).
    other_connection_page: float = 0.5
    #: How much items of other connections lose when one connection holds the best answers (0: nothing).
    coherence: float = 0.3
    coherence_top: int = 10
    #: Per tool, (best score under which an answer is not confident, concept coverage needed, best score confident
    #: alone): below it the refs come back with ``confidence: "low"`` (signals.assess).
    answerable: dict[str, tuple[float, float, float]] = field(default_factory=_answerable)
    #: Nothing is returned only when no document matches the question's words beyond ``chance_lexical`` and its
    #: best cosine stays below the project's noise level (search/calibration.py).
    chance_lexical: float = 0.2
    #: Per tool, (drop under which a confident answer turns low, drop from which a low one turns confident): how
    #: far the best answers' cosine falls when the question loses its least-carried word (search/carried.py; a tool
    #: not named here is not checked).
    carried: dict[str, tuple[float, float]] = field(default_factory=_carried)
    #: How many of the best answers may carry a question's words (0: the check is off).
    carried_top: int = 10
    #: On a project with a hand-written semantic layer (snapshot.curated) searched with vectors, a discover_data
    #: answer whose best score is under ``curated_floor`` is confident only when the best answers carry the question's
    #: words (the carried check's drop at least ``curated_carried``): curated descriptions lift every score, and the
    #: shared thresholds let such projects' no-answer questions through (chosen on four families of curated
    #: projects, leaving each out: docs/benchmarks.md, forty-first session).
    curated_floor: float = 0.52
    curated_carried: float = 0.06
    #: At most this many members (measures, dimensions, columns) of one source or table among discover's refs (or
    #: half the refs asked for, when that is more).
    max_per_container: int = 5
    #: The dense lane keeps its this many nearest documents whatever their cosine (scoring nothing unless another
    #: lane or step lifts them), so an answer of the default ten refs does not stop short while the project holds
    #: more (signals.answer_order; held out, every family gains or ties: docs/benchmarks.md).
    dense_nearest: int = 10
    #: The learned order's model (search/learned.py): a file of search/weights/, or a path (learned_ranker.py
    #: hands in models trained without the project it scores); "" for none, the declared pipeline's order alone.
    ranker: str = "ranker.json"
    #: The learned order's model for a project with a hand-written semantic layer (snapshot.curated): its
    #: best answers are curated sources, measures and dimensions beside the scanned copies, which the scan-only
    #: families that weigh most in ``ranker``'s training never show. Trained on such projects; "" uses ``ranker``.
    curated_ranker: str = "ranker-curated.json"
    #: The ranker's weight in the learned order's blend with the pipeline's score (search/learned.py; chosen leave
    #: one project out on the tuning families among 0.35 / 0.5 / 0.65 / 0.8, 0.5 and 0.65 over three ranker
    #: seeds: docs/benchmarks.md, thirty-first session).
    ranker_weight: float = 0.65


PARAMS = Params()


def lexical_score(bm25: float, ideal: float) -> float:
    if ideal <= 0 or bm25 <= 0:
        return 0.0
    return min(1.0, bm25 / ideal)


def term_score(bm25: float, norm: float, p: Params = PARAMS) -> float:
    """How well one document matches one query term: ``match_base`` for containing it anywhere,
    the rest by strength (the field it is in, how often, in how short a text)."""
    strength = lexical_score(bm25, norm)
    return p.match_base + (1.0 - p.match_base) * strength if strength > 0 else 0.0


def semantic_score(cosine: float, p: Params = PARAMS) -> float:
    return float(min(1.0, max(0.0, (cosine - p.cos_low) / (p.cos_high - p.cos_low))))


def fuse(lexical: float, semantic: float | None, exact: bool, p: Params = PARAMS) -> float:
    """Probabilistic OR of the weighted lanes (agreement lifts the score), then the exact tier."""
    if semantic is None:  # lexical-only index: the lexical lane alone sets the scale
        hybrid = lexical
    else:
        hybrid = 1.0 - (1.0 - p.lexical_weight * lexical) * (1.0 - p.semantic_weight * semantic)
        hybrid = min(1.0, hybrid / (1.0 - (1.0 - p.lexical_weight) * (1.0 - p.semantic_weight)))
    if exact:
        return p.exact_floor + (1.0 - p.exact_floor) * hybrid
    return p.non_exact_ceiling * hybrid


def prior(kind: str, p: Params = PARAMS, key: bool = False) -> float:
    """What a document of this kind weighs in fusion (a member holding a key, ``key``, weighs less)."""
    return p.kind_prior.get(kind, 1.0) * (p.key_member if key else 1.0)
