"""One document, one file: a document two files define stays with the file that wrote it.

A table's scan file and a stray copy of it under another name (``tables/copy-of-orders.json``) are two scopes that
give the same documents. Written by both, the documents went with the second, and deleting the copy deleted the
table, while its own file, unchanged, was not read again. So a scope now declines the documents another scope
holds (one not dropped in the same commit: a renamed file's new name takes its documents over), says so in a
warning, and is read again at every build (builder: an empty fingerprint), to take them over once the other goes.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from indexers.base import first_few
from indexers.models import MEMBER_KINDS, Diagnostic, Document
from ktx_index.index.store.documents import Documents


def held_elsewhere(docs: Documents, scope_key: str, uids: Collection[str], dropped: set[str]) -> dict[str, str]:
    """Of ``uids`` (documents the scope did not hold), those another scope holds and keeps → that scope's path."""
    if not uids:
        return {}
    owners = docs.owners(uids)
    return {uid: path for uid, (owner, path) in owners.items() if owner != scope_key and owner not in dropped}


def declined(path: str, new: Mapping[str, Document], held: Mapping[str, str]) -> Diagnostic:
    """The warning of a file whose documents another file holds: which, and where (members named by their
    table or source)."""
    ids = sorted(new[uid].id for uid in held if new[uid].kind not in MEMBER_KINDS) or sorted(new[u].id for u in held)
    where = sorted(set(held.values()))
    return Diagnostic(
        path=path,
        code="warning",
        message=f"{first_few(ids, 3)} also defined by {first_few(where, 2)}: not read from this file while that one "
        "defines it (delete the copy you do not want)",
    )
