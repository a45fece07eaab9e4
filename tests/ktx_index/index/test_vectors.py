"""Self-describing vectors: the vector file's key sidecar lets a rebuilt store re-attach every vector whose
text is unchanged, and a damaged row is found by its checksum so that only its text is embedded again."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from projects import DEMO

from ktx_index.embedding.embedder import HashEmbedder
from ktx_index.index.layout import IndexLayout
from ktx_index.index.vectors import HEADER, RECORD, VectorFile, vector_key
from ktx_index.search.calibration import PROBES
from ktx_index.service import KtxIndex

QUERIES = [
    "how late can a delivery be before it counts as late", "active subscriber definition", "refund policy",
    "weekly box capacity", "gross vs net revenue", "courier performance", "fiscal calendar weeks",
    "promo code attribution", "food waste", "pause or skip a week", "plan tiers and pricing", "depot operations",
    "supplier onboarding", "support ticket triage", "recipe menu rotation", "lapsed subscribers", "orders by customer",
    "minutes late", "churned customers last month", "box price",
]  # fmt: skip


def top10(service: KtxIndex) -> list[list[tuple[str, str]]]:
    return [[(r.kind, r.id) for r in service.discover_data(q).refs] for q in QUERIES]


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns(".ktx"))
    return target


def build(root: Path) -> tuple[KtxIndex, HashEmbedder]:
    embedder = HashEmbedder()
    service = KtxIndex(root, embedder=embedder)
    service.rebuild()
    return service, embedder


def test_write_records_key_and_checksum_per_row(tmp_path: Path):
    vectors = VectorFile(tmp_path / "v.f16", 4)
    keys = [vector_key("m", t) for t in ("a", "b", "c")]
    vectors.write(0, np.eye(3, 4, dtype=np.float32), keys)
    vectors.write(3, np.ones((1, 4), dtype=np.float32), [vector_key("m", "d")])
    assert [k for k, _ in vectors.records()] == [*keys, vector_key("m", "d")]
    assert vectors.damaged_rows(vectors.records()) == []
    vectors.write(1, np.zeros((1, 4), dtype=np.float32), [keys[1]])  # rewriting a tail truncates both files
    assert vectors.rows() == 2 and len(vectors.records()) == 2
    assert (tmp_path / "v.keys").stat().st_size == HEADER.size + 2 * RECORD.size


@pytest.mark.parametrize("damage", ["truncate", "delete", "lexical segment"])
def test_a_lost_store_reembeds_nothing_and_answers_like_a_clean_build(demo: Path, tmp_path: Path, damage: str):
    clean_root = tmp_path / "clean"
    shutil.copytree(demo, clean_root)
    clean, _ = build(clean_root)
    expected = top10(clean)
    service, first = build(demo)
    total = first.texts_encoded
    service.close()
    layout = IndexLayout(demo)
    for suffix in ("-wal", "-shm"):
        Path(str(layout.store) + suffix).unlink(missing_ok=True)
    if damage == "truncate":
        with open(layout.store, "r+b") as fh:
            fh.truncate(layout.store.stat().st_size // 3)
    elif damage == "delete":
        layout.store.unlink()
    else:  # re-derived from the store, in the order a clean build adds documents (so ties break alike)
        next(p for p in layout.lexical.iterdir() if p.suffix == ".idx").unlink()
    embedder = HashEmbedder()
    repaired = KtxIndex(demo, embedder=embedder)
    answers = top10(repaired)  # the first read repairs (or builds) the index, then answers
    # the queries and the calibration probes only: no text embedded again
    assert embedder.texts_encoded - len(QUERIES) - len(PROBES) <= 0 < total
    assert answers == expected
    assert repaired.status().semantic == "available"
    clean.close()
    repaired.close()


def test_damaged_rows_are_found_and_only_their_texts_reembedded(demo: Path):
    service, _ = build(demo)
    service.close()
    vectors = VectorFile(IndexLayout(demo).vectors, HashEmbedder().dim)
    records = vectors.records()
    with open(vectors.path, "r+b") as fh:  # a bit flip in two rows
        for row in (3, 40):
            fh.seek(row * vectors.row_bytes + 10)
            byte = fh.read(1)
            fh.seek(row * vectors.row_bytes + 10)
            fh.write(bytes([byte[0] ^ 0x40]))
    assert vectors.damaged_rows(vectors.records()) == [3, 40]
    embedder = HashEmbedder()
    again = KtxIndex(demo, embedder=embedder)
    report = again.rebuild()
    assert report.embedded == 2 and embedder.texts_encoded == 2
    assert any("2 vector rows failed their checksum" in d.message for d in report.diagnostics)
    assert {k for k, _ in vectors.records()[-2:]} == {records[3][0], records[40][0]}
    assert again.rebuild().embedded == 0 and vectors.damaged_rows(vectors.records()) == [3, 40]  # garbage, unused
    again.close()


def test_a_lost_sidecar_is_rewritten_from_the_store(demo: Path):
    service, _ = build(demo)
    service.close()
    layout = IndexLayout(demo)
    keys_path = layout.vectors.with_suffix(".keys")
    before = keys_path.read_bytes()
    keys_path.unlink()
    embedder = HashEmbedder()
    again = KtxIndex(demo, embedder=embedder)
    report = again.rebuild()
    assert report.embedded == 0 and any("vector key file lacked" in d.message for d in report.diagnostics)
    assert keys_path.read_bytes() == before
    again.close()


def test_a_lost_vector_file_beside_its_sidecar_is_embedded_again(demo: Path):
    """The vector file deleted and its key records left: they describe no row, so they go and every text is
    embedded again (an outside pass: every rebuild and serve failed on the missing file)."""
    service, _ = build(demo)
    service.close()
    layout = IndexLayout(demo)
    texts = len(VectorFile(layout.vectors, HashEmbedder().dim).records())
    layout.vectors.unlink()
    again = KtxIndex(demo, embedder=HashEmbedder())
    report = again.rebuild()
    assert report.embedded == texts and any("vector file is missing" in d.message for d in report.diagnostics)
    assert again.discover_data("late deliveries").refs
    again.close()


def test_vectors_of_a_crashed_build_are_reattached(demo: Path):
    """Rows written but never referenced (the store commit was lost) carry their keys: nothing is re-embedded."""
    service, _ = build(demo)
    service.close()
    db = sqlite3.connect(IndexLayout(demo).store)
    lost = db.execute("DELETE FROM vectors WHERE row >= 100").rowcount
    db.commit()
    db.close()
    embedder = HashEmbedder()
    again = KtxIndex(demo, embedder=embedder)
    report = again.rebuild()
    assert lost > 0 and report.embedded == 0 and embedder.texts_encoded == 0
    assert any(f"re-attached {lost} vectors" in d.message for d in report.diagnostics)
    again.close()


def stamp_old_format(layout: IndexLayout) -> None:
    """Make the index look built by an older format version (it is rebuilt on the next writer open)."""
    db = sqlite3.connect(layout.store)
    db.execute("UPDATE meta SET value = 'format=0' WHERE key = 'format'")
    db.commit()
    db.close()


def test_a_new_format_keeps_self_describing_vectors_and_drops_old_ones(demo: Path):
    service, _ = build(demo)
    service.close()
    layout = IndexLayout(demo)
    stamp_old_format(layout)
    embedder = HashEmbedder()
    again = KtxIndex(demo, embedder=embedder)
    assert again.rebuild().embedded == 0  # rebuilt for the new format, every vector re-attached
    again.close()
    layout.vectors.with_suffix(".keys").unlink()  # an index from before the sidecar
    stamp_old_format(layout)
    embedder = HashEmbedder()
    again = KtxIndex(demo, embedder=embedder)
    assert again.rebuild().embedded == len({k for k, _ in VectorFile(layout.vectors, embedder.dim).records()}) > 0
    again.close()


def test_vectors_a_repair_lost_are_embedded_before_a_catch_up_commit_is_served(demo: Path, tmp_path: Path):
    """serve and the watcher commit without embedding (new texts follow in the background), but what a repair
    lost is embedded at once, so answers right after the repair are a clean build's."""
    clean_root = tmp_path / "clean"
    shutil.copytree(demo, clean_root)
    clean, _ = build(clean_root)
    service, _ = build(demo)
    service.close()
    vectors = IndexLayout(demo).vectors
    with open(vectors, "r+b") as fh:
        fh.truncate(vectors.stat().st_size // 2)
    embedder = HashEmbedder()
    again = KtxIndex(demo, embedder=embedder)
    report = again.rebuild(embed=False)  # as serve's catch-up does
    assert report.embedded > 0 and report.embedding_status == "ready"
    assert any("will be embedded again" in d.message for d in report.diagnostics)
    assert top10(again) == top10(clean)
    assert again.rebuild(embed=False).embedding_status == "pending"  # new texts still wait for the background
    clean.close()
    again.close()
