"""search/reader.py alone: the latest commit taken in (a delta for a few documents), and documents read once per
snapshot."""

from pathlib import Path

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.search.reader import SnapshotReader
from ktx_index.service import KtxIndex


def page(text: str) -> str:
    return f"---\nsummary: {text}\n---\n{text}\n"


def test_a_commit_is_taken_in_as_a_delta_and_nothing_is_loaded_twice(make_project):
    root: Path = make_project({f"wiki/global/p{i}.md": page(f"page {i}") for i in range(20)})
    writer = KtxIndex(root, embedder=HashEmbedder())
    writer.rebuild()
    reader = SnapshotReader(writer.layout, HashEmbedder())
    assert reader.is_current() and not reader.refresh()  # nothing committed since it opened
    (root / "wiki/global/p3.md").write_text(page("page three, edited"))
    writer.rebuild()
    assert not reader.is_current()
    assert reader.refresh() and reader.last_refresh == "delta" and reader.is_current()
    uid = next(u for u in reader.snapshot.doc_uids if u.endswith("p3"))
    first = reader.documents([uid])[uid]
    assert first.summary == "page three, edited" and reader.documents([uid])[uid] is first  # cached for the snapshot
    reader.close()
    writer.close()
