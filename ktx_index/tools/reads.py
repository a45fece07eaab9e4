"""The reads that hydrate search refs: wiki_read, sl_read_source (entity_details: entities.py; connection_list:
connections.py).

Every name that comes from a tool input is matched against what is indexed (or checked
against the flat-key rule) before anything touches the disk, so no input can name a
path outside the project.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from rapidfuzz import process

from indexers.base import as_str_list
from indexers.files import SAFE_ID, SourceError, UnlistedFolder, is_file, parse_yaml, read_hand_edited
from indexers.models import Document
from indexers.project import Project
from indexers.sl_records import broken_source_name, is_schema_shard, safe_source_name
from indexers.wiki import EMPTY_PAGE, page_uid, split_frontmatter, suggest_key
from ktx_index.analysis import abbreviates, split_identifier
from ktx_index.errors import InvalidInput, KtxIndexError, NoIndexYet, NotFound, echoed
from ktx_index.index.store import DocStore
from ktx_index.snapshot.joins import QUOTES
from ktx_index.tools.read_results import SlSource, WikiPage
from ktx_index.tools.table_names import scanned_table, scanned_tables

MAX_KEY_CHARS = 200


#: How alike (rapidfuzz's WRatio, 0-100) a name must be to a page's or source's key to be offered as the one meant:
#: a misspelling scores 85-90 (*custmer* → customers), a word inside a key 90 (*churn* → churn-definition), unrelated
#: keys up to 45 (*passwd* → odd), and a short word whose letters a long key happens to hold 60 (*nope* →
#: new-hire-onboarding-policy).
MEANT = 70


#: How many known keys an error lists when none is near what was sent (it says how many more there are).
KNOWN_LISTED = 10


def nearest(word: str, choices: list[str], limit: int = 5, cutoff: float = 40) -> list[str]:
    """The choices nearest a name sent: those naming each of its words in full or abbreviated, as warehouses name
    things, first (*appointments* → ``main.appt``, ``pref_lang_cd`` → ``preferred_language``: a spelling distance
    put them ninth), then the closest in spelling."""
    sent = _words(word.rsplit(".", 1)[-1])
    named = [c for c in choices if _names_each(sent, _words(c.rsplit(".", 1)[-1]))] if sent else []
    spelt = [choice for choice, _score, _i in process.extract(word, choices, limit=limit, score_cutoff=cutoff)]
    return list(dict.fromkeys([*named, *spelt]))[:limit]


def _words(name: str) -> list[str]:
    """A name's words of three letters or more, in lower case (``pref_lang_cd`` → pref, lang)."""
    return [part.lower() for part in split_identifier(name) if len(part) >= 3 and part.isalpha()]


def _names_each(sent: list[str], words: list[str]) -> bool:
    """Whether every word of one name is a word of the other, the same or abbreviated either way."""
    if not words or len(sent) != len(words):
        return False
    return all(a == b or abbreviates(a, b) or abbreviates(b, a) for a, b in zip(sent, words, strict=True))


def _hint(word: str, choices: list[str]) -> str:
    """The keys the sender probably meant (one spelt the same but for case first: ``RESERVATIONS`` for
    *reservations*), else the first known ones (a far-fetched guess would mislead)."""
    same = [choice for choice in choices if choice.casefold() == word.casefold()]
    close = list(dict.fromkeys([*same, *nearest(word, choices, cutoff=MEANT)]))
    if close:
        return f"did you mean: {', '.join(close)}"
    more = f" (and {len(choices) - KNOWN_LISTED} more)" if len(choices) > KNOWN_LISTED else ""
    return f"known: {', '.join(sorted(choices)[:KNOWN_LISTED]) or 'none'}{more}"


def _index(store: Callable[[], DocStore]) -> DocStore | None:
    """The index's store, or None while there is no index yet (a page still reads, without what it would add)."""
    try:
        return store()
    except KtxIndexError:
        return None


