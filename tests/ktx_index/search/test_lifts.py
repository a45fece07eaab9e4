"""Structural steps of ranking (search/lifts.py) over a small scan: real store, fake embedder."""

from __future__ import annotations

import numpy as np
import pytest
from projects import column, scan_files, with_params

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search import scoring
from ktx_index.search.candidate import Candidate
from ktx_index.search.lifts import coherence
from ktx_index.search.scoring import PARAMS
from ktx_index.service import KtxIndex
from ktx_index.snapshot.snapshot import Snapshot
from ktx_index.snapshot.uids import UidIndex
from ktx_index.tools.discover import discover

CLINIC = [
    {"catalog": None, "db": "main", "name": "Patient", "columns": [column("ID", "int"), column("Birthday", "date")]},
    {
        "catalog": None, "db": "main", "name": "Laboratory",
        "columns": [column("ID", "int"), column("PLT", "int", comment="platelet count"), column("HGB", "int")],
    },
    {"catalog": None, "db": "main", "name": "gasstations", "columns": [column("Segment")]},
]  # fmt: skip


def indexed(make_project, files: dict):
    """The engine over a project of these files, indexed with the fake embedder (a fixture yields from it)."""
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    yield service.ensure_index()
    service.close()


@pytest.fixture
def clinic(make_project):
    yield from indexed(make_project, scan_files("warehouse", "2026-01-01-000000-aaaa", CLINIC))


def score_of(engine, query: str, uid_end: str) -> tuple[float, float]:
    """(the table's score, the best table's score)."""
    ranked = [c for c in engine.rank(query, ["table", "column"]) if c.uid.startswith("table:")]
    return next(c.score for c in ranked if c.uid.endswith(uid_end)), max(c.score for c in ranked)


def test_a_key_column_ranks_below_its_concept_unless_the_question_asks_for_ids(clinic):
    key, concept = "main.Laboratory.ID", "main.Laboratory.PLT"
    for query, keeps in (("laboratory platelet", False), ("laboratory id", True)):
        even, demoted = scores(with_params(clinic, key_member=1.0), query), scores(clinic, query)
        assert demoted[concept] == pytest.approx(even[concept])
        if keeps:
            assert demoted[key] == pytest.approx(even[key])
        else:
            assert demoted[key] == pytest.approx(even[key] * PARAMS.key_member)
    lanes = {r.id: r.lanes for r in discover(clinic, "laboratory platelet", explain=True).refs}
    assert lanes["main.Laboratory.ID"].prior == pytest.approx(PARAMS.kind_prior["column"] * PARAMS.key_member, abs=1e-4)
    assert lanes["main.Laboratory.PLT"].prior == pytest.approx(PARAMS.kind_prior["column"])


def test_an_exact_name_of_a_key_column_keeps_the_exact_tier(make_project):
    bank = [{"catalog": None, "db": "main", "name": "SAVINGS", "columns": [column("custid", "int"), column("balance")]}]
    opened = indexed(make_project, scan_files("bank", "2026-01-01-000000-aaaa", bank))
    ranked = next(opened).rank("custid", ["table", "column"])
    next(opened, None)  # closes the service
    assert ranked[0].uid.endswith("SAVINGS.custid") and ranked[0].exact
    assert ranked[0].score >= PARAMS.exact_floor * PARAMS.kind_prior["column"]
    assert ranked[0].prior == pytest.approx(PARAMS.kind_prior["column"])


def test_a_table_the_question_names_scores_near_the_best_table(clinic):
    query = "patients with a platelet count below normal"
    off, best_off = score_of(with_params(clinic, named_share=0.0), query, "main.Patient")
    on, best = score_of(with_params(clinic, named_share=0.95), query, "main.Patient")
    assert off < 0.95 * best_off  # the columns matched are the laboratory's
    assert on == pytest.approx(0.95 * best) and best == pytest.approx(best_off)  # lifted, never above the best


