"""One error vocabulary. Every message says what went wrong and what to do next."""

from __future__ import annotations


class KtxIndexError(Exception):
    """Base class; ``str(error)`` is the full message shown to a user or an agent."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message}; {hint}" if hint else message)


class NotFound(KtxIndexError):
    """An unknown connection, wiki key, source or table (the hint names the known ones)."""


class InvalidInput(KtxIndexError):
    """An argument that cannot be used as given."""


class IndexBusy(KtxIndexError):
    """Another process holds the index writer."""


class IndexUnavailable(KtxIndexError):
    """The index cannot be opened (and could not be rebuilt)."""


class Stopped(KtxIndexError):
    """A stop was requested (a signal, the end of stdin) before the work could be committed: nothing was."""


class ClusterUnavailable(KtxIndexError):
    """``rebuild --ray``: Ray is not installed, its head cannot be reached, or the cluster was lost mid-build
    (what was committed stays; a plain ``rebuild`` embeds the rest on this machine)."""
