"""A snapshot kept current by deltas equals one loaded whole, after random edit sequences on a real store."""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from projects import DEMO

from indexers.models import Document
from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.index.store import DocStore
from ktx_index.search.engine import Engine
from ktx_index.service import KtxIndex
from ktx_index.snapshot import coarse as coarse_module
from ktx_index.snapshot import delta
from ktx_index.snapshot.delta import apply_documents
from ktx_index.snapshot.snapshot import DocEntry, Snapshot, load_documents


def view(snap: Snapshot) -> dict:
    """Everything ranking reads from a snapshot, by uid (matrix rows may be ordered differently)."""
    conn_of = {code: conn for conn, code in snap.connections.items()}
    uids = snap.doc_uids
    vectors = {}
    if snap.matrix is not None:
        for g, doc in enumerate(snap.chunk_docs):
            end = snap.chunk_starts[g + 1] if g + 1 < len(snap.chunk_starts) else len(snap.chunk_rows)
            rows = snap.chunk_rows[snap.chunk_starts[g] : end]
            vectors[uids[doc]] = snap.matrix[rows].tobytes()
        assert all(snap.doc_group[doc] == g for g, doc in enumerate(snap.chunk_docs))
        assert np.count_nonzero(snap.doc_group >= 0) == len(snap.chunk_docs)
    return {
        "generation": snap.generation,
        "uids": list(uids),
        "index": snap.uid_index,
        "kind": snap.doc_kind.tolist(),
        "conn": [conn_of[int(c)] for c in snap.doc_conn],
        "parent": [uids[p] if p >= 0 else None for p in snap.doc_parent],
        "exact": snap.exact,
        "exact_by_length": snap.exact_by_length,
        "shadowed": snap.shadowed,
        "entries": snap.entries,
        "orphans": snap.orphans,
        "pages": snap.pages,
        "stems": snap.stems,
        "vectors": vectors,
        "embedded": snap.embedded_docs,
        "wiki_connections": snap.wiki_connections,
        # the ranking facts (snapshot/facts.py); list order follows dict insertion, which a patch changes
        "edges": {uid: sorted(map(repr, edges)) for uid, edges in snap.facts.edges.items()},
        "joins": {uid: sorted(map(repr, joins)) for uid, joins in snap.facts.joins.items()},
        "inputs": snap.facts.inputs,
    }


