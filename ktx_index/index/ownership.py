"""One document, one file: a document two files define stays with the file whose scope sorts first.

A table's scan file and a stray copy of it under another name (``tables/copy-of-orders.json``) are two scopes that
give the same documents. Written by both, the documents went with the second, and deleting the copy deleted the
table, while its own file, unchanged, was not read again. So of two scopes the one whose key sorts first keeps
them, whatever the index saw first (a fresh build and an old index agree): the other declines them, says so in a
warning, and is read again at every build (builder: an empty fingerprint), to take them over once the first goes
(a scope dropped in the same commit holds nothing: a renamed file's new name takes its documents over). A scope
that takes documents over from one sorting after it has that one warn at once and read again at the next build.
"""

from __future__ import annotations

from collections.abc import Collection

from ktx_index.index.store.documents import Documents


def held_elsewhere(
    docs: Documents, scope_key: str, uids: Collection[str], dropped: set[str]
) -> dict[str, tuple[str, str]]:
    """Of ``uids`` (documents the scope did not hold), those another scope holds and keeps → (that scope, its
    path)."""
    if not uids:
        return {}
    owners = docs.owners(uids)
    return {uid: found for uid, found in owners.items() if found[0] != scope_key and found[0] not in dropped}


def first_by_key(
    scope_key: str, path: str, elsewhere: dict[str, tuple[str, str]]
) -> tuple[dict[str, str], dict[tuple[str, str], dict[str, str]]]:
    """Of the documents other scopes hold (``held_elsewhere``), those staying with them, as they sort before this
    one → their file; and per scope (and its file) this one sorts before, those it takes → this scope's ``path``."""
    theirs = {uid: owner_path for uid, (owner, owner_path) in elsewhere.items() if owner < scope_key}
    taken: dict[tuple[str, str], dict[str, str]] = {}
    for uid, owner in elsewhere.items():
        if uid not in theirs:
            taken.setdefault(owner, {})[uid] = path
    return theirs, taken
