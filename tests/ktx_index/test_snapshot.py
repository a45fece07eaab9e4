"""The identifier map's keys: each dotted suffix of a name, computed from cached per-part keys."""

from hypothesis import given
from hypothesis import strategies as st

from ktx_index.analysis import identifier_key
from ktx_index.search.snapshot import exact_keys


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
