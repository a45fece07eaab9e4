"""The learned order: the blend re-weighs the pipeline's best candidates, scores keep their scale."""

import hashlib
from dataclasses import replace

import numpy as np

from indexers.models import SEARCH_KINDS
from ktx_index.search import learned
from ktx_index.search.candidate import Candidate
from ktx_index.search.query import Query
from ktx_index.search.scoring import PARAMS
from ktx_index.snapshot.snapshot import Snapshot

SQL_STYLE = "List the names of the schools whose average SAT math score is greater than 560."


def candidates() -> list[Candidate]:
    """A table the pipeline put first on its name, and columns whose cosine says more."""
    return [
        Candidate("table:db:main.schools", lexical=1.0, cosine=0.30, score=0.9, terms={"school": 1.0}),
        Candidate("column:db:main.satscores.AvgScrMath", lexical=0.2, cosine=0.62, score=0.5, terms={"math": 0.2}),
        Candidate("column:db:main.schools.School", lexical=0.8, cosine=0.55, score=0.45, terms={"school": 0.8}),
        Candidate("column:db:main.satscores.NumTstTakr", lexical=0.0, cosine=0.40, score=0.2),
        Candidate("table:db:main.frpm", cosine=0.1, score=0.0),
    ]


def test_blend_weighs_the_standardised_ranker_by_its_weight():
    pipeline, ranker = np.array([3.0, 2.0, 1.0]), np.array([0.0, 1.0, 5.0])
    assert list(np.argsort(-learned.blend(pipeline, ranker, 0.0))) == [0, 1, 2]  # no weight: the pipeline's order
    weight = PARAMS.ranker_weight
    mixed = (1 - weight) * learned.standardised(pipeline) + weight * learned.standardised(ranker)
    assert np.allclose(learned.blend(pipeline, ranker), mixed)
    assert np.allclose(learned.blend(pipeline, ranker, 1.0), learned.standardised(ranker))
    assert np.allclose(learned.standardised(np.ones(3)), 0.0)  # no spread: no say


def test_style_features_see_how_a_question_is_written():
    sql, business = (
        learned.style_features(Query.parse(SQL_STYLE)),
        learned.style_features(Query.parse("revenue by region")),
    )
    assert sql["q_lead"] == 1.0 and sql["q_digits"] == 1.0 and sql["q_words"] > business["q_words"]
    assert business["q_lead"] == 0.0 and business["q_caps"] == 0.0
    columns = learned.candidate_features(Query.parse(SQL_STYLE), candidates())
    assert all(list(columns[k]) == [v] * len(candidates()) for k, v in sql.items())  # each candidate carries it


def test_candidate_features_place_each_candidate_against_the_best():
    columns = learned.candidate_features(Query.parse(SQL_STYLE), candidates())
    assert list(columns["rank"]) == [0, 1, 2, 3, 4]
    assert columns["rel_score"][0] == 1.0 and np.isclose(columns["rel_score"][1], 0.5 / 0.9)
    assert columns["cos_gap"][1] == 0.0 and np.isclose(columns["cos_gap"][0], 0.30 - 0.62)  # the best cosine
    assert columns["lex_gap"][0] == 0.0 and np.isclose(columns["lex_gap"][3], -1.0)
    assert list(columns["kind_table"]) == [1, 0, 0, 0, 1] and list(columns["kind_column"]) == [0, 1, 1, 1, 0]
    assert learned.matrix(columns, ["rank", "score"]).tolist()[1] == [1.0, 0.5]


def test_the_shipped_model_reads_the_features_this_code_writes():
    ranker = learned.model()
    assert ranker is not None, "ktx_index/search/weights/ is missing: run tests/training/train_ranker.py"
    assert ranker.features == sorted(learned.candidate_features(Query.parse("x"), candidates()))


def test_the_learned_order_hands_out_the_pipeline_scores_best_first():
    ranked = candidates()
    before = {c.uid: c.score for c in ranked}
    out = learned.learned_order(Query.parse(SQL_STYLE), ranked, learned.model())
    assert sorted(c.uid for c in out) == sorted(before)
    assert [c.score for c in out] == sorted(before.values(), reverse=True)
    for cand in out:  # what moved says by how much
        assert np.isclose(before[cand.uid] + cand.steps.get("learned", 0.0), cand.score)


def test_the_ranking_it_reorders_is_left_as_the_pipeline_scored_it():
    scored = dict(zip([c.uid for c in candidates()], [0.9, 0.2, 0.45, 0.5, 0.0], strict=True))  # not the model's order
    ranked = sorted((replace(c, score=scored[c.uid]) for c in candidates()), key=lambda c: -c.score)
    before = [(c.uid, c.score, dict(c.steps)) for c in ranked]
    out = learned.learned_order(Query.parse(SQL_STYLE), ranked, learned.model(), weight=1.0)  # the model's order
    assert any("learned" in c.steps for c in out)  # it moved something, on copies
    assert [(c.uid, c.score, c.steps) for c in ranked] == before


def test_only_the_top_is_reordered():
    ranked = [Candidate(f"column:db:t.c{i}", cosine=0.5, score=1.0 - i / 100) for i in range(learned.TOP + 5)]
    out = learned.learned_order(Query.parse(SQL_STYLE), ranked, learned.model())
    assert [c.uid for c in out[learned.TOP :]] == [c.uid for c in ranked[learned.TOP :]]


def test_without_a_model_the_pipeline_order_stands(tmp_path):
    assert learned.model("") is None and learned.model(str(tmp_path / "absent.json")) is None
    assert learned.fingerprint("") is None
    ranked = candidates()
    assert learned.learned_order(Query.parse(SQL_STYLE), ranked, None) == ranked


def test_the_fingerprint_changes_with_the_model_file(tmp_path):
    digest = hashlib.sha256(learned.RANKER_FILE.read_bytes()).hexdigest()
    assert learned.fingerprint() == f"learned-order@{digest[:12]}"
    retrained = tmp_path / "ranker.json"  # a path in Params.ranker is read as it is
    retrained.write_bytes(learned.RANKER_FILE.read_bytes() + b" ")
    assert learned.model(str(retrained)) is not None
    assert learned.fingerprint(str(retrained)) not in (None, learned.fingerprint())


def snapshot_of(*kinds: str) -> Snapshot:
    return Snapshot(doc_kind=np.array([SEARCH_KINDS.index(k) for k in kinds], dtype=np.int8))


def test_a_curated_project_is_ordered_by_the_curated_model_when_it_is_there(tmp_path):
    curated, scanned = snapshot_of("sl_source", "sl_measure"), snapshot_of("table", "column")
    assert learned.ranker_name(curated) == PARAMS.curated_ranker != PARAMS.ranker
    assert learned.ranker_name(scanned) == PARAMS.ranker
    missing = replace(PARAMS, curated_ranker=str(tmp_path / "absent.json"))
    assert learned.ranker_name(snapshot_of("sl_source", "sl_measure"), missing) == PARAMS.ranker
    off = replace(PARAMS, curated_ranker="")
    assert learned.ranker_name(snapshot_of("sl_source", "sl_measure"), off) == PARAMS.ranker


def test_the_shipped_curated_model_reads_the_features_this_code_writes():
    ranker = learned.model(PARAMS.curated_ranker)
    assert ranker is not None, "no curated model in weights/: run tests/training/train_ranker.py --curated"
    assert ranker.features == sorted(learned.candidate_features(Query.parse("x"), candidates()))
    assert learned.fingerprint(PARAMS.curated_ranker) not in (None, learned.fingerprint())
