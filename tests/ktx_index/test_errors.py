"""Every error says what went wrong and what to do next: how the hint joins the message, and upstream's
template for an unknown connection."""

import pytest

from ktx_index.errors import InvalidInput, KtxIndexError, NotFound, unknown_connection


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
