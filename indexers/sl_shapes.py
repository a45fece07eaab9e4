"""The shape checks of a semantic-layer source or overlay: fields and list items that are not the shape KTX
reads (left out, and reported as ``wrong_shape``), columns and measures named twice (the later read, with a
warning), and the one rule for an item's name. Kept apart from ``sl_records.py``, which reads the records and
composes overlays, so that each stays small."""

from __future__ import annotations

from typing import Any

from indexers.models import Diagnostic

#: List fields of a source or overlay (§1.4) and what each item must be; a lone string counts as one name.
LIST_FIELDS = {
    "columns": "mapping", "joins": "mapping", "measures": "mapping", "segments": "mapping",
    "column_overrides": "mapping", "grain": "string", "exclude_columns": "string", "disable_joins": "string",
}  # fmt: skip
#: The list fields whose items become documents, one per name (a source's dimensions and measures).
DOCUMENT_ITEMS = ("columns", "measures")
#: The list fields whose items are named (``item_name``).
NAMED_ITEMS = (*DOCUMENT_ITEMS, "segments", "column_overrides")
MAX_ITEM_PROBLEMS = 3  # per field: a list of 500 strings is one mistake, not 500


def shape_of(value: Any) -> str:
    """What a value of the wrong shape is, as a problem names it: ``the string 'nope'``, ``a mapping``."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "a mapping" if isinstance(value, dict) else "a list"


def shape_problems(data: dict[str, Any]) -> list[str]:
    """Fields (and list items) that are not the shape KTX reads. The index leaves each out, as KTX does,
    so each is reported: a ``columns:`` written as a mapping must not silently drop every column."""
    problems: list[str] = []
    for key, item in LIST_FIELDS.items():
        value = data.get(key)
        if value is None or (item == "string" and isinstance(value, str)):
            continue
        if not isinstance(value, list):
            problems.append(f"{key}: expected a list of {item}s, got {shape_of(value)}; it is left out")
            continue
        bad = []
        for i, entry in enumerate(value):
            if item == "mapping" and not isinstance(entry, dict):
                bad.append(f"{key}[{i}]: expected a mapping, got {shape_of(entry)}; it is left out")
            elif item == "string" and not isinstance(entry, str):
                bad.append(f"{key}[{i}]: expected a name, got {shape_of(entry)}; it is left out")
            elif key in NAMED_ITEMS and not item_name(entry):
                bad.append(f"{key}[{i}]: has no 'name'; it is left out")
        problems.extend(_capped(bad, key, "items like these are left out"))
    value = data.get("descriptions")
    if value is not None and not isinstance(value, dict):
        problems.append(f"descriptions: expected a mapping (e.g. user: <text>), got {shape_of(value)}; it is left out")
    return problems


def _capped(problems: list[str], key: str, what: str) -> list[str]:
    """One field's first ``MAX_ITEM_PROBLEMS`` problems, then how many more ``what`` (``columns: 497 more items like
    these are left out``)."""
    more = len(problems) - MAX_ITEM_PROBLEMS
    return problems[:MAX_ITEM_PROBLEMS] + ([f"{key}: {more} more {what}"] if more > 0 else [])


def item_name(item: dict[str, Any]) -> str:
    """The name a column, measure or other named item is read under ('' for none), trimmed, a number as its text:
    the one rule for its document's uid, the source's lists of its columns and measures, and the shape check that
    leaves an item without one out (they disagreed on `` status `` and ``1.5``)."""
    return str(item.get("name") or "").strip()


def duplicate_names(data: dict[str, Any]) -> list[str]:
    """The columns and measures named as an earlier one of the same field, each a warning: the two gave two
    documents with one uid, the later silently replacing the earlier (and ``inspect`` counted both). The later one
    is read, as a later key of a YAML mapping would be."""
    problems: list[str] = []
    for key in DOCUMENT_ITEMS:
        value = data.get(key)
        first: dict[str, int] = {}
        repeated = []
        for i, entry in enumerate(value if isinstance(value, list) else []):
            name = item_name(entry) if isinstance(entry, dict) else ""
            if name in first:
                repeated.append(
                    f"{key}[{i}]: '{name}' is defined again (as {key}[{first[name]}]); the later one is read: "
                    "remove or rename one"
                )
            elif name:
                first[name] = i
        problems.extend(_capped(repeated, key, "names like these are defined again"))
    return problems


def last_by_name(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items that have a name, one per name: the later of two in the earlier's place (``duplicate_names``
    warns of it), so each name is one document."""
    named: dict[str, dict[str, Any]] = {}
    for item in items:
        if name := item_name(item):
            named[name] = item
    return list(named.values())


def shape_diagnostics(rel: str, data: dict[str, Any], where: str = "") -> list[Diagnostic]:
    """``shape_problems`` as ``wrong_shape`` (what a dropped field held stays searchable, stale, until it is fixed:
    ``left_out``); ``duplicate_names`` as warnings (nothing is dropped: the later definition is read)."""
    return [Diagnostic(path=rel, message=where + problem, code="wrong_shape") for problem in shape_problems(data)] + [
        Diagnostic(path=rel, message=where + problem, code="warning") for problem in duplicate_names(data)
    ]


def left_out(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """Each file with a field of the wrong shape → why what the field held is kept (``ScopeResult.kept``): the file
    parsed and the rest of it is read, so it is no ``parse_error``, but a ``columns:`` written as a mapping must not
    delete the dimensions it held."""
    fields: dict[str, list[str]] = {}
    for diag in diagnostics:
        if diag.code == "wrong_shape":
            fields.setdefault(diag.path, []).append(diag.message)
    return {rel: "; ".join(messages) for rel, messages in fields.items()}
