"""Explaining a hit: which field matched (by boosted share of the query terms), and snippets per kind with the
matched words marked, within KTX's 200 characters."""

from __future__ import annotations

from indexers.models import Document, Section
from ktx_index.analysis import term_set
from ktx_index.search.snippets import (
    EXPLAINED_CHARS,
    SNIPPET_CHARS,
    cap,
    highlight,
    matched_on,
    snippet,
    snippet_around,
    warm,
)


def doc(kind: str, **fields) -> Document:
    return Document(uid=f"{kind}:w:x", kind=kind, id="x", name=fields.pop("name", "x"), path="x", **fields)


def plain(text: str) -> str:
    return text.replace("<mark>", "").replace("</mark>", "")


def test_highlight_marks_every_form_of_a_query_term_and_nothing_else():
    text = "Refunds are processed weekly; a refund needs a reason."
    assert highlight(text, term_set("refund")) == (
        "<mark>Refunds</mark> are processed weekly; a <mark>refund</mark> needs a reason."
    )
    assert highlight(text, term_set("pancake")) == text


def test_highlight_counts_the_marks_in_the_limit_and_never_cuts_inside_one():
    assert highlight("Refunds are processed weekly", term_set("refund"), limit=20) == "<mark>Refunds</mark>"
    assert highlight("aaa Refunds bbb", term_set("refund"), limit=8) == "aaa Refu"  # no room for the marks


def test_snippet_around_starts_at_a_word_before_the_first_match_collapsed_and_capped():
    text = "Filler words here " * 10 + "and then the refund policy applies   to\n\nevery   box " + "tail text " * 40
    got = snippet_around(text, term_set("refund"))
    assert len(got) <= SNIPPET_CHARS and "<mark>refund</mark> policy applies to every box" in got
    before = plain(got).split("refund")[0]
    assert 40 <= len(before) <= 60 and text.split("refund")[0].endswith(before)  # a whole word, ≤ 60 chars back
    assert snippet_around("", term_set("refund")) is None
    assert snippet_around("no match here at all", term_set("refund")) == "no match here at all"


def test_matched_on_is_the_field_with_the_largest_boosted_share_of_the_terms():
    measure = doc("sl_measure", name="refund_total", expr="sum(refund_amount)")
    assert matched_on(measure, term_set("refund amount")) == "name"  # one name term outweighs two expr terms
    assert matched_on(measure, term_set("amount")) == "expr"
    column = doc("column", name="status", sample_values=["refunded", "paid"])
    assert matched_on(column, term_set("refunded")) == "sample_value"


def test_matched_on_without_a_matching_term_falls_back_by_kind_and_what_the_document_has():
    nothing = {"zzz"}
    assert matched_on(doc("wiki"), nothing) == "body"
    assert matched_on(doc("table", description="d", comment="c"), nothing) == "description"
    assert matched_on(doc("table", comment="c"), nothing) == "comment"
    assert matched_on(doc("table"), nothing) == "name"


def test_matched_on_is_one_of_the_fields_ktx_gives_the_kind():
    """A table's column names and a source's usage notes are our fields, not KTX's: explained as the field KTX shows
    them under, never ``body`` (KTX's discover test: a table is matched on name, description, comment or display)."""
    table = doc("table", name="orders", description="Customer orders", body="id status depot_id")
    assert matched_on(table, term_set("depot")) == "name"
    assert matched_on(table, term_set("customer")) == "description"
    source = doc("sl_source", name="orders", body="Filter on paid orders; group by region")
    assert matched_on(source, term_set("region")) == "description"
    assert matched_on(doc("wiki", body="Regions are sales areas"), term_set("region")) == "body"
    measure = doc("sl_measure", name="total", display="refunds.total")  # KTX gives a measure no display
    assert matched_on(measure, term_set("refunds")) == "name"


def test_snippets_per_kind():
    column = doc("column", name="status", sample_values=["refunded", "paid"], attrs={"nativeType": "text"})
    assert snippet(column, "sample_value", term_set("refunded")) == "text - samples: <mark>refunded</mark>, paid"
    assert snippet(column, "name", term_set("status")) == "text"  # a name match shows the type
    table = doc("table", name="orders", body="id status amount created_at courier_id depot_id")
    assert snippet(table, "name", term_set("status")) == "<mark>status</mark>, id, amount, created_at, courier_id"
    assert snippet(table, "name", term_set("depot")) == "<mark>depot_id</mark>, id, status, amount, created_at"
    measure = doc("sl_measure", name="refund_total", expr="sum(refund_amount)")
    assert snippet(measure, "expr", term_set("refund")) == "sum(<mark>refund_amount</mark>)"
    source = doc("sl_source", name="orders", attrs={"measures": ["order_count"], "columns": ["status", "id", "x"]})
    assert snippet(source, "name", term_set("status")) == "orders: order_count, <mark>status</mark>, id"
    noted = doc("sl_source", name="orders", description="Customer orders", body="Finance groups by region weekly.")
    # matched on its usage notes, which KTX names description: cut from the notes, not the description
    assert snippet(noted, "body", term_set("region")) == "Finance groups by <mark>region</mark> weekly."


def test_a_wiki_snippet_comes_from_the_section_holding_the_most_terms_else_the_summary():
    page = doc(
        "wiki",
        summary="How refunds work",
        body="Intro. Boxes. Refunds for damaged boxes.",
        sections=[Section(heading="Intro", text="Boxes ship weekly."), Section(text="Refunds for damaged boxes.")],
    )
    assert snippet(page, "body", term_set("damaged refund")) == "<mark>Refunds</mark> for <mark>damaged</mark> boxes."
    assert snippet(doc("wiki", summary="How   refunds\nwork"), "body", term_set("refund")) == "How refunds work"


def test_cap_collapses_whitespace_and_truncates():
    assert cap("  a   b \n c  ") == "a b c"
    assert len(cap("x" * 500)) == SNIPPET_CHARS
    assert cap(None) is None and cap("") is None


def test_warm_analyses_fields_and_words_until_the_room_is_used():
    term_set.cache_clear()
    docs = [doc("column", name=f"col_{i}", description=f"Refunds issued in week {i}") for i in range(5)]
    assert warm(docs, room=10_000) == 5
    assert term_set.cache_info().currsize >= 10 and term_set.cache_info().hits + term_set.cache_info().misses > 0
    before = term_set.cache_info().misses
    highlight("Refunds issued in week 3", term_set("refund"))
    assert term_set.cache_info().misses == before + 1  # only the query's own text was new
    term_set.cache_clear()
    assert warm(docs, room=1) == 1  # stops once the cache holds room texts


def test_a_huge_page_is_explained_from_its_first_characters():
    """A 10 MB page took 3 s to explain (every section analysed): its snippet comes from its first sections."""
    filler = [Section(heading=f"Entry {i}", text="night shift " * 500) for i in range(EXPLAINED_CHARS // 6000 + 20)]
    page = Document(
        uid="wiki::log", kind="wiki", id="log", name="log", path="x", summary="Ops log",
        sections=[Section(heading="First", text="The feed was reloaded."), *filler, Section(text="zeppelin")],
    )  # fmt: skip
    assert "<mark>reloaded</mark>" in (snippet(page, "body", term_set("reloaded")) or "")
    assert snippet(page, "body", term_set("zeppelin")) == "Ops log"  # past the explained part: the summary
