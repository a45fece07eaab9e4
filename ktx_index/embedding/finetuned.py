"""The fine-tuned MiniLM shipped with ktx-index: a float16 delta over the packaged base model.

Trained by ``tests/training/train_model.py`` on public text-to-SQL questions (question ↔ the
tables and columns its SQL uses), business-language questions over other databases and questions over
written wikis (question ↔ the section that answers it), it matches business questions to schema items and
pages better than the base model. Word embeddings were frozen, so the artefact holds only the rest of the
transformer (~22 MB); loading it over the base weights gives the fine-tuned model. Its
content hash is part of the embedding fingerprint, so a retrained artefact re-embeds.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

#: Parameters never trained (and so not shipped): the vocabulary table is half the model.
FROZEN_PREFIXES = ("embeddings.word_embeddings.", "pooler.")
ARTEFACT = Path(__file__).resolve().parent / "weights" / "minilm-sql.safetensors"


def artefact_digest(path: Path | None = None) -> str:
    """Content digest of the shipped delta (OSError when it is missing or unreadable)."""
    return _digest(path or ARTEFACT)


@lru_cache(maxsize=4)
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def save_delta(transformer, path: Path) -> None:
    """The trained parameters of a Hugging Face transformer, float16, as safetensors."""
    from safetensors.torch import save_file

    tensors = {
        name: tensor.detach().to("cpu").half().contiguous()
        for name, tensor in transformer.state_dict().items()
        if not name.startswith(FROZEN_PREFIXES) and tensor.is_floating_point()
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(path), metadata={"base": "sentence-transformers/all-MiniLM-L6-v2"})


def load_delta(transformer, path: Path | None = None) -> None:
    """Overwrite a base transformer's parameters with the shipped ones (every one must match by name and shape)."""
    from safetensors.torch import load_file

    path = path or ARTEFACT
    delta = load_file(str(path))
    state = transformer.state_dict()
    unknown = sorted(set(delta) - set(state))
    if unknown:
        raise ValueError(f"{path.name} does not fit the base model (unknown parameters: {', '.join(unknown[:3])})")
    for name, tensor in delta.items():
        if state[name].shape != tensor.shape:
            raise ValueError(
                f"{path.name}: {name} has shape {tuple(tensor.shape)}, the base model {tuple(state[name].shape)}"
            )
    transformer.load_state_dict({name: t.to(state[name].dtype) for name, t in delta.items()}, strict=False)
