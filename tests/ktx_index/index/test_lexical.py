"""The lexical index's filters (a real tantivy index in a temp folder)."""

import itertools

import pytest

from indexers.models import SEARCH_KINDS, Document, make_uid
from ktx_index.index.lexical import LexicalIndex


@pytest.fixture(scope="module")
def lexical(tmp_path_factory):
    index = LexicalIndex(tmp_path_factory.mktemp("lexical"))
    writer = index.writer()
    for kind, n, conn in itertools.product(SEARCH_KINDS, range(3), ("a", "b")):
        doc = Document(
            uid=make_uid(kind, conn, f"{kind}_{n}"), kind=kind, id=f"{kind}_{n}", name=f"orders {kind} {n}",
            connection_id=None if kind == "wiki" else conn, path="x.yaml", description="orders placed" * (n + 1),
        )  # fmt: skip
        index.add(writer, doc)
    index.set_generation(writer, 1)
    writer.commit()
    index.reload()
    return index


@pytest.mark.parametrize(
    "kinds",
    [
        list(SEARCH_KINDS),
        ["table"],
        ["column"],
        ["wiki"],
        ["table", "column"],
        [k for k in SEARCH_KINDS if k != "wiki"],
    ],
)
def test_kind_filter_keeps_exactly_the_kinds_asked_for_with_their_scores(lexical, kinds):
    everything = {h.uid: h.score for h in lexical.search(["order"], list(SEARCH_KINDS), limit=100)}
    assert len(everything) == len(SEARCH_KINDS) * 6  # the meta document matches no term
    hits = {h.uid: h.score for h in lexical.search(["order"], kinds, limit=100)}
    assert hits == {uid: s for uid, s in everything.items() if uid.split(":", 1)[0] in kinds}
    assert lexical.count(["order"], kinds) == len(hits)


def test_connection_filter_keeps_wiki_pages(lexical):
    hits = [h.uid for h in lexical.search(["order"], ["wiki", "table"], connection="a", limit=100)]
    assert sorted(hits) == sorted(
        [f"table:a:table_{n}" for n in range(3)] + [f"wiki:{c}:wiki_{n}" for c in "ab" for n in range(3)]
    )


def test_document_counts_are_kept_per_searcher_and_fresh_after_a_reload(tmp_path):
    index = LexicalIndex(tmp_path / "lexical")
    writer = index.writer()
    page = Document(uid="wiki::refunds", kind="wiki", id="refunds", name="Refunds", path="r.md", body="refund rules")
    index.add(writer, page)
    writer.commit()
    index.reload()
    assert index.doc_freq("refund") == 1 and index.doc_freq("refund") == 1  # the second from the cache
    index.add(writer, page.model_copy(update={"uid": "wiki::credits", "id": "credits"}))
    writer.commit()
    assert index.doc_freq("refund") == 1  # the searcher still sees the earlier commit
    index.reload()
    assert index.doc_freq("refund") == 2 and index.doc_freq("credit") == 0


def test_a_commit_goes_through_the_deletes_file_a_killed_writer_left(tmp_path):
    """A writer killed between writing a commit's files and its meta.json leaves them behind, and the next
    commit of the same changes writes a file of the same name: the writer clears them first."""
    import json
    import shutil

    index = LexicalIndex(tmp_path / "lexical")
    writer = index.writer()
    for n in range(3):
        page = Document(uid=make_uid("wiki", None, f"p{n}"), kind="wiki", id=f"p{n}", name=f"page {n}", path="w.md")
        index.add(writer, page)
    writer.commit()
    writer.wait_merging_threads()  # and lets go of the index's lock

    def delete_one(path):
        deleting = LexicalIndex(path, create=False).writer()
        LexicalIndex.delete(deleting, make_uid("wiki", None, "p1"))
        deleting.commit()

    shutil.copytree(tmp_path / "lexical", tmp_path / "rehearsal")  # what that commit writes, learned on a copy
    before = {p.name for p in (tmp_path / "rehearsal").iterdir()}
    delete_one(tmp_path / "rehearsal")
    [left] = [n for n in {p.name for p in (tmp_path / "rehearsal").iterdir()} - before if n.endswith(".del")]
    (tmp_path / "lexical" / left).write_bytes(b"half written")  # the killed writer's file, registered as tantivy does
    managed = tmp_path / "lexical" / ".managed.json"
    managed.write_text(json.dumps([*json.loads(managed.read_text()), left]))
    delete_one(tmp_path / "lexical")
    survivors = LexicalIndex(tmp_path / "lexical", create=False).search(["page"], ["wiki"], limit=10)
    assert sorted(h.uid for h in survivors) == [make_uid("wiki", None, "p0"), make_uid("wiki", None, "p2")]
