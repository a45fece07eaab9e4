"""dictionary_search over the demo project: match tiers (exact, folded, token, fuzzy, abbreviation), misses
with their reason, input validation, and the abbreviation rule on its own."""

import pytest
from projects import column, profile_entry, scan_files

from ktx_index.analysis import fold, squash
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import InvalidInput, NotFound
from ktx_index.service import KtxIndex
from ktx_index.tools.dictionary import Entry, abbreviates, abbreviation_score, value_words, within_words


def test_dictionary_tiers_and_tolerance(demo_service):
    result = demo_service.dictionary_search(
        ["family_4", "FAMILY_4", "family 4", "famly_4", "Montreal", "nothing-like-it"]
    )
    by_value = {r.value: r for r in result.results}
    exact = [
        ((m.tableRef.db, m.tableRef.name), m.columnName) for m in by_value["family_4"].matches if m.matchType == "exact"
    ]
    assert (("raw", "subscriptions"), "plan_tier") in exact
    assert all(m.matchType == "exact" for m in by_value["family_4"].matches[: len(exact)])
    assert by_value["FAMILY_4"].matches[0].matchType == "folded"
    assert by_value["family 4"].matches[0].matchType == "token"
    assert by_value["famly_4"].matches[0].matchType == "fuzzy"
    montreal = by_value["Montreal"].matches[0]
    assert montreal.matchedValue == "Montréal" and montreal.matchType == "folded"
    assert by_value["nothing-like-it"].matches == []
    assert {m.reason for m in by_value["nothing-like-it"].misses} <= {"value_not_in_sample", "no_profile_artifact"}
    searched = {s.connectionId: s for s in result.searched}
    assert searched["warehouse"].status == "ready" and searched["warehouse"].coverage.profiledColumns > 0


def test_dictionary_search_validates_inputs(demo_service):
    with pytest.raises(InvalidInput):
        demo_service.dictionary_search([])
    with pytest.raises(InvalidInput, match="at most 20"):
        demo_service.dictionary_search(["a"] * 21)
    with pytest.raises(NotFound, match="Configured connections: dbt, warehouse"):
        demo_service.dictionary_search(["a"], "nope")


def test_an_unknown_connection_is_told_before_a_first_build(make_project):
    """The index of a project nobody indexed is built by its first call; one naming an unknown connection built it
    all before it was told so (discover_data checked first)."""
    table = {"catalog": None, "db": "ops", "name": "orders", "columns": [column("status")]}
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [table])), embedder=HashEmbedder()
    )
    with pytest.raises(NotFound, match="Configured connections: warehouse"):
        service.dictionary_search(["paid"], "nope")
    assert not service.layout.exists()
    service.close()


def test_abbreviations_reach_stored_codes():
    assert abbreviates("APAC", ["asia", "pacific"]) and abbreviates("EMEA", ["europe", "middle", "east", "africa"])
    assert abbreviates("CAD", ["canadian", "dollars"]) and abbreviates("VT", ["vermont"])
    assert abbreviates("apac", ["asia", "pacific"]) and not abbreviates("vet", ["vermont"])
    assert not abbreviates("ON", ["quebec"]) and not abbreviates("CA", ["new", "hampshire"])
    # a code that is a word abbreviates only the words it starts
    assert abbreviates("SD", ["suspended"]) and not abbreviates("SEED", ["suspended"])
    assert (
        abbreviates("SUN", ["sunday"]) and not abbreviates("SUN", ["suspended"]) and abbreviates("PA", ["pennsylvania"])
    )
    # a word of three letters is a code of its own: GBP is no GB, USD no US; a month of four letters is JUN's
    assert not abbreviates("GB", ["gbp"]) and not abbreviates("US", ["usd"]) and abbreviates("ME", ["mega"])
    assert abbreviates("JUN", ["june"]) and abbreviates("JUL", ["july"]) and abbreviates("IRQ", ["iraq"])


def test_a_code_that_keeps_more_of_the_word_scores_higher():
    assert abbreviation_score("PROB", ["probation"]) > abbreviation_score("PR", ["probation"])
    assert abbreviation_score("WAIT", ["waitlisted"]) > abbreviation_score("WI", ["waitlisted"])
    assert abbreviation_score("APAC", ["asia", "pacific"]) == 0.5 > abbreviation_score("VT", ["vermont"])
    assert abbreviation_score("CR", ["city", "riverton"]) < abbreviation_score("APAC", ["asia", "pacific"])


