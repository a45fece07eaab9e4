"""discover_data over the demo project (real stores, fake embedder): exact names first, bounded scores and
short snippets, the confidence field, one ref per physical table, the filters and typo tolerance."""

import pytest
from projects import column, scan_files, scan_table, sqlite_indexed

from indexers.models import Document, TableRef
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import InvalidInput, NotFound
from ktx_index.search.candidate import Candidate
from ktx_index.service import KtxIndex
from ktx_index.snapshot.joins import condition_key
from ktx_index.tools.discover import _merge_twin, twins_beyond
from ktx_index.tools.results import DiscoverRef


def test_exact_identifier_ranks_first_with_top_tier_score(demo_service):
    for query, expected in [
        ("courier_weekly_scorecard", ("sl_source", "courier_weekly_scorecard")),
        ("Courier Weekly Scorecard", ("sl_source", "courier_weekly_scorecard")),
        ("raw.depots", ("sl_source", "depots")),
        ("fiscal-calendar", ("wiki", "fiscal-calendar")),
    ]:
        refs = demo_service.discover_data(query).refs
        assert (refs[0].kind, refs[0].id) == expected, query
        assert refs[0].score >= 0.9


def test_scores_are_bounded_sorted_and_snippets_short(demo_service):
    refs = demo_service.discover_data("refund reasons for damaged boxes", limit=50).refs
    assert refs
    scores = [r.score for r in refs]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert all(r.snippet is None or len(r.snippet.replace("<mark>", "").replace("</mark>", "")) <= 200 for r in refs)
    assert any("<mark>" in (r.snippet or "") for r in refs)


#: The fields KTX explains each kind by (reference §2.5; its discover test holds tables and columns to theirs), and a
#: dimension's values, which KTX does not index.
KTX_FIELDS = {
    "wiki": {"name", "description", "body"},
    "sl_source": {"name", "description", "display"},
    "sl_measure": {"name", "description", "expr"},
    "sl_dimension": {"name", "display", "description", "expr", "sample_value"},
    "table": {"name", "display", "description", "comment"},
    "column": {"name", "display", "description", "comment", "sample_value"},
}


@pytest.mark.parametrize("query", ["courier depot", "refund reasons for damaged boxes", "delivery window status"])
def test_every_ref_is_matched_on_a_field_ktx_gives_its_kind(demo_service, query):
    """A table matched by its column names said ``body``, which KTX never gives a table (the forty-sixth
    session's list of what was left)."""
    for ref in demo_service.discover_data(query, limit=50).refs:
        assert ref.matchedOn in KTX_FIELDS[ref.kind], (query, ref.kind, ref.id, ref.matchedOn)


def test_a_longer_limit_is_filled_with_the_nearest_items_and_begins_as_the_default_answer(make_project):
    """The dense lane keeps its ``dense_nearest`` best whatever their cosine, so a limit of 50 returned 10 of a
    project's 21 tables (an outside pass); the answer now fills up to the limit, nearest first, at score 0."""
    words = "meter reservoir hydrant invoice crew valve pump sample outage tariff leak main pipe account premise"
    tables = [scan_table(f"{word}_{i}", [column("id"), column(f"{word}_note")]) for i, word in
              enumerate(words.split() * 2)]  # fmt: skip
    service, _snap = sqlite_indexed(make_project, tables)
    short = service.discover_data("meter", None, ["table"], 10).refs
    full = service.discover_data("meter", None, ["table"], 50).refs
    assert len(full) == len(tables) and len({r.id for r in full}) == len(tables)
    assert [r.id for r in full[: len(short)]] == [r.id for r in short]
    assert [r.score for r in full] == sorted((r.score for r in full), reverse=True)
    service.close()


def test_a_source_matched_on_its_usage_notes_shows_them_marked(make_project):
    """Named ``description`` as KTX names such a match, its snippet was cut from the description, where the words
    are not (a second read of the change)."""
    files = {
        "semantic-layer/warehouse/orders.yaml": "name: orders\nsql: select 1 as n\ndescriptions: {user: Customer "
        "orders.}\nusage: {narrative: Finance groups them by territory every Monday.}\ncolumns:\n  - {name: n}\n"
    }
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    (ref,) = [r for r in service.discover_data("territory", kinds=["sl_source"]).refs if r.id == "orders"]
    assert ref.matchedOn == "description" and "<mark>territory</mark>" in (ref.snippet or "")
    service.close()


