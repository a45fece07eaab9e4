import os

from indexers import load_project, read_project
from indexers.models import Document
from indexers.wiki import WikiIndexer, split_frontmatter, split_sections, suggest_key
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.service import KtxIndex

PAGE = """---
summary: How churn is defined
tags: [retention, 7, churn]
refs: [active-subscribers]
sl_refs: [warehouse.subscriptions]
usage_mode: auto
stale_since: 2026-05-01
---

# Churn

Intro paragraph.

## Lapsed subscribers

A subscriber lapses after 30 days.

```python
# not a heading
x = 1
```

### Edge cases

Paused plans do not count.
"""


def wiki_docs(root):
    project = load_project(root)
    indexer = WikiIndexer()
    scopes, diagnostics = indexer.scopes(project)
    docs, diags = [], list(diagnostics)
    for scope in scopes:
        result = indexer.read(project, scope)
        docs += result.documents
        diags += result.diagnostics
    return docs, diags


def test_page_fields_and_flat_list_rule(make_project):
    root = make_project({"wiki/global/churn.md": PAGE})
    (doc,), diags = wiki_docs(root)
    assert [(d.code, d.message) for d in diags] == [("warning", "tags: [7] left out, not text (quote them)")]
    assert doc.uid == "wiki:global:churn" and doc.id == "churn" and doc.kind == "wiki"
    assert doc.summary == "How churn is defined"
    assert doc.tags == ["retention", "churn"]  # non-string entries dropped, as KTX does
    assert doc.attrs["refs"] == ["active-subscribers"]
    assert doc.attrs["slRefs"] == ["warehouse.subscriptions"]
    assert doc.attrs["stale_since"] == "2026-05-01"
    assert doc.body.startswith("# Churn") and doc.path == "wiki/global/churn.md"


def test_fields_of_another_shape_are_read_as_ktx_reads_them_and_said(make_project):
    page = "---\nsummary: 5\nconnections: 5\ntags: [2024]\nrefs: {a: b}\n---\nBody.\n"
    (doc,), diags = wiki_docs(make_project({"wiki/global/odd.md": page}))
    assert doc.summary is None and doc.attrs["connections"] == [] and doc.tags == [] and doc.attrs["refs"] == []
    said = {d.message.split(":")[0]: d.message for d in diags if d.code == "warning"}
    assert said["summary"] == "summary: expected text, got 5; read as no summary (quote it)"
    assert said["connections"].endswith("got 5; read as no connections, so the page applies to every connection")
    assert said["tags"] == "tags: expected text or a list of text, got [2024]; read as no tags"
    assert set(said) == {"summary", "connections", "tags", "refs"} and {d.path for d in diags} == {"wiki/global/odd.md"}


def test_sections_follow_headings_but_not_code_fences():
    sections = split_sections(split_frontmatter(PAGE)[1])
    assert [s.heading for s in sections] == [
        "Churn",
        "Churn > Lapsed subscribers",
        "Churn > Lapsed subscribers > Edge cases",
    ]
    assert "# not a heading" in sections[1].text


def test_a_heading_keeps_a_hash_its_text_ends_with_and_loses_a_closing_sequence():
    """``# Using C#`` was headed 'Using C' (an outside review): as CommonMark, only a closing run of ``#`` after a
    space goes."""
    text = "# Using C#\na\n## Title ##\nb\n## #hashtag\nc\n### F# and C# ###\nd\n## Issue #42  \ne\n"
    assert [s.heading for s in split_sections(text)] == [
        "Using C#",
        "Using C# > Title",
        "Using C# > #hashtag",
        "Using C# > #hashtag > F# and C#",
        "Using C# > Issue #42",
    ]