def test_dictionary_finds_a_code_from_the_name_a_person_writes(demo_service):
    result = demo_service.dictionary_search(["Vermont", "Canadian dollars"])
    vermont, dollars = result.results
    assert {(m.columnName, m.matchedValue, m.matchType) for m in vermont.matches} >= {
        ("province_state", "VT", "abbreviation")
    }
    assert any(m.columnName == "currency" and m.matchedValue == "CAD" for m in dollars.matches)


def test_a_fuzzy_match_keeps_the_values_digits(make_project):
    table = {"catalog": None, "db": "sis", "name": "terms", "columns": [column("term_nm")]}
    profile = {"columns": {"terms.term_nm": profile_entry("sis", "terms", "term_nm", ["Fall 2025", "Fall 2026"])}}
    service = KtxIndex(make_project(scan_files("sis", "2026-01-01-000000-aaaa", [table], profile)), embedder=None)
    service.rebuild()
    fall, typo = service.dictionary_search(["Fall 2026", "Fal 2026"]).results
    assert [(m.matchedValue, m.matchType) for m in fall.matches] == [("Fall 2026", "exact")]  # not 'Fall 2025'
    assert [m.matchedValue for m in typo.matches] == ["Fall 2026"]  # a typo in the letters is still forgiven
    service.close()


def test_a_value_one_column_holds_is_one_match_however_many_sources_list_it(make_project):
    """The profile's sample and a hand-written source's enum_values over the same table listed the one column twice
    (an outside pass)."""
    table = {"catalog": None, "db": "cx", "name": "anc_sale", "columns": [column("anc_type_cd")]}
    profile = {"columns": {"anc_sale.anc_type_cd": profile_entry("cx", "anc_sale", "anc_type_cd", ["UPG", "BAG"])}}
    files = scan_files("wh", "2026-01-01-000000-aaaa", [table], profile)
    files["semantic-layer/wh/ancillary_sales.yaml"] = (
        "name: ancillary_sales\ntable: cx.anc_sale\ncolumns:\n  - {name: anc_type_cd, enum_values: [UPG, BAG]}\n"
    )
    service = KtxIndex(make_project(files, config="connections:\n  wh:\n    driver: postgres\n"), embedder=None)
    service.rebuild()
    (bag,) = service.dictionary_search(["BAG"]).results
    assert [(m.tableRef.name, m.columnName, m.matchedValue) for m in bag.matches] == [
        ("anc_sale", "anc_type_cd", "BAG")
    ]
    service.close()


def test_a_word_spelt_right_is_forgiven_one_edit_not_two(make_project):
    """An outside pass: *denied* found the first name 'Daniel' (two edits) as a fuzzy match."""
    table = {"catalog": None, "db": "lib", "name": "holds", "columns": [column("status"), column("patron")]}
    profile = {
        "columns": {
            "holds.status": profile_entry("lib", "holds", "status", ["CANCELED", "FILLED"]),
            "holds.patron": profile_entry("lib", "holds", "patron", ["Daniel", "Maria"]),
        }
    }
    service = KtxIndex(make_project(scan_files("lib", "2026-01-01-000000-aaaa", [table], profile)), embedder=None)
    service.rebuild()
    denied, cancelled, typo = service.dictionary_search(["denied", "cancelled", "Danile"]).results
    assert denied.matches == []
    assert [(m.matchedValue, m.matchType) for m in cancelled.matches] == [("CANCELED", "fuzzy")]
    assert [m.matchedValue for m in typo.matches] == ["Daniel"]  # no English word: two edits still forgiven
    service.close()


def test_a_shorter_value_the_question_names_is_found_by_its_words(make_project):
    table = {"catalog": None, "db": "fa", "name": "awards", "columns": [column("fund_cd"), column("aid_type")]}
    profile = {
        "columns": {
            "awards.fund_cd": profile_entry("fa", "awards", "fund_cd", ["PELL", "SEOG", "Maple Ridge"]),
            "awards.aid_type": profile_entry("fa", "awards", "aid_type", ["Grant", "Loan", "W", "10"]),
        }
    }
    service = KtxIndex(make_project(scan_files("fa", "2026-01-01-000000-aaaa", [table], profile)), embedder=None)
    service.rebuild()
    pell, letter, date = service.dictionary_search(["Federal Pell Grant", "412 W Pecan St", "2025-10-31"]).results
    assert [(m.matchedValue, m.matchType) for m in pell.matches] == [("PELL", "token")]  # 'Grant' is a word alone
    assert not [m for m in letter.matches + date.matches if m.matchType == "token"]  # not 'W', not '10'
    (ridge,) = service.dictionary_search(["Maple Ridge Apartments"]).results
    assert [(m.matchedValue, m.matchType) for m in ridge.matches] == [("Maple Ridge", "token")]  # two words: named
    service.close()