class Editor:
    """Random edits a data team makes: table files gain, lose and re-comment columns, wiki pages mention
    new identifiers, files are deleted and come back, YAML is renamed (sometimes into a parse error)."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rnd = random.Random(seed)
        self.deleted: dict[Path, bytes] = {}
        self.n = 0

    def files(self, pattern: str) -> list[Path]:
        return sorted(p for p in self.root.glob(pattern) if ".ktx" not in p.parts)

    def edit(self) -> str:
        self.n += 1
        op = self.rnd.choice(["column+", "column-", "comment", "mention", "delete", "restore", "rename", "copy"])
        tables = self.files("raw-sources/**/tables/*.json")
        pages = self.files("wiki/**/*.md")
        if op in ("column+", "column-", "comment") and tables:
            path = self.rnd.choice(tables)
            table = json.loads(path.read_text())
            cols = table.setdefault("columns", [])
            if op == "column+":
                cols.append({"name": f"added_col_{self.n}", "nativeType": "text", "dimensionType": "string"})
            elif op == "column-" and cols:
                cols.pop(self.rnd.randrange(len(cols)))
            else:
                table["comment"] = f"edited comment {self.n}"
            path.write_text(json.dumps(table, indent=2))
        elif op == "mention" and pages:
            path = self.rnd.choice(pages)
            names = [c["name"] for t in tables[:5] for c in json.loads(t.read_text()).get("columns", [])]
            target = self.rnd.choice([*names, f"added_col_{self.rnd.randrange(self.n + 1)}"])
            path.write_text(path.read_text() + f"\n\nSee `{target}` for edit {self.n}.\n")
        elif op == "delete":
            candidates = tables + pages + self.files("semantic-layer/**/*.yaml")
            path = self.rnd.choice(candidates)
            self.deleted[path] = path.read_bytes()
            path.unlink()
        elif op == "restore" and self.deleted:
            path = self.rnd.choice(sorted(self.deleted))
            path.write_bytes(self.deleted.pop(path))
        elif op == "rename":
            yamls = self.files("semantic-layer/**/*.yaml")
            path = self.rnd.choice(yamls)
            text = path.read_text()
            path.write_text(
                text.replace("name: ", f"name: v{self.n}_", 1) if self.rnd.random() < 0.8 else text + "\n: ["
            )
        elif op == "copy" and tables:
            path = self.rnd.choice(tables)
            table = json.loads(path.read_text())
            table["name"] = f"copied_{self.n}"
            (path.parent / f"copied_{self.n}.json").write_text(json.dumps(table))
        return op


@pytest.fixture
def indexed_demo(tmp_path: Path) -> Iterator[tuple[Path, KtxIndex, Engine]]:
    """A copy of the demo, its writer after a first rebuild, and a second reader of the same index."""
    root = tmp_path / "demo"
    shutil.copytree(DEMO, root, ignore=shutil.ignore_patterns(".ktx"))
    writer = KtxIndex(root, embedder=HashEmbedder())
    writer.rebuild()
    reader = Engine(writer.layout, HashEmbedder())
    yield root, writer, reader
    writer.close()
    reader.close()


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "small_delta"), [(1, 2000), (2, 0)])  # uid list edited / rebuilt
def test_delta_snapshot_equals_full_load_after_random_edits(
    indexed_demo: tuple[Path, KtxIndex, Engine], seed: int, small_delta: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delta, "SMALL_DELTA", small_delta)
    monkeypatch.setattr(coarse_module, "COARSE_MIN_ROWS", 1)  # the coarse projection follows the matrix too
    monkeypatch.setattr(coarse_module, "COARSE_DIMS", 8)
    root, writer, reader = indexed_demo  # the reader is refreshed only by deltas from here on
    editor = Editor(root, seed)
    rnd = random.Random(seed)
    ways: list[str] = []
    for _ in range(24):
        for _ in range(rnd.choice([1, 1, 2, 3])):
            editor.edit()
        time.sleep(0.002)  # a new mtime for files rewritten at once
        mode = rnd.choice(["embed", "embed", "lexical", "slice"])
        writer.rebuild(embed=mode == "embed")
        if mode == "slice":
            writer.embed_pending(limit=3)
        if rnd.random() < 0.3:  # a reader can also see a generation before its vectors
            reader.refresh()
            writer.embed_pending()
        reader._next_vector_load = 0.0  # the reload-rate bound is about time, not correctness
        reader.refresh()
        ways.append(reader.last_refresh)
        assert not reader.last_refresh.startswith("full (")  # a delta that failed
        full = Engine(writer.layout, HashEmbedder())
        assert view(reader.snapshot) == view(full.snapshot)
        assert reader.vector_error is None
        full.close()
        snap = reader.snapshot  # its basis is the first load's: its rows are the current matrix's, projected
        assert snap.coarse is not None and snap.matrix is not None and snap.coarse.rows == len(snap.matrix)
        np.testing.assert_allclose(snap.coarse.matrix, snap.matrix @ snap.coarse.basis, atol=1e-5)
    assert ways.count("delta") >= 12, ways


def test_a_forced_rebuild_makes_readers_load_whole(indexed_demo: tuple[Path, KtxIndex, Engine]) -> None:
    root, writer, reader = indexed_demo
    page = root / "wiki/global" / sorted(p.name for p in (root / "wiki/global").glob("*.md"))[0]
    page.write_text(page.read_text() + "\nA new sentence.\n")
    writer.rebuild()
    assert reader.refresh() and reader.last_refresh == "delta"
    writer.rebuild(force=True)
    assert reader.refresh() and reader.last_refresh == "full"
    full = Engine(writer.layout, HashEmbedder())
    assert view(reader.snapshot) == view(full.snapshot)
    full.close()


def test_copy_on_write_leaves_the_old_snapshot_untouched(indexed_demo: tuple[Path, KtxIndex, Engine]) -> None:
    root, writer, reader = indexed_demo
    before = reader.snapshot
    frozen = view(before) | {"entries": None}  # entries are the refresher's, never read by a query
    editor = Editor(root, 5)
    for _ in range(6):
        editor.edit()
        writer.rebuild()
        reader.refresh()
    assert reader.snapshot is not before
    assert view(before) | {"entries": None} == frozen


def test_members_follow_their_container_in_and_out(tmp_path: Path) -> None:
    """A column whose table is missing is an orphan until the table appears, and again when it goes."""
    store = DocStore(tmp_path / "store.sqlite")

    def column(name: str) -> Document:
        return Document(uid=f"column:w:raw.t.{name}", kind="column", id=f"raw.t.{name}", connection_id="w",
                        path="t.json", name=name, display=f"raw.t.{name}")  # fmt: skip

    table = Document(uid="table:w:raw.t", kind="table", id="raw.t", connection_id="w", path="t.json", name="t",
                     display="raw.t")  # fmt: skip
    generation = 0

    def commit(put: list[Document], delete: list[str]) -> set[str]:
        nonlocal generation
        generation += 1
        store.begin()
        for doc in put:
            store.docs.put(doc, "scope")
        for uid in delete:
            store.delete_doc(uid)
        store.changes.log(generation, [d.uid for d in put] + delete)
        store.meta.set({"generation": str(generation)})
        store.commit()
        return store.changes.since(generation - 1, store.meta.all())

    commit([column("a"), column("b")], [])
    snap = load_documents(store, generation)
    assert snap.orphans == {"table:w:raw.t": ["column:w:raw.t.a", "column:w:raw.t.b"]}
    steps = [([table], []), ([column("c")], ["column:w:raw.t.a"]), ([], ["table:w:raw.t"]), ([table], [])]
    for put, delete in steps:
        changed = commit(put, delete)
        snap, _ = apply_documents(snap, store, generation, changed)
        assert view(snap) == view(load_documents(store, generation))
    assert snap.orphans == {} and set(snap.doc_parent.tolist()) == {-1, snap.uid_index["table:w:raw.t"]}
    store.close()


def test_a_key_length_emptied_and_filled_in_one_commit_stays_in_the_length_map() -> None:
    """The only key of a length goes and new keys of that length come in one delta (the review: a KeyError, and a
    full load instead)."""
    old = Snapshot(exact={"ab": ["u1"]}, exact_by_length={2: ["ab"]})
    snap = Snapshot()
    entry = lambda *keys: DocEntry(kind=0, connection=None, keys=keys, parent=None, wiki=None)  # noqa: E731
    keys = [f"{chr(ord('c') + i)}z" for i in range(20)]  # two letters each, as "ab"
    fresh = {f"n{i}": entry(key) for i, key in enumerate(keys)}
    delta._update_exact(old, snap, {"u1": entry("ab")}, fresh)
    assert snap.exact_by_length == {2: keys} and "ab" not in snap.exact
