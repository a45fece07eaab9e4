"""What gets embedded (index/texts.py): one compact text per schema item, the same for a semantic-layer item and
its scanned twin, heading-aware wiki chunks that overlap so no sentence is only ever cut, and vocabulary words."""

import itertools

from indexers.models import Document, Section, TableRef
from ktx_index.index.texts import (
    CHUNK_WORDS,
    MAX_PAGE_CHUNKS,
    MAX_PAGE_WORDS,
    compact_text,
    embedding_texts,
    partly_embedded,
    vocabulary_words,
    wiki_chunks,
)

ORDERS = TableRef(db="raw", name="orders")


def test_a_source_and_its_scanned_table_read_alike_so_they_are_embedded_once():
    source = Document(
        uid="sl_source:w:orders", kind="sl_source", id="orders", name="orders", path="x",
        description="Customer orders", attrs={"columns": ["order_id", "status"]},
    )  # fmt: skip
    table = Document(
        uid="table:w:raw.orders", kind="table", id="raw.orders", name="orders", display="raw.orders", path="x",
        description="Customer orders", body="order_id status",
    )  # fmt: skip
    assert compact_text(source) == compact_text(table) == "table: orders — Customer orders — columns: order id, status"


def test_a_dimension_and_its_column_read_alike_naming_their_table_and_five_values():
    common = {"name": "status", "path": "x", "table_ref": ORDERS, "sample_values": list("abcdefg")}
    column = Document(uid="column:w:c", kind="column", id="raw.orders.status", display="raw.orders.status",
                      comment="Order state", **common)  # fmt: skip
    dimension = Document(uid="sl_dimension:w:d", kind="sl_dimension", id="orders.status", display="orders.status",
                         description="Order state", **common)  # fmt: skip
    expected = "column: status — in orders — Order state — values: a, b, c, d, e"
    assert compact_text(column) == compact_text(dimension) == expected


def test_a_compact_text_is_capped():
    table = Document(uid="table:w:t", kind="table", id="t", name="t", path="x", description="word " * 400)
    assert len(compact_text(table)) == 1000


def test_wiki_chunks_lead_with_the_title_and_split_long_sections_with_overlap():
    words = [f"w{i}" for i in range(400)]
    page = Document(
        uid="wiki::p", kind="wiki", id="p", name="refund-policy", path="x", summary="How refunds work",
        tags=["finance"], sections=[Section(heading="Damaged", text=" ".join(words)), Section(text="Short one.")],
    )  # fmt: skip
    chunks = wiki_chunks(page)
    assert chunks[0] == "refund policy: How refunds work. tags: finance"
    assert chunks[-1] == "refund policy: Short one."
    pieces = [c.removeprefix("refund policy — Damaged: ").split() for c in chunks[1:-1]]
    assert all(len(p) <= CHUNK_WORDS for p in pieces) and len(pieces) > 2
    assert set().union(*map(set, pieces)) == set(words)  # every word embedded
    assert all(set(a) & set(b) for a, b in itertools.pairwise(pieces))  # neighbours overlap


def test_a_page_without_sections_is_chunked_from_its_body_and_other_kinds_embed_nothing():
    page = Document(uid="wiki::q", kind="wiki", id="q", name="faq", path="x", body="Boxes ship on Mondays.")
    assert embedding_texts(page) == ["faq", "faq: Boxes ship on Mondays."]
    value = Document(uid="dictionary_value:w:x", kind="dictionary_value", id="x", name="x", path="x")
    assert embedding_texts(value) == [] and vocabulary_words(value) == set()


def test_a_page_too_long_to_embed_whole_embeds_its_first_passages_and_says_so():
    sections = [Section(heading=f"Day {i}", text="A line of the log. " * 30) for i in range(300)]  # 150 words each
    page = Document(uid="wiki::log", kind="wiki", id="log", name="log", path="wiki/global/log.md", sections=sections)
    chunks = wiki_chunks(page)
    assert chunks[1].startswith("log — Day 0: ") and sum(len(c.split()) for c in chunks) <= MAX_PAGE_WORDS
    assert len(chunks) > 100 and f"first {len(chunks)} of 301 passages" in (partly_embedded(page) or "")
    page.sections = sections[:10]
    assert partly_embedded(page) is None


def test_a_glossary_of_many_short_sections_is_embedded_whole():
    """An outside pass: 261 short sections (1,833 words) were cut at 200 passages when the cap counted passages."""
    sections = [Section(heading=f"Term {i}", text="A short definition of it.") for i in range(261)]
    page = Document(uid="wiki::g", kind="wiki", id="g", name="glossary", path="x", sections=sections)
    assert len(wiki_chunks(page)) == 262 and partly_embedded(page) is None
    many = [Section(heading=f"T{i}", text="x") for i in range(MAX_PAGE_CHUNKS + 5)]
    assert len(wiki_chunks(page.model_copy(update={"sections": many}))) == MAX_PAGE_CHUNKS


def test_vocabulary_words_are_plain_words_of_names_and_descriptions():
    column = Document(
        uid="column:w:c", kind="column", id="raw.orders.status", name="status", display="raw.orders.status",
        path="x", comment="Order state", description="the 2nd état of an order", table_ref=ORDERS,
    )  # fmt: skip
    assert vocabulary_words(column) == {"order", "orders", "raw", "state", "status"}  # no stopwords, digits, accents
