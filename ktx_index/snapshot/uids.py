"""uid → position in a snapshot's sorted uid list, kept current by deltas without rewriting it.

A document added in the middle of the list moves every position after it: rewriting them in a dict was
~0.7 s of a one-table edit at 1M columns. ``UidIndex`` keeps the dict of its last full build (its *base*,
never modified) and the uids added and removed since; a lookup corrects the base position by the removals
before it and the additions sorting before the uid (two bisects over short lists). Past ``MAX_PENDING``
changes it is built again from the current list.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Mapping

#: Additions and removals a delta keeps beside the base before building the map again (at least; a large
#: index keeps one per thousand documents, so the rebuild's cost is spread over as many edits).
MAX_PENDING = 256


class UidIndex(Mapping[str, int]):
    __slots__ = ("_added", "_base", "_removed_at", "_uids")

    def __init__(self, uids: list[str]) -> None:
        """The map of this sorted list (which it keeps: a snapshot's list is never modified)."""
        self._uids = uids
        self._base = dict(zip(uids, range(len(uids)), strict=True))
        self._removed_at: list[int] = []  # base positions of the uids no longer in the list, sorted
        self._added: list[str] = []  # uids added since the base (sorted), a re-added base uid included

    def edited(self, uids: list[str], gone: Iterable[str], added: Iterable[str]) -> UidIndex:
        """The map of ``uids``: this one's list with ``gone`` removed and ``added`` inserted."""
        out = UidIndex.__new__(UidIndex)
        out._uids, out._base = uids, self._base
        out._removed_at, out._added = list(self._removed_at), list(self._added)
        for uid in gone:
            at = bisect.bisect_left(out._added, uid)
            if at < len(out._added) and out._added[at] == uid:
                del out._added[at]
            else:
                bisect.insort(out._removed_at, self._base[uid])
        for uid in added:
            bisect.insort(out._added, uid)
        if len(out._removed_at) + len(out._added) > max(MAX_PENDING, len(uids) // 1000):
            return UidIndex(uids)
        return out

    def get(self, uid: str, default: int | None = None) -> int | None:
        if not isinstance(uid, str):
            return default
        if self._added:
            at = bisect.bisect_left(self._added, uid)
            if at < len(self._added) and self._added[at] == uid:
                return bisect.bisect_left(self._uids, uid)  # few: a bisect over the whole list
        base = self._base.get(uid)
        if base is None:
            return default
        if not (self._removed_at or self._added):
            return base
        removed_before = bisect.bisect_left(self._removed_at, base)
        if removed_before < len(self._removed_at) and self._removed_at[removed_before] == base:
            return default  # removed (and not added back: that was answered above)
        return base - removed_before + bisect.bisect_left(self._added, uid)

    def __getitem__(self, uid: str) -> int:
        at = self.get(uid)
        if at is None:
            raise KeyError(uid)
        return at

    def __contains__(self, uid: object) -> bool:
        return self.get(uid) is not None  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self._uids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._uids)