def test_user_scope_and_unsafe_or_nested_keys(make_project):
    root = make_project(
        {
            "wiki/global/churn.md": PAGE,
            "wiki/user/local/churn.md": "---\nsummary: mine\n---\nbody",
            "wiki/user/someone-else/secret.md": "---\nsummary: x\n---\n",
            "wiki/global/bad key.md": "x",
            "wiki/global/nested/page.md": "x",
        }
    )
    os.symlink("loop", root / "wiki/global/loop")  # points at itself
    docs, diags = wiki_docs(root)
    assert sorted(d.uid for d in docs) == ["wiki:global:churn", "wiki:user/local:churn"]
    assert {d.attrs["scope"] for d in docs} == {"GLOBAL", "USER"}
    messages = {d.path: d.message for d in diags}
    assert "bad-key.md" in messages["wiki/global/bad key.md"]
    assert "nested" in messages["wiki/global/nested"]
    assert messages["wiki/global/loop"] == "cannot be followed (a symlink loop?); not read"


def test_page_without_frontmatter_and_crlf(make_project):
    root = make_project(
        {"wiki/global/plain.md": "Just text\n", "wiki/global/crlf.md": "---\r\nsummary: w\r\n---\r\nBody\r\n"}
    )
    docs, _ = wiki_docs(root)
    by_id = {d.id: d for d in docs}
    assert by_id["plain"].summary is None and by_id["plain"].body == "Just text"
    assert by_id["crlf"].summary == "w" and by_id["crlf"].body == "Body"


def test_an_empty_frontmatter_block_is_no_frontmatter():
    """``---`` twice opens and closes an empty block, as KTX reads it (an outside pass: it was a parse error)."""
    assert split_frontmatter("---\n---\n# Body\ntext\n") == ({}, "# Body\ntext")
    assert split_frontmatter("---\n\n---\nBody\n") == ({}, "Body")


def test_broken_frontmatter_binary_and_non_utf8_are_diagnostics(make_project):
    root = make_project(
        {
            "wiki/global/good.md": PAGE,
            "wiki/global/broken.md": "---\nsummary: [unterminated\n---\nbody",
            "wiki/global/unclosed.md": "---\nsummary: x\nbody without end",
            "wiki/global/list.md": "---\n- a\n- b\n---\nbody",
            "wiki/global/binary.md": b"\x89PNG\x00\x00\x01",
            "wiki/global/latin1.md": "caf\xe9".encode("latin-1"),
            "wiki/global/tags.md": "---\nsummary: ok\ntags: [a, b\nowner: me\n---\nbody",
            "wiki/global/empty.md": " \n",
        }
    )
    read = read_project(load_project(root))
    assert [d.id for d in read.documents] == ["good", "latin1"]  # a Latin-1 page is read, and said
    assert read.documents[1].body == "café"
    reasons = {d.path.rsplit("/", 1)[1]: d.message for d in read.diagnostics}
    assert "invalid YAML" in reasons["broken.md"]
    assert "no closing" in reasons["unclosed.md"]
    assert "mapping" in reasons["list.md"]
    assert "binary" in reasons["binary.md"]
    assert "read as Windows-1252 (save it as UTF-8)" in reasons["latin1.md"]
    assert "at line 4, column" in reasons["tags.md"]  # the file's line, past the opening '---'
    assert "the page is empty: not indexed until it has content" in reasons["empty.md"]


def test_symlink_leaving_the_project_is_refused(make_project, tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("---\nsummary: secret\n---\nsecret body")
    root = make_project({"wiki/global/ok.md": PAGE})
    (root / "wiki/global/leak.md").symlink_to(outside)
    read = read_project(load_project(root))
    assert [d.id for d in read.documents] == ["ok"]
    assert any("outside the project" in d.message for d in read.diagnostics)


def test_suggest_key_matches_ktx():
    assert suggest_key("orbit/company-overview") == "orbit-company-overview"
    assert suggest_key("../secret") == "secret"
    assert suggest_key("///") == "page-key"


def test_a_page_read_whole_is_hashed_with_the_mark_it_carries(make_project):
    """The mark was set after the document was hashed, so its content hash did not cover all it held (a trap for
    the builder's "unchanged" test: a code review)."""
    service = KtxIndex(
        make_project({"wiki/global/ops.md": "---\nsummary: [broken\n---\nOps log"}), embedder=HashEmbedder()
    )
    service.rebuild()
    stored = service.refreshed_engine().store.docs.get("wiki:global:ops")
    assert stored is not None and stored.attrs["readWhole"] is True
    assert stored.content_hash == Document(**stored.model_dump(exclude={"content_hash"})).content_hash
    service.close()