def _last_good(index: DocStore | None, uid: str, whole: bool) -> Document | None:
    """The index's version of a page, if any: one read from its parsed frontmatter, or with ``whole`` (the file now
    empty) also a broken file the index read whole, which search still serves; otherwise the file read now is
    newer than that whole read."""
    held = index.docs.get(uid) if index is not None else None
    return held if held is not None and (whole or not held.attrs.get("readWhole")) else None


def _held_page(held: Document, key: str, scope: str, rel: str, stale: str) -> WikiPage:
    """A page as the index holds it (its file cannot be read now): what wiki_search serves, flagged ``stale``."""
    return WikiPage(
        key=key,
        summary=held.summary or "",
        content=held.body,
        scope=scope,  # type: ignore[arg-type]
        tags=held.tags,
        refs=as_str_list(held.attrs.get("refs")),
        slRefs=as_str_list(held.attrs.get("slRefs")),
        path=rel,
        stale=stale,
    )


def _page_exists(project: Project, rel: str) -> bool:
    """For a hint only: a page in a folder that cannot be searched counts as absent."""
    try:
        return is_file(project, rel)
    except SourceError:
        return False


def _sentence(hint: str) -> str:
    """A hint as the sentence after upstream's not-found message."""
    return hint[:1].upper() + hint[1:] + ("" if hint.endswith((".", "?", ")")) else ".")


# ------------------------------------------------------------------ wiki_read