def test_a_ref_standing_for_twins_is_stale_when_either_is(make_project):
    """A column merged with its dimension from a shard that broke carried no ``stale`` when the column, whose scan
    file is fine, ranked first (an outside pass)."""
    columns = [column("dly_cd"), column("dly_cd_desc", comment="Free text explaining it to passengers")]
    table = {"catalog": None, "db": "ops", "name": "dly_cd_ref", "columns": columns}
    shard = "semantic-layer/warehouse/_schema/ops.yaml"
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files[shard] = (
        "tables:\n  dly_cd_ref:\n    table: ops.dly_cd_ref\n    columns:\n      - {name: dly_cd, type: string}\n"
        "      - {name: dly_cd_desc, type: string, descriptions: {ai: What a delay code means.}}\n"
    )
    root = make_project(files)
    service = KtxIndex(root, embedder=HashEmbedder())
    service.rebuild()
    (root / shard).write_text("tables:\n  : : bad\n")
    service.rebuild()
    refs = service.discover_data("explaining to passengers", limit=10).refs  # the column's words, not the shard's
    merged = [r for r in refs if r.columnName == "dly_cd_desc"]
    assert merged and all(r.stale and "ops.yaml" in r.stale for r in merged)
    service.close()


def test_nonsense_query_returns_nothing_or_says_it_is_unsure(demo_service):
    # the fake embedder's cosines are hash collisions, so the noise calibration cannot tell nonsense from a
    # weak match here; with the real model it returns nothing (test_quality_floor.py)
    found = demo_service.discover_data("zxqv blorp frobnicate")
    assert found.refs == [] or found.confidence == "low"
    pages = demo_service.wiki_search("zxqv blorp frobnicate")
    assert pages.results == [] or pages.confidence == "low"


@pytest.mark.parametrize("query", ["   ", "?!?"])
def test_a_query_of_no_words_is_told_to_send_words(demo_service, query):
    """Every door (the CLI answered ``?!?`` with an empty list, which reads as "nothing here")."""
    for search in (demo_service.discover_data, demo_service.wiki_search):
        with pytest.raises(InvalidInput, match=r"holds no words; send what to search for"):
            search(query)
    with pytest.raises(InvalidInput, match=r'values\[1\] \("  "\) holds no characters but spaces; send'):
        demo_service.dictionary_search(["paid", "  "])


def test_a_search_of_no_words_is_refused_before_a_first_build(make_project):
    """Refused before the index a first call builds: the refusal moved from the MCP layer to the tools, after the
    build, for a while (a second read of the change found it)."""
    table = {"catalog": None, "db": "ops", "name": "orders", "columns": [column("status")]}
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [table])), embedder=HashEmbedder()
    )
    for refused in (
        lambda: service.discover_data("?!?"),
        lambda: service.wiki_search("   "),
        lambda: service.dictionary_search(["  "]),
        lambda: service.dictionary_search([]),
    ):
        with pytest.raises(InvalidInput):
            refused()
    assert not service.layout.exists()
    service.close()


def test_a_confident_answer_carries_no_confidence_field(demo_service):
    found = demo_service.discover_data("delivery status")
    assert found.refs and found.confidence is None
    assert "confidence" not in found.model_dump(exclude_none=False)


class Unloadable(HashEmbedder):
    """A model that fails on every question (its files gone, say), through the same seam as the real one."""

    def encode(self, texts):
        raise OSError("model could not be loaded")


