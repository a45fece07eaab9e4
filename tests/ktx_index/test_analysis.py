import pytest

from ktx_index.analysis import (
    abbreviates,
    analyze,
    asks_for_keys,
    english_word,
    expand,
    fold,
    identifier_key,
    is_key_name,
    lemma,
    query_terms,
    regional_spellings,
    split_identifier,
    squash,
)


def test_identifiers_split_and_keep_the_whole():
    assert split_identifier("customerOrderID") == ["customer", "Order", "ID"]
    assert split_identifier("HTTPServer2Go") == ["HTTP", "Server", "2", "Go"]
    assert expand("orbit_raw.accounts") == ["orbit", "raw", "accounts", "orbit_raw.accounts", "orbit_raw"]
    assert "montreal" in analyze("Montréal")


def test_a_hyphenated_word_meets_its_identifier():
    # 'no' and 'show' are question filler: the whole word is all a question keeps of "no-show"
    assert query_terms("no-show rate per vet") == ["no_show", "rate", "vet"]
    assert set(query_terms("no-shows")) <= set(analyze("appointments.no_show"))
    assert expand("carrier-fall-off") == ["carrier", "fall", "off", "carrier_fall_off"]


def test_stemming_and_folding_match_both_sides():
    assert analyze("Refunds refunded") == analyze("refund refunded")[:1] + analyze("refunded")
    assert fold("São Paulo") == "sao paulo"
    assert squash("Financial-Services") == squash("financial_services") == "financialservices"
    assert identifier_key(" Raw.Depots ") == identifier_key("raw_depots")


def test_query_terms_drop_stopwords_unless_nothing_else():
    assert query_terms("what is the churn rate by month") == ["churn", "rate", "month"]
    assert query_terms("the") == ["the"]
    assert query_terms("--- ///") == []


def test_a_contraction_leaves_no_fragments_behind():
    assert query_terms("clients who didn't turn up") == ["client", "turn"]
    assert query_terms("orders that haven't shipped, they're late") == ["order", "ship", "late"]


def test_words_that_ask_what_an_answer_should_be_are_filler():
    assert query_terms("what does DMA stand for") == ["dma"]
    assert query_terms("HCF abbreviation in the FAQ") == ["hcf"]
    assert query_terms("taxi stand locations") == ["taxi", "stand", "locat"]  # a stand is a thing too


def test_regional_spellings_go_both_ways_and_leave_short_words_alone():
    assert regional_spellings("centre") == ["center"] and regional_spellings("center") == ["centre"]
    assert regional_spellings("organisation") == ["organization"] and regional_spellings("colour") == ["color"]
    assert regional_spellings("licence") == ["license"] and regional_spellings("catalogue") == ["catalog"]
    assert regional_spellings("four") == [] and regional_spellings("sales") == []


def test_question_filler_is_dropped_before_stemming():
    # 'does' stems to 'doe' and 'has' to 'ha': compared after stemming they slipped through
    assert query_terms("how many customers does each region have") == ["custom", "region"]
    assert query_terms("which drivers has the team got") == ["driver", "team"]


def test_irregular_forms_meet_their_lemma_on_both_sides():
    assert lemma("paid") == "pay" and lemma("bought") == "buy" and lemma("children") == "child"
    assert query_terms("when did members pay their dues") == query_terms("when were members paid dues")
    assert set(analyze("amount_paid")) >= set(analyze("pay"))
    # regular forms and identifiers keep their spelling (the stemmer relates those already)
    assert lemma("drivers") == "drivers" and lemma("CDSCode") == "CDSCode" and lemma("data") == "data"


def test_camel_split_fast_path_agrees_with_the_boundary_rules():
    from ktx_index.analysis import _camel_parts

    cases = {
        "customer": ["customer"], "Customer": ["Customer"], "HTTP": ["HTTP"], "Montréal": ["Montréal"],
        "HTTPServer2Go": ["HTTP", "Server", "2", "Go"], "aB": ["a", "B"], "ÉtéX": ["Été", "X"], "abc9": ["abc", "9"],
        "": [],
    }  # fmt: skip
    for piece, parts in cases.items():
        assert _camel_parts(piece) == parts, piece


@pytest.mark.parametrize(
    ("column", "key"),
    [
        ("id", True), ("artist_id", True), ("customerID", True), ("Customer ID", True), ("custid", True),
        ("order_key", True), ("balance", False), ("paid", False), ("is_valid", False), ("amount_prepaid", False),
        ("squid", False), ("grid", False), ("genre", False), ("uuid", True), ("thyroid", False),
        ("has_covid", False),
    ],
)  # fmt: skip
def test_a_key_column_is_named_like_one(column: str, key: bool) -> None:
    assert is_key_name(column) is key


def test_a_question_asks_for_keys_by_an_id_word_or_a_named_key() -> None:
    assert asks_for_keys("customer id of each order") and asks_for_keys("orders by customer_id")
    assert asks_for_keys("the primary key of invoices") and asks_for_keys("orderID")
    assert not asks_for_keys("the key drivers of churn") and not asks_for_keys("idle accounts")


def test_english_words_are_known_in_any_form_and_made_up_ones_are_not():
    assert all(english_word(w) for w in ("renters", "flagged", "troublesome", "brought", "Discs"))
    assert not any(english_word(w) for w in ("zxqv", "blorp", "kubernetes", "sku", "42", "on-time"))


@pytest.mark.parametrize(
    ("short", "word"),
    [("pymt", "payment"), ("cust", "customer"), ("rdg", "reading"), ("whse", "warehouse"), ("divd", "dividend"),
     ("amt", "amount"), ("svc", "service"), ("wrtn", "written"), ("shpmt", "shipment"), ("mgr", "manager"),
     ("ptwy", "putaway"),  # two English words run together, which the lexicon does not list
     ("hydrnt", "hydrant"), ("plnt", "plant")],  # one vowel dropped (an outside pass's water utility)
)  # fmt: skip
def test_a_warehouse_abbreviation_is_the_words_start_then_its_consonants(short, word):
    assert abbreviates(short, word)


@pytest.mark.parametrize(
    ("short", "word", "why"),
    [
        ("lat", "located", "skips to a vowel"),
        ("ast", "against", "skips two consonants"),
        ("pol", "portfolio", "skips three"),
        ("min", "minutes", "three letters that start minimum as well"),
        ("tot", "total", "an English word"),
        ("cd", "code", "two letters stand for too many words"),
        ("adj", "adjustment", "under a third of the word"),
        ("pay", "payment", "an English word"),
        ("lang", "languague", "a typo, corrected instead"),
        ("pre", "purchase", "three letters ending on the word's last: not 'whse'"),
        ("stat", "state", "the last vowel dropped: 'stat' is status or statistic as often"),
        ("stats", "status", "a vowel of its last two letters dropped: 'stats' is statistics as often"),
        ("totl", "total", "a vowel of its last two letters dropped"),
        ("lnk", "link", "one vowel dropped from three letters"),
    ],
)
def test_what_is_not_taken_for_an_abbreviation(short, word, why):
    assert not abbreviates(short, word), why