def wiki_read(project: Project, key: str, store: Callable[[], DocStore]) -> WikiPage:
    """The page file itself, read from disk; the index (``store``, opened only when needed: it raises while there
    is none) only feeds the hint when there is no such page, so a page reads even before the index exists. A key
    may come as its scope and key (``global/<key>``, ``user/<key>``) or as the page's path, which wiki_search returns
    beside it. A page whose frontmatter no longer parses, that was emptied, or that cannot be read now (not text, no
    permission, a folder that cannot be listed) is read as search serves it: its last good version, ``stale``."""
    raw, forced = key.strip(), None
    if not raw:
        raise InvalidInput("the wiki key is blank", 'send a key wiki_search returned, e.g. "revenue"')
    user = project.settings.user
    for prefix, scope in (
        ("wiki/global/", "GLOBAL"),
        (f"wiki/user/{user}/", "USER"),
        ("global/", "GLOBAL"),
        ("user/", "USER"),
    ):
        if raw.startswith(prefix):
            raw, forced = raw[len(prefix) :], scope
            break
    raw = raw.removesuffix(".md")
    if len(raw) > MAX_KEY_CHARS:
        raise InvalidInput(
            f"wiki key is {len(raw)} characters long",
            f"keys are at most {MAX_KEY_CHARS}; send the key wiki_search returned",
        )
    if not SAFE_ID.match(raw):  # with no index yet, KTX's flat form is all there is to offer
        index = _index(store)
        raise _not_flat(key, raw, sorted(set(index.docs.ids("wiki"))) if index is not None else None)
    candidates = [("USER", f"wiki/user/{user}/{raw}.md"), ("GLOBAL", f"wiki/global/{raw}.md")]
    blocked: UnlistedFolder | None = None  # a folder that cannot be searched: the other scope may still answer
    for scope, rel in candidates:
        try:
            if forced not in (None, scope) or not is_file(project, rel):
                continue
            text, _decoded = read_hand_edited(project, rel)  # as the index read it
        except UnlistedFolder as exc:
            blocked = blocked or exc
            continue
        except SourceError as exc:  # unreadable, binary, not text: as search serves it, if the index holds it
            held = _last_good(_index(store), page_uid(user, scope, raw), whole=True)
            if held is None:
                raise InvalidInput(
                    f"{rel}: {exc}", "fix the file; the index holds nothing of it until it can be read"
                ) from exc
            return _held_page(held, raw, scope, rel, f"{rel}: {exc}")
        stale = None
        try:
            if not text.strip():  # as the index reads it: a save caught half-way, whose last good version stays
                raise SourceError(EMPTY_PAGE)
            meta, body = split_frontmatter(text)
            summary = meta.get("summary")
            summary = summary.strip() if isinstance(summary, str) else ""
        except SourceError as exc:  # read as search serves it: its last good version, else the whole file
            stale = f"{rel}: {exc}"
            held = _last_good(_index(store), page_uid(user, scope, raw), whole=not text.strip())
            if held is not None:
                meta = {"tags": held.tags, "refs": held.attrs.get("refs"), "sl_refs": held.attrs.get("slRefs")}
                body, summary = held.body, held.summary or ""
            else:  # ``stale`` says why the fields are empty
                meta, body, summary = {}, text.strip(), ""
        return WikiPage(
            key=raw,
            summary=summary,
            content=body,
            scope=scope,  # type: ignore[arg-type]
            tags=as_str_list(meta.get("tags")),
            refs=as_str_list(meta.get("refs")),
            slRefs=as_str_list(meta.get("sl_refs")),
            path=rel,
            stale=stale,
        )
    if blocked is not None:
        index = _index(store)
        for scope, rel in candidates:
            held = _last_good(index, page_uid(user, scope, raw), whole=True) if forced in (None, scope) else None
            if held is not None:
                return _held_page(held, raw, scope, rel, f"{blocked.path}: {blocked}")
        raise InvalidInput(
            f"{blocked.path}: {blocked}", "make the folder readable; wiki_search still finds what the index holds of it"
        )
    if forced is not None:
        other = next((scope for scope, rel in candidates if scope != forced and _page_exists(project, rel)), None)
        if other is not None:
            raise NotFound(
                f'Wiki page "{echoed(key)}" was not found.', f'A {other.lower()} page exists: send "{echoed(raw)}".'
            )
    try:  # an index that exists but cannot be opened says why, as at every other read
        index: DocStore | None = store()
    except NoIndexYet:
        index = None
    keys = sorted(set(index.docs.ids("wiki"))) if index is not None else []
    if index is None:  # a page reads before any index exists; only the known keys wait for one
        hint = "there is no index yet to list the known keys (`ktx-index rebuild`, or any search, builds it)"
    elif raw in keys:  # its file went after the index read it: search still has it, not the page's next key
        hint = (
            "its file is gone since the index was last brought up to date, so wiki_search still finds it until then "
            "(a watcher takes it in within a second or so; without one, `ktx-index rebuild`)"
        )
    else:
        hint = _hint(raw, keys)
    raise NotFound(f'Wiki page "{echoed(raw)}" was not found.', _sentence(hint))


def _not_flat(key: str, raw: str, keys: list[str] | None) -> InvalidInput:
    """A key with a path in it: KTX's flat form of it when that names a page (or when the pages are not known:
    no index yet), else the pages nearest its last part (the flat form of ``../../etc/passwd`` names nothing
    worth sending)."""
    flat = suggest_key(raw)
    if keys is None or flat in keys:
        hint = f'use "{flat}"'
    else:
        hint = (
            "send a key wiki_search returned, alone or after global/ or user/ to pick a scope "
            f"({_hint(suggest_key(raw.rsplit('/', 1)[-1]), keys)})"
        )
    return InvalidInput(f'Invalid wiki key "{echoed(key)}". Wiki keys must be flat', f"{hint}.")  # upstream's full stop


# ------------------------------------------------------------------ sl_read_source


def check_connection_form(connection_id: str, known: list[str]) -> None:
    """Upstream's sl_read_source checks the id's form before anything else (a path never reaches a folder)."""
    if not SAFE_ID.fullmatch(connection_id):  # one message: an id ending in "." would read as a sentence's end
        raise InvalidInput(
            f"Unsafe connection id: {echoed(connection_id)}; send a connection id of letters, digits, '_' and '-' that "
            f"starts with a letter or digit (configured: {', '.join(known) or 'none'})"
        )


