"""One error vocabulary. Every message says what went wrong and what to do next."""

from __future__ import annotations

import errno
import os


class KtxIndexError(Exception):
    """Base class; ``str(error)`` is the full message shown to a user or an agent."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        # A message that is a full sentence (upstream KTX's templates: 'Wiki page "x" was not found.') is
        # followed by the hint as another sentence.
        joint = " " if message.endswith((".", "?", "!")) else "; "
        super().__init__(f"{message}{joint}{hint}" if hint else message)


def echoed(sent: object, limit: int = 120) -> str:
    """A value an agent sent, as an error message quotes it: control and bidirectional characters shown as escapes
    (a newline or a right-to-left override would garble the message), cut at ``limit`` characters (a 5,000-character
    name was quoted whole, and 500 of them made a 2.5 MB answer)."""
    text = "".join(c if c.isprintable() and not 0x202A <= ord(c) <= 0x202E and not 0x2066 <= ord(c) <= 0x2069
                   else c.encode("unicode_escape").decode() for c in str(sent))  # fmt: skip
    return text if len(text) <= limit else text[: limit - 1] + "…"


class NotFound(KtxIndexError):
    """An unknown connection, wiki key or semantic-layer source (the hint names the known ones). A table not found is
    no error: entity_details answers it per entity (``table_not_found``), as upstream does."""


def unknown_connection(connection_id: str, known: list[str], pages: list[str] | None = None) -> NotFound:
    """Upstream's template for a connection ktx.yaml does not name (its wiki_search's; the searches and
    sl_read_source's hint use it, entity_details answers ``scan_missing`` per entity instead);
    ``pages``: the other ids wiki pages' ``connections`` name, which wiki_search accepts too."""
    hint = f"Configured connections: {', '.join(known) or '(none configured)'}."
    if pages:
        hint += f" Wiki pages also name: {', '.join(pages)}."
    if connection_id == "_ktx_federated":
        hint += " _ktx_federated is the cross-database SQL connection (sql_execution); search its members instead."
    return NotFound(f'Unknown connection "{echoed(connection_id)}".', hint)


class InvalidInput(KtxIndexError):
    """An argument that cannot be used as given."""


def has_words(query: str) -> bool:
    """Whether a query holds a letter or a digit (in any script): spaces alone or ``?!?`` search for nothing."""
    return any(ch.isalnum() for ch in query)


def require_words(query: str) -> None:
    """A query with no letter or digit (``has_words``): an error saying what to send, for the CLI and every tool
    alike (the inputSchema admits it, as upstream's does), rather than an empty answer a model would take for
    "nothing here"."""
    if not has_words(query):
        raise InvalidInput(
            f'The query "{echoed(query)}" holds no words', 'send what to search for, e.g. "monthly orders by customer".'
        )


class IndexBusy(KtxIndexError):
    """Another process holds the index writer."""


class IndexUnavailable(KtxIndexError):
    """The index cannot be opened (and could not be rebuilt)."""


class NoIndexYet(IndexUnavailable):
    """No index was ever built for the project (a read that needs none answers all the same)."""


class Stopped(KtxIndexError):
    """A stop was requested (a signal, the end of stdin) before the work could be committed: nothing was."""


class ClusterUnavailable(KtxIndexError):
    """``rebuild --ray``: Ray is not installed, its head cannot be reached, or the cluster was lost mid-build
    (what was committed stays; a plain ``rebuild`` embeds the rest on this machine)."""


#: A name or value an agent sent, sent back in an answer, is cut past this many characters (an outside pass sent
#: 800 KB of unknown table names to entity_details and got 1.74 MB back, each name whole twice).
SENT_BACK = 1000


def sent_back(value: object) -> str:
    """A value an agent sent, as an answer's field echoes it: as sent, unless longer than SENT_BACK (``echoed``)."""
    text = str(value)
    return text if len(text) <= SENT_BACK else echoed(text, SENT_BACK)


def _index_path(path: str) -> bool:
    """Whether a path lies in an index folder: <project>/.ktx, the user's cache's ktx-index, KTX_INDEX_HOME."""
    home = os.environ.get("KTX_INDEX_HOME")
    return "/.ktx" in path or "/ktx-index/" in path or bool(home and path.startswith(os.path.expanduser(home)))


def refused_by_system(exc: OSError) -> str:
    """What a file the system refused (the index folder's permissions, a full disk) means to a user: the path, the
    reason and the next step, rather than a traceback or a bare "error executing tool". Deleting the index is no
    step for a folder without write permission (searching writes lock files there too) or a full disk."""
    where = f"{exc.filename}: " if exc.filename else ""
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and _index_path(str(exc.filename or "/.ktx")):
        step = (
            "searching takes lock files in the index folder too: make it writable, or set KTX_INDEX_HOME to a "
            "writable folder to keep the index there"
        )
    elif exc.errno == errno.ENOSPC:
        step = "free some disk space and run it again"
    else:
        step = "check the permissions of the project and its .ktx folder (delete .ktx/index to build the index again)"
    return f"{where}{exc.strerror or exc}; {step}"