def test_a_phrase_names_a_table_and_kinds_not_asked_for_are_never_added(clinic):
    lifted, best = score_of(clinic, "patients and gas stations by segment", "main.gasstations")
    assert lifted >= 0.95 * best - 1e-9  # 'gas stations' names gasstations, found through its Segment column
    ranked = clinic.rank("patients", ["column"])
    assert ranked and not any(c.uid.startswith("table:") for c in ranked)


def _table(db: str, name: str, *columns: dict) -> dict:
    return {"catalog": None, "db": db, "name": name, "columns": list(columns)}


LAYERED = [
    _table("raw", "customers", column("is_test_account", "boolean", comment="QA dummy logins"), column("created_at")),
    _table("analytics", "dim_customers", column("is_test_account", "boolean"), column("created_at")),
    _table("analytics", "weekly_signups", column("is_test_account", "boolean"), column("created_at")),
    _table("analytics", "fct_orders", column("created_at")),
    _table("analytics", "stg_orders", column("created_at", comment="QA dummy logins cutoff")),
]


@pytest.fixture
def layered(make_project):
    yield from indexed(make_project, scan_files("warehouse", "2026-01-01-000000-aaaa", LAYERED))


def scores(engine, query: str) -> dict[str, float]:
    return {c.uid.split(":", 2)[2]: c.score for c in engine.rank(query, ["table", "column"])}


def test_a_column_lifts_its_copies_in_the_same_tables_other_layers(layered):
    off = scores(with_params(layered, namesake_share=0.0), "qa dummy logins")
    on = scores(with_params(layered, namesake_share=0.9), "qa dummy logins")
    source = on["raw.customers.is_test_account"]
    assert source == pytest.approx(off["raw.customers.is_test_account"])
    assert off.get("analytics.dim_customers.is_test_account", 0.0) < 0.9 * source
    assert on["analytics.dim_customers.is_test_account"] == pytest.approx(0.9 * source)  # dim_ is a layer prefix
    # the table of the best column lifts its own copy in the other layer
    assert on["analytics.dim_customers"] >= 0.9 * on["raw.customers"] - 1e-9 > off.get("analytics.dim_customers", 0.0)
    # same name, another table (weekly_signups is not customers): not lifted
    assert on.get("analytics.weekly_signups.is_test_account", 0.0) == off.get(
        "analytics.weekly_signups.is_test_account", 0.0
    )


def test_a_name_many_tables_share_lifts_nothing(layered):
    # created_at: customers, weekly_signups, orders (fct_ and stg_)
    on = scores(with_params(layered, namesake_share=0.9, namesake_max=2), "dummy logins cutoff")
    assert on["analytics.stg_orders.created_at"] > 0.0
    off = scores(with_params(layered, namesake_share=0.0), "dummy logins cutoff")
    assert on.get("analytics.fct_orders.created_at") == off.get("analytics.fct_orders.created_at")
    lifted = scores(with_params(layered, namesake_share=0.9, namesake_max=3), "dummy logins cutoff")
    assert lifted["analytics.fct_orders.created_at"] == pytest.approx(0.9 * lifted["analytics.stg_orders.created_at"])


WALLETS = """name: balances
table: finance.balances
description: Closing balance per wallet per day
columns:
  - {name: wallet_id, type: string}
  - {name: closing_bal_gbp, type: number, description: Closing balance at the day's rate}
  - {name: is_funded, type: boolean}
  - {name: region_cd, type: string}
measures:
  - {name: customer_funds, expr: sum(CLOSING_BAL_GBP), filter: is_funded = true, description: money held for customers}
"""