def sl_read_source(store: DocStore, connection_id: str, source_name: str, project: Project) -> SlSource:
    """``connection_id`` is a known connection (the service checks it first). A source may be sent in another case,
    as the table it reads as a ref's ``tableRef`` shows it (``lf_analytics.dim_player`` for ``dim_player``), or after
    its connection as a wiki page's ``sl_refs`` name it (``warehouse.orders``), or as its file (``orders.yaml``). A
    file that has never parsed is read as written (``project``), as upstream registers it: its name is its ``name:``
    line or its file's stem."""
    source_name = source_name.strip().removesuffix(".yaml")
    if not source_name:
        raise InvalidInput("the source name is blank", "send a source's name, as a discover_data sl_source ref's id")
    doc, names = find_source(store, connection_id, source_name)
    if doc is None:
        broken_files = _broken_files(store, connection_id)
        for path, why in broken_files:
            if (written := _never_parsed(project, connection_id, path, source_name)) is not None:
                return SlSource(
                    sourceName=source_name,
                    connectionId=connection_id,
                    yaml=written,
                    path=path,
                    files=[path],
                    stale=f"{path} does not parse ({why}); this is the file as written, never read",
                )
        named = _parts(source_name)[-1:]
        broken = _broken_file(broken_files, lambda path: [PurePosixPath(path).stem.casefold()] == named)
        if broken:
            hint = f"that file does not parse ({broken[0]}: {broken[1]})"
        elif over := sources_over(store, connection_id, source_name, names):
            hint = "; ".join(f"source {name} reads table {table}" for name, table in over) + "; send its name"
        elif table := scanned_table(scanned_tables(store, connection_id), source_name):
            hint = (
                f"no source reads the scanned table {table}; read it with entity_details "
                f'{{connectionId: "{connection_id}", entities: [{{table: "{table}"}}]}}'
            )
        elif not names and (tables := store.docs.ids("table", connection_id)):
            hint = (
                "there are no semantic-layer sources; read its scanned tables with entity_details "
                f"(such as {min(tables)})"
            )
        else:
            hint = _hint(source_name, names)
        raise NotFound(
            f'Semantic-layer source "{echoed(source_name)}" was not found.', _sentence(f'In "{connection_id}", {hint}')
        )
    files = doc.attrs.get("files", [])
    stale = store.docs.stale_by_uid(doc.uid).get(doc.uid)
    broken = _broken_file(
        _broken_files(store, connection_id), lambda path: path in files or PurePosixPath(path).stem == doc.id, doc.id
    )
    if broken is not None:  # where the file breaks, which the kept version's own reason may not say
        read = "this is the source's last good version" if stale else "this source is composed without it"
        stale = f"{broken[0]} does not parse ({broken[1]}); {read}"
    return SlSource(
        sourceName=doc.id,
        connectionId=connection_id,
        yaml=doc.attrs.get("yaml", ""),
        path=doc.path,
        files=files,
        stale=stale,
    )


def _never_parsed(project: Project, connection_id: str, path: str, sent: str) -> str | None:
    """The text of the semantic-layer file at ``path`` when it is not YAML and is the source ``sent`` names, as the
    indexer registers such a file (sl_records.load_records): its ``name:`` line, else its file's stem, is that name
    (case aside). None for a manifest shard (a broken one is no source), a file that parses (its problem is its
    shape, reported as such), a name no source may have, or a file that cannot be read."""
    if is_schema_shard(connection_id, path) or not safe_source_name(sent):
        return None
    try:
        text, _decoded = read_hand_edited(project, path)
    except (SourceError, UnlistedFolder, OSError):
        return None
    try:
        parse_yaml(text)
    except SourceError:
        return text if broken_source_name(path, text).casefold() == sent.casefold() else None
    return None


