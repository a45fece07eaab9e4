from ktx_index.analysis import analyze, expand, fold, identifier_key, query_terms, split_identifier, squash


def test_identifiers_split_and_keep_the_whole():
    assert split_identifier("customerOrderID") == ["customer", "Order", "ID"]
    assert split_identifier("HTTPServer2Go") == ["HTTP", "Server", "2", "Go"]
    assert expand("orbit_raw.accounts") == ["orbit", "raw", "accounts", "orbit_raw.accounts", "orbit_raw"]
    assert "montreal" in analyze("Montréal")


def test_stemming_and_folding_match_both_sides():
    assert analyze("Refunds refunded") == analyze("refund refunded")[:1] + analyze("refunded")
    assert fold("São Paulo") == "sao paulo"
    assert squash("Financial-Services") == squash("financial_services") == "financialservices"
    assert identifier_key(" Raw.Depots ") == identifier_key("raw_depots")


def test_query_terms_drop_stopwords_unless_nothing_else():
    assert query_terms("what is the churn rate by month") == ["churn", "rate", "month"]
    assert query_terms("the") == ["the"]
    assert query_terms("--- ///") == []
