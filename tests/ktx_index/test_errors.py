"""Every error says what went wrong and what to do next: how the hint joins the message, and upstream's
template for an unknown connection."""

import errno

import pytest
from projects import column, scan_files

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.errors import InvalidInput, KtxIndexError, NotFound, echoed, refused_by_system, unknown_connection
from ktx_index.service import KtxIndex


@pytest.mark.parametrize(
    ("message", "hint", "shown"),
    [
        ("no index at /p", "run `ktx-index rebuild`", "no index at /p; run `ktx-index rebuild`"),
        (
            'Wiki page "x" was not found.',
            "Search with wiki_search.",
            'Wiki page "x" was not found. Search with wiki_search.',
        ),
        ("Is the server running?", "Start it.", "Is the server running? Start it."),
        ("limit must be positive", None, "limit must be positive"),
    ],
)
def test_the_hint_follows_the_message_as_a_clause_or_as_a_sentence(message, hint, shown):
    error = InvalidInput(message, hint)
    assert str(error) == shown and (error.message, error.hint) == (message, hint)
    assert isinstance(error, KtxIndexError)


def test_an_unknown_connection_names_the_configured_ones():
    error = unknown_connection("nope", ["dbt", "warehouse"])
    assert isinstance(error, NotFound)
    assert str(error) == 'Unknown connection "nope". Configured connections: dbt, warehouse.'
    assert str(unknown_connection("nope", [])).endswith("Configured connections: (none configured).")


def test_the_federated_connection_is_explained_not_just_refused():
    hint = unknown_connection("_ktx_federated", ["a", "b"]).hint
    assert hint.startswith("Configured connections: a, b.") and "sql_execution" in hint and "members" in hint


def test_a_sent_value_is_quoted_short_and_without_control_characters():
    assert echoed("fee\nwaiver") == "fee\\nwaiver" and echoed("a\u202eb") == "a\\u202eb"
    assert echoed("x" * 5000) == "x" * 119 + "…" and echoed("Montréal 🙂") == "Montréal 🙂"


def test_columns_sent_by_the_hundred_are_listed_by_the_ten(make_project):
    table = {"catalog": None, "db": "raw", "name": "orders", "columns": [column("id", "int")]}
    service = KtxIndex(
        make_project(scan_files("warehouse", "2026-01-01-000000-local-a", [table])), embedder=HashEmbedder()
    )
    service.rebuild()
    sent = [f"{n}{'c' * 5000}" for n in range(500)]
    (failed,) = service.entity_details("warehouse", [{"table": "raw.orders", "columns": sent}]).results
    assert failed.error.code == "column_not_found" and len(failed.error.message) < 2000
    assert failed.error.message.count("…") == 10 and "and 490 more" in failed.error.message
    service.close()


def test_a_refusal_says_the_step_that_fits_it():
    """No permission to write the index folder is not damage: deleting the index would not help (an outside pass
    on a read-only project, where searching takes tantivy's lock files too)."""
    denied = refused_by_system(PermissionError(errno.EACCES, "Permission denied", "/p/.ktx/index/write.lock"))
    assert denied.startswith("/p/.ktx/index/write.lock: Permission denied; ") and "delete" not in denied
    assert "KTX_INDEX_HOME" in denied  # or the index kept elsewhere
    cached = refused_by_system(PermissionError(errno.EACCES, "Permission denied", "/home/u/.cache/ktx-index/p-1/x"))
    assert "lock files in the index folder" in cached  # an index kept in the user's cache is an index too
    assert "free some disk space" in refused_by_system(OSError(errno.ENOSPC, "No space left on device"))
    assert "delete .ktx/index" in refused_by_system(OSError(errno.EIO, "Input/output error", "/p/x"))
    elsewhere = refused_by_system(PermissionError(errno.EACCES, "Permission denied", "/p/wiki/global/a.md"))
    assert "lock files" not in elsewhere and "check the permissions" in elsewhere  # a project file: not the index