def find_source(store: DocStore, connection_id: str, sent: str) -> tuple[Document | None, list[str]]:
    """The source ``sent`` names, exactly or as ``source_meant`` reads it, and the connection's source names when
    they had to be read (for the error that follows a miss; empty on an exact hit)."""
    doc = store.docs.get(f"sl_source:{connection_id}:{sent}")
    if doc is not None:
        return doc, []
    names = store.docs.ids("sl_source", connection_id)
    return source_meant(store, connection_id, sent, names), names


def source_meant(store: DocStore, connection_id: str, sent: str, names: list[str]) -> Document | None:
    """The one source ``sent`` can only mean when no source has that exact name: the name in another case
    (Snowflake's ``FCT_X`` sent as ``fct_x``), the name after its connection's id (a wiki page's ``sl_refs`` are
    ``connection.source``), or a source named as the last part of a qualified table that it reads, the trailing
    parts of the two names agreeing, quotes and case aside (``analytics.fct_x``, ``"Analytics"."FCT_X"`` for a
    source ``fct_x`` reading ``db.analytics.fct_x``). ``names``: the connection's source names, which the error
    that follows a miss lists too."""
    sent_parts = _sent_parts(sent, connection_id)
    if not sent_parts:
        return None
    found = []
    for name in names:
        if name.casefold() != sent_parts[-1] or (doc := store.docs.get(f"sl_source:{connection_id}:{name}")) is None:
            continue
        reads = _parts(str(doc.attrs.get("table") or ""))  # none for a source written as SQL
        if len(sent_parts) == 1 or _ends_alike(reads, sent_parts):
            found.append(doc)
    return found[0] if len(found) == 1 else None


def sources_over(store: DocStore, connection_id: str, sent: str, names: list[str]) -> list[tuple[str, str]]:
    """(name, table) of each source, named otherwise, that reads the table ``sent`` names (``jobs`` over
    ``tms.job_ln``), the trailing parts of the two names agreeing, quotes and case aside: what an agent that copied
    a table's name should send instead."""
    sent_parts = _sent_parts(sent, connection_id)
    found = []
    for name in names:
        doc = store.docs.get(f"sl_source:{connection_id}:{name}")
        table = str(doc.attrs.get("table") or "") if doc is not None else ""
        if _ends_alike(_parts(table), sent_parts):
            found.append((name, table))
    return sorted(found)


def _sent_parts(sent: str, connection_id: str) -> list[str]:
    """A name sent as ``_parts`` splits it, without its connection's id before it (a wiki page's ``sl_refs``)."""
    parts = _parts(sent)
    return parts[1:] if len(parts) == 2 and parts[0] == connection_id.casefold() else parts


def _ends_alike(reads: list[str], sent: list[str]) -> bool:
    """Whether a table's parts and a name sent agree on the parts both have, from the end (``fct_x`` and
    ``analytics.fct_x`` for ``db.analytics.fct_x``); never for an empty one."""
    shared = min(len(reads), len(sent))
    return shared > 0 and reads[-shared:] == sent[-shared:]


def _parts(name: str) -> list[str]:
    """A dotted name's parts, each without its quotes, casefolded."""
    return [part.strip(QUOTES).casefold() for part in name.split(".") if part.strip(QUOTES)]


def _broken_file(
    broken_files: list[tuple[str, str]], belongs: Callable[[str], bool], named: str = ""
) -> tuple[str, str] | None:
    """(path, why) of a file of ``broken_files`` (``_broken_files``) that ``belongs``: the one named ``named`` (a
    source's own overlay) first."""
    broken = [(path, why) for path, why in broken_files if belongs(path)]
    return min(broken, key=lambda b: PurePosixPath(b[0]).stem != named, default=None)


def _broken_files(store: DocStore, connection_id: str) -> list[tuple[str, str]]:
    """(path, why) of each file of the connection's semantic layer that does not parse (warnings are no break)."""
    return [
        (d.path, d.message)
        for d in store.scopes.diagnostics()
        if d.code == "parse_error" and d.path.startswith(f"semantic-layer/{connection_id}/")
    ]