def test_a_measure_lifts_the_dimensions_its_sql_reads(make_project):
    """*money held for customers* names the measure; the columns its expression and filter read are what a query
    needs, and come next (to ``measure_share`` of its score), whatever their words; the others stay as they were."""
    root = make_project({"semantic-layer/warehouse/balances.yaml": WALLETS})
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    engine = service.ensure_index()
    assert engine.snapshot.facts.inputs == {
        "sl_measure:warehouse:balances.customer_funds": (
            "sl_dimension:warehouse:balances.closing_bal_gbp",
            "sl_dimension:warehouse:balances.is_funded",
        )
    }

    def ranked(share: float) -> dict[str, float]:
        return {
            c.uid.split(":", 2)[2]: c.score
            for c in with_params(engine, measure_share=share).rank(
                "money held for customers", ["sl_measure", "sl_dimension"]
            )
        }

    off, on = ranked(0.0), ranked(0.9)
    measure = on["balances.customer_funds"]
    assert on["balances.closing_bal_gbp"] == pytest.approx(0.9 * measure)
    assert off.get("balances.closing_bal_gbp", 0.0) < 0.9 * measure
    assert on["balances.is_funded"] == pytest.approx(0.9 * measure)
    assert on.get("balances.region_cd") == off.get("balances.region_cd")
    (root / "semantic-layer/warehouse/balances.yaml").write_text(WALLETS.replace("sum(CLOSING_BAL_GBP)", "count(*)"))
    service.rebuild()  # the facts follow an edit of the measure (a delta)
    assert service.refreshed_engine().snapshot.facts.inputs == {
        "sl_measure:warehouse:balances.customer_funds": ("sl_dimension:warehouse:balances.is_funded",)
    }
    service.close()


def test_with_a_connection_pages_about_other_connections_are_demoted_never_dropped(make_project):
    files = scan_files("warehouse", "2026-01-01-000000-aaaa", CLINIC)
    page = "---\nsummary: Thrombocyte reference ranges\nconnections: [{conn}]\n---\nThrombocyte reference ranges.\n"
    files["wiki/global/ranges-here.md"] = page.format(conn="warehouse")
    files["wiki/global/ranges-elsewhere.md"] = page.format(conn="crm")
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    query = "thrombocyte reference ranges"
    unscoped = {r.id: r.score for r in service.discover_data(query, kinds=["wiki"]).refs}
    scoped = service.discover_data(query, connection_id="warehouse", kinds=["wiki"], explain=True).refs
    assert unscoped["ranges-here"] == pytest.approx(unscoped["ranges-elsewhere"])
    assert [r.id for r in scoped] == ["ranges-here", "ranges-elsewhere"]  # demoted, still there
    elsewhere = scoped[1]
    assert elsewhere.score == pytest.approx(PARAMS.other_connection_page * unscoped["ranges-elsewhere"], abs=1e-3)
    assert elsewhere.lanes is not None and elsewhere.lanes.steps["page_scope"] < 0
    service.close()


def test_a_question_grouped_by_time_lifts_a_date_column_of_its_table(demo_service):
    engine = demo_service.ensure_index()

    def shaped(query: str) -> set[str]:
        kinds = ["table", "column", "sl_source", "sl_dimension"]
        return {c.uid for c in engine.rank(query, kinds) if c.steps.get("shaped")}

    assert "column:warehouse:analytics.fct_deliveries.delivered_at" in shaped("deliveries per week")
    assert not shaped("deliveries")


def test_coherence_lowers_other_connections_in_proportion():
    snap = Snapshot(
        doc_uids=["a", "b", "c", "w"],
        doc_kind=np.array([4, 4, 4, 0], dtype=np.int8),  # three tables and a wiki page
        doc_conn=np.array([0, 0, 1, 2], dtype=np.int32),
    )
    snap.uid_index = UidIndex(snap.doc_uids)
    ranked = [
        Candidate("a", score=0.8),
        Candidate("b", score=0.6),
        Candidate("c", score=0.7),
        Candidate("w", score=0.5),
    ]
    coherence(snap, ranked)
    scores = {c.uid: c.score for c in ranked}
    assert scores["a"] == 0.8 and scores["b"] == 0.6 and scores["w"] == 0.5
    assert scores["c"] == 0.7 * (1 - scoring.PARAMS.coherence * (1 - 0.7 / 1.4))