def test_an_answer_says_when_search_by_meaning_left_part_of_the_project_out(make_project):
    """A first start answers before the texts are embedded (serve embeds them in the background): the answer says
    so, and says nothing once every document has its vector."""
    orders = {"catalog": None, "db": "shop", "name": "orders", "columns": [column("order_status")]}
    project = make_project(scan_files("pg", "2026-01-01-000000-local-a", [orders]))
    service = KtxIndex(project, embedder=HashEmbedder())
    service.rebuild(embed=False)
    lexical = service.discover_data("order status")
    assert lexical.refs and lexical.semantic is not None and lexical.semantic.startswith("no vectors yet")
    service.embed_pending()
    assert service.discover_data("order status").semantic is None
    assert "semantic" not in service.discover_data("order status").model_dump()
    service.close()
    failing = KtxIndex(project, embedder=Unloadable())  # the index holds vectors; the question cannot be embedded
    assert "model could not be loaded" in (failing.discover_data("order status").semantic or "")
    failing.close()
    off = KtxIndex(make_project(scan_files("pg", "2026-01-01-000000-local-a", [orders])), embedder=None)
    off.rebuild()
    assert off.discover_data("order status").semantic is None  # embeddings switched off: nothing to say
    off.close()


def test_explain_says_why_the_answer_is_confident_and_nothing_else_does(demo_service):
    explained = demo_service.discover_data("courier_weekly_scorecard", explain=True)
    assert explained.confidenceReason == "the question names sl_source:warehouse:courier_weekly_scorecard exactly"
    assert explained.refs[0].lanes is not None and explained.refs[0].lanes.exact
    weak = demo_service.discover_data("zxqv blorp frobnicate", explain=True)  # the fake embedder decides which
    reason = weak.confidenceReason or ""
    assert reason and (weak.refs == []) == reason.startswith("no document matches its words beyond chance")
    plain = demo_service.discover_data("courier_weekly_scorecard")
    assert plain.confidenceReason is None and "confidenceReason" not in plain.model_dump()


def test_sl_source_and_scanned_table_are_one_ref_carrying_the_table_ref(demo_service):
    refs = demo_service.discover_data("depots", connection_id="warehouse", limit=20).refs
    physical = [r for r in refs if r.kind in ("sl_source", "table") and r.id in ("depots", "raw.depots")]
    assert len(physical) == 1
    assert physical[0].kind == "sl_source" and physical[0].tableRef is not None
    assert physical[0].tableRef.db == "raw" and physical[0].tableRef.name == "depots"
    only_tables = demo_service.discover_data("depots", connection_id="warehouse", kinds=["table"]).refs
    assert only_tables[0].kind == "table" and only_tables[0].id == "raw.depots"


def test_kinds_and_connection_filters(demo_service):
    refs = demo_service.discover_data("delivery status", kinds="column".split(), connection_id="warehouse").refs
    assert refs and all(r.kind == "column" and r.connectionId == "warehouse" for r in refs)
    refs = demo_service.discover_data("delivery status", connection_id="dbt", limit=30).refs
    assert all(r.connectionId in (None, "dbt") for r in refs)
    with pytest.raises(NotFound, match="Configured connections: dbt, warehouse"):
        demo_service.discover_data("x", connection_id="nope")
    with pytest.raises(InvalidInput, match="use any of"):
        demo_service.discover_data("x", kinds=["tables"])
    assert len(demo_service.discover_data("orders", limit=500).refs) <= 50


def test_typo_in_identifier_still_finds_it(demo_service):
    refs = demo_service.discover_data("weekly_box_capacty").refs
    assert any(r.id.endswith("weekly_box_capacity") for r in refs[:3])


def test_a_join_seen_from_each_table_is_listed_once(demo_service):
    assert condition_key("a.x = b.x AND a.y = b.y") == condition_key("b.y = a.y and b.x = a.x")
    kinds = ["sl_source", "sl_measure", "sl_dimension", "wiki"]
    joins = demo_service.discover_data("active subscribers", None, kinds, 50).joins or []
    pairs = [frozenset((j.from_, j.to)) for j in joins]
    assert joins and len(pairs) == len(set(pairs))


def test_one_table_holds_at_most_five_refs_of_ten_and_half_of_a_longer_answer(demo_service):
    def most_members(limit: int) -> int:
        refs = demo_service.discover_data("courier weekly scorecard", limit=limit).refs
        owners = [r.id.rsplit(".", 1)[0] for r in refs if r.kind in ("column", "sl_dimension", "sl_measure")]
        return max(owners.count(owner) for owner in owners)

    assert most_members(10) == 5
    assert 5 < most_members(30) <= 15


