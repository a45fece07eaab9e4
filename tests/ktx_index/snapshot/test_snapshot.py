"""The snapshot's identifier map (each dotted suffix of a name, from cached per-part keys) and its member →
container links."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from indexers.models import CONTAINER_KINDS, CONTAINER_OF, SEARCH_KINDS
from ktx_index.analysis import identifier_key
from ktx_index.snapshot.snapshot import (
    CONTAINER_CODES,
    KIND_CODE,
    Snapshot,
    curated,
    exact_keys,
    nearest_key,
    parent_uid,
)


def naive_keys(*names: str | None) -> set[str]:
    keys = set()
    for text in names:
        parts = (text or "").split(".")
        for i in range(len(parts)):
            if key := identifier_key(".".join(parts[i:])):
                keys.add(key)
    return keys


def test_dotted_suffixes_are_keys() -> None:
    assert exact_keys("main.Sales.SalesOrderHeader") == {
        "mainsalessalesorderheader",
        "salessalesorderheader",
        "salesorderheader",
    }
    assert exact_keys(None, "", "orders") == {"orders"}


@given(st.lists(st.one_of(st.none(), st.text(alphabet="aZé_.- 9\u0301ß", max_size=12)), max_size=3))
def test_same_keys_as_squashing_each_suffix(names: list[str | None]) -> None:
    assert exact_keys(*names) == naive_keys(*names)


def full_scan(keys_by_length: dict[int, list[str]], key: str, edits: int) -> tuple[str, int] | None:
    """The nearest key by a Damerau-Levenshtein scan of every key of a possible length (the reference)."""
    near = None
    for length in range(len(key) - edits, len(key) + edits + 1):
        found = process.extractOne(
            key, keys_by_length.get(length, ()), scorer=DamerauLevenshtein.distance, score_cutoff=edits
        )
        if found is not None and (near is None or found[1] < near[1]):
            near = (found[0], found[1])
    return near


@settings(max_examples=300)
@given(
    st.lists(st.text(alphabet="abcde", min_size=1, max_size=9), min_size=1, max_size=40),
    st.text(alphabet="abcde", min_size=1, max_size=9),
    st.integers(1, 2),
)
def test_nearest_key_is_the_full_scans_answer(keys: list[str], key: str, edits: int) -> None:
    by_length: dict[int, list[str]] = {}
    for k in sorted(set(keys)):
        by_length.setdefault(len(k), []).append(k)
    assert nearest_key(by_length, key, edits) == full_scan(by_length, key, edits)


def test_a_transposition_is_one_edit() -> None:
    assert nearest_key({8: ["customer"]}, "cusotmer", 1) == ("customer", 1)


def test_every_member_kind_has_its_container_as_parent() -> None:
    assert set(CONTAINER_OF.values()) == set(CONTAINER_KINDS)
    assert {KIND_CODE["table"], KIND_CODE["sl_source"]} == CONTAINER_CODES
    assert parent_uid("column", "wh", "id", "", "raw.orders.id") == "table:wh:raw.orders"
    for kind in ("sl_dimension", "sl_measure"):
        assert parent_uid(kind, "wh", "amount", "orders.amount", "Orders amount") == "sl_source:wh:orders"
    assert parent_uid("column", "wh", "id", "", "id") is None  # a display without its table
    assert parent_uid("table", "wh", "orders", "", "raw.orders") is None  # containers have none


def test_a_project_with_a_hand_written_semantic_layer_is_curated() -> None:
    def of(*kinds: str) -> Snapshot:
        return Snapshot(doc_kind=np.array([SEARCH_KINDS.index(k) for k in kinds], dtype=np.int8))

    assert curated(of("table", "sl_source", "sl_measure", "column"))
    assert not curated(of("table", "column", "sl_source", "sl_dimension"))  # a scan-generated source has no measure
    assert not curated(of())