def test_a_value_among_others_in_a_list_is_found_and_the_same_letters_inside_a_word_are_not(make_project):
    """'SLE' is a word of 'SLE, SjS, RA, …' (its comma no part of it) and starts one of 'SLEEP apnoea', while inside
    prose ('the isle') it is only letters, and no match (the shortest value first put 'the isle' on top)."""
    table = {"catalog": None, "db": "lab", "name": "patient", "columns": [column("diagnosis"), column("remarks")]}
    profile = {
        "columns": {
            "patient.diagnosis": profile_entry("lab", "patient", "diagnosis", ["SLE, SjS, RA, polymyositis", "RA"]),
            "patient.remarks": profile_entry("lab", "patient", "remarks", ["the isle", "SLEEP apnoea"]),
        }
    }
    service = KtxIndex(make_project(scan_files("lab", "2026-01-01-000000-aaaa", [table], profile)), embedder=None)
    service.rebuild()
    (sle,) = service.dictionary_search(["SLE"]).results
    assert [m.matchedValue for m in sle.matches] == ["SLE, SjS, RA, polymyositis", "SLEEP apnoea"]
    assert sle.matches[0].score > sle.matches[1].score
    service.close()


def test_a_match_inside_a_value_counts_from_a_word_or_a_run_of_digits():
    def found(value: str, query: str) -> bool:
        entry = Entry(
            "c", value, fold(value), squash(value), frozenset(value_words(fold(value))), "", "", None, None, "profile"
        )
        return within_words(entry, entry.squashed.find(squash(query)), len(squash(query)))

    assert found("ISO-9001 cert", "ISO9001") and found("ISO-9001 cert", "9001") and found("FY2019", "2019")
    assert found("Maple Ridge Apartments", "Ridge Apartments") and found("SLEEP apnoea", "SLE")
    assert not found("the isle", "sle") and not found("20190 rows", "2019")  # inside a word, a longer number
    assert found("NewYorkCity", "york") and found("BuyNowPayLater", "pay later") and found("eCommerceStore", "commerce")
    assert not found("chocolates", "late") and not found("Chocolate", "late")  # letters inside a word


def test_coverage_dates_the_profile_by_its_own_scan(make_project):
    """A newer scan without a profile leaves the dictionary on the older scan's profile: the coverage names that
    scan, and its time, not the newer scan's (syncId and profiledAt disagreed)."""
    table = {"catalog": None, "db": "sis", "name": "terms", "columns": [column("term_nm")]}
    profile = {"columns": {"terms.term_nm": profile_entry("sis", "terms", "term_nm", ["Fall 2025"])}}
    older = scan_files("warehouse", "2026-01-01-000000-aaaa", [table], profile)
    newer = scan_files("warehouse", "2026-02-01-000000-bbbb", [table])
    newer["raw-sources/warehouse/live-database/2026-02-01-000000-bbbb/connection.json"]["extractedAt"] = "2026-02-01"
    service = KtxIndex(make_project({**older, **newer}), embedder=None)
    service.rebuild()
    (searched,) = service.dictionary_search(["Fall 2025"]).searched
    assert (searched.coverage.syncId, searched.coverage.profiledAt) == (
        "2026-01-01-000000-aaaa",
        "2026-01-01T00:00:00Z",
    )
    base = service.root / "raw-sources/warehouse/live-database/2026-01-01-000000-aaaa"
    (base / "connection.json").write_text('{"connectionId": "warehouse"}')  # no time of its own: its report's
    (base / "scan-report.json").write_text('{"connectionId": "warehouse", "createdAt": "2026-01-01T00:05:00Z"}')
    service.rebuild()  # the older scan's files are the snapshot's too: an edit to them is read
    (searched,) = service.dictionary_search(["Fall 2025"]).searched
    assert searched.coverage.profiledAt == "2026-01-01T00:05:00Z"
    service.close()