def test_a_chosen_table_gets_its_source_even_from_below_the_candidates_read(demo_service):
    """Twins were merged only when both fell among the candidates read, which grow with ``limit``: a table came as
    ``table`` at one limit and as its source at another. A chosen table whose source ranked lower gets it anyway."""
    engine = demo_service.refreshed_engine()
    table = engine.documents(["table:warehouse:raw.depots"])["table:warehouse:raw.depots"]
    assert engine.snapshot.facts.twins(table.uid) == {"sl_source:warehouse:depots"}
    chosen = [(Candidate(table.uid), table, [])]
    twins_beyond(engine, engine.snapshot, chosen, ["table", "sl_source"])
    assert [d.uid for d in chosen[0][2]] == ["sl_source:warehouse:depots"]
    chosen = [(Candidate(table.uid), table, [])]
    twins_beyond(engine, engine.snapshot, chosen, ["table"])  # a kind the caller left out is not merged in
    assert chosen[0][2] == []
    uids = ["column:warehouse:raw.depots.city", "sl_dimension:warehouse:depots.city"]
    column, dimension = (engine.documents(uids)[uid] for uid in uids)
    chosen = [(Candidate(column.uid), column, []), (Candidate(dimension.uid), dimension, [])]
    twins_beyond(engine, engine.snapshot, chosen, ["column", "sl_dimension"])  # a member's twin: the same column
    assert [[d.uid for d in twins] for _c, _d, twins in chosen] == [uids[1:], uids[:1]]


def test_a_table_in_many_roles_comes_with_the_roles_the_refs_hold():
    """A match's 22 player slots buried its one join to the teams: past four roles, those whose key column is a
    ref come (or the first two), and a pair of tables in few roles keeps every one."""
    from ktx_index.tools.answer_joins import fewest_roles
    from ktx_index.tools.results import JoinOut

    slots = [f"home_player_{i}" for i in range(1, 12)]
    joins = [JoinOut(from_="Match", to="Player", on=f"Match.{s} = {s}.id", alias=s) for s in slots]
    joins += [JoinOut(from_="Match", to="Team", on="Match.home_team = home_team.id", alias="home_team")]
    joins += [JoinOut(from_="Match", to="Team", on="Match.away_team = away_team.id", alias="away_team")]
    keys = [{f"column:c:Match.{s}"} for s in slots] + [{"column:c:Match.home_team"}, {"column:c:Match.away_team"}]
    held = fewest_roles(joins, keys, {"column:c:Match.home_player_3", "column:c:Match.home_player_7"})
    assert [j.alias for j in held] == ["home_player_3", "home_player_7", "home_team", "away_team"]
    assert [j.alias for j in fewest_roles(joins, keys, set())] == [
        "home_player_1",
        "home_player_2",
        "home_team",
        "away_team",
    ]
    assert fewest_roles(joins[-2:], keys[-2:], set()) == joins[-2:]


def test_a_semantic_layer_ref_names_its_table_whatever_kinds_were_asked(demo_service):
    """A source's tableRef came from its scanned twin, so asking for sources alone dropped it."""
    for kinds in (["sl_source"], ["sl_source", "table"]):
        refs = demo_service.discover_data("active subscribers", None, kinds, 10).refs
        sources = [r for r in refs if r.kind == "sl_source" and r.id == "subscriptions"]
        assert sources and sources[0].tableRef is not None, kinds


