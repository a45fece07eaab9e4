"""The uid → position map that deltas edit instead of rewriting (snapshot/uids.py)."""

import bisect
import random

import pytest

from ktx_index.snapshot import uids as uids_module
from ktx_index.snapshot.uids import UidIndex


def check(index: UidIndex, uids: list[str], absent: set[str]) -> None:
    assert len(index) == len(uids) and list(index) == uids
    assert all(index[uid] == i for i, uid in enumerate(uids))
    assert all(uid not in index and index.get(uid) is None for uid in absent)
    with pytest.raises(KeyError):
        index["never-there"]


@pytest.mark.parametrize("max_pending", [3, 256])
def test_random_edits_match_a_map_built_from_the_list(monkeypatch, max_pending):
    monkeypatch.setattr(uids_module, "MAX_PENDING", max_pending)  # small: the rebuild path runs too
    rng = random.Random(7)
    pool = [f"column:c:t{i // 10}.col{i % 10}" for i in range(400)]
    uids = sorted(rng.sample(pool, 200))
    index = UidIndex(uids)
    ever_removed: set[str] = set()
    for _ in range(60):
        gone = set(rng.sample(uids, rng.randint(0, 3)))
        added = sorted(rng.sample([u for u in pool if u not in uids], rng.randint(0, 3)))  # removed ones come back
        new = list(uids)
        for uid in gone:
            new.remove(uid)
        for uid in added:
            bisect.insort(new, uid)
        index = index.edited(new, gone, added)
        uids = new
        ever_removed |= gone
        check(index, uids, ever_removed - set(uids))


def test_a_removed_uid_added_back_has_its_new_position():
    index = UidIndex(["a", "b", "c", "d"])
    index = index.edited(["a", "c", "d"], {"b"}, [])
    assert "b" not in index and index["c"] == 1
    index = index.edited(["a", "b", "bb", "c", "d"], set(), ["b", "bb"])
    check(index, ["a", "b", "bb", "c", "d"], set())
    index = index.edited(["a", "b", "c", "d"], {"bb"}, [])
    check(index, ["a", "b", "c", "d"], {"bb"})