def test_a_source_ref_has_its_own_summary_whichever_twin_ranked_higher(make_project):
    """Merged with its scanned table, a source showed the warehouse comment when the table ranked higher, and the
    team's description when sources alone were asked for."""
    table = {
        "catalog": None,
        "db": "raw",
        "name": "refunds",
        "comment": "Refunds in GBP.",
        "columns": [column("id", "int")],
    }
    files = scan_files("warehouse", "2026-01-01-000000-local-a", [table])
    files["semantic-layer/warehouse/refunds.yaml"] = (
        "name: refunds\ntable: raw.refunds\ngrain: [id]\ndescriptions: {user: Refunds; exclude chargebacks.}\n"
        "columns:\n  - {name: id, type: number}\n"
    )
    service = KtxIndex(make_project(files), embedder=HashEmbedder())
    service.rebuild()
    for kinds in (None, ["sl_source"], ["table", "sl_source"]):
        (ref,) = [r for r in service.discover_data("refunds in GBP", None, kinds, 10).refs if r.id == "refunds"]
        assert (ref.kind, ref.summary) == ("sl_source", "Refunds; exclude chargebacks."), kinds
    service.close()
    # a source without a description of its own, ranked above its table, keeps the warehouse's
    source = DiscoverRef(kind="sl_source", id="refunds", score=0.5, summary=None, snippet=None, matchedOn="name")
    table_ref = TableRef(catalog=None, db="raw", name="refunds")
    _merge_twin(source, Document(uid="table:w:raw.refunds", kind="table", id="raw.refunds", path="t.json",
                                 name="refunds", summary="Refunds in GBP.", table_ref=table_ref))  # fmt: skip
    assert (source.kind, source.summary, source.tableRef.name) == ("sl_source", "Refunds in GBP.", "refunds")
    # a table matched on its scanned comment, ranked above its source, is explained as KTX explains a source
    table = DiscoverRef(kind="table", id="raw.refunds", score=0.5, summary=None, snippet=None, matchedOn="comment")
    _merge_twin(table, Document(uid="sl_source:w:refunds", kind="sl_source", id="refunds", path="s.yaml",
                                name="refunds"))  # fmt: skip
    assert (table.kind, table.id, table.matchedOn) == ("sl_source", "refunds", "description")


def _shop_table(name: str, names: list[str], keys: list[tuple[str, str]] = ()) -> dict:
    """A table of the shop schema: ``*id`` columns are integers; ``keys``: (column, table it references by id)."""
    columns = [column(c, "integer", "number") if c.endswith("id") else column(c) for c in names]
    fks = [
        {"fromColumn": c, "toCatalog": None, "toDb": "shop", "toTable": t, "toColumn": "id", "constraintName": c}
        for c, t in keys
    ]
    return {"catalog": None, "db": "shop", "name": name, "kind": "table", "comment": None, "columns": columns,
            "foreignKeys": fks}  # fmt: skip


def test_joins_connect_the_refs_that_matched_not_the_leads_after_them(make_project):
    """Past what matches, an answer goes on with the nearest items at score 0: leads, whose joins to each other
    (orders to customers, for a question about a product's colour) were noise an agent pasted into its SQL."""
    tables = [
        _shop_table("customers", ["id", "full_name"]),
        _shop_table("orders", ["id", "customer_id", "placed_on"], [("customer_id", "customers")]),
        _shop_table("products", ["id", "title", "colour"]),
        _shop_table("order_lines", ["id", "order_id", "product_id", "qty"], [("order_id", "orders"), ("product_id", "products")]),
    ]  # fmt: skip
    service = KtxIndex(make_project(scan_files("warehouse", "2026-01-01-000000-a", tables)), embedder=HashEmbedder())
    service.rebuild()
    answer = service.discover_data("colour", kinds=["table", "column"])
    assert answer.refs[0].id == "shop.products.colour" and any(ref.score == 0 for ref in answer.refs)
    assert answer.joins is None
    lines = service.discover_data("order lines quantity and product colour", kinds=["table", "column"])
    assert {(j.from_, j.to) for j in lines.joins or []} >= {("shop.order_lines", "shop.products")}
    service.close()


def test_no_join_is_offered_on_a_column_the_scan_no_longer_holds(make_project):
    """A foreign key whose column a table file no longer lists (renamed by hand since the scan) is no join to paste
    (an outside pass: ``appt.pt_id = pt.pt_id`` after pt_id became patient_id)."""
    tables = [
        _shop_table("customers", ["customer_no", "full_name"]),  # its key is no longer ``id``
        _shop_table("orders", ["id", "customer_id", "placed_on"], [("customer_id", "customers")]),
    ]
    service = KtxIndex(make_project(scan_files("warehouse", "2026-01-01-000000-a", tables)), embedder=HashEmbedder())
    service.rebuild()
    answer = service.discover_data("customers full name and orders placed on", kinds=["table", "column"])
    assert {r.id for r in answer.refs} >= {"shop.customers", "shop.orders"} and answer.joins is None
    service.close()
