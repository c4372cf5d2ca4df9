"""Dense retrieval: cosine similarity between embedded query and passages.

Embeddings are unit vectors, so cosine similarity is a plain dot product; an exact search over
a (n, 384) float32 matrix takes milliseconds for tens of thousands of passages, which is the
scale verirag targets, so no approximate-nearest-neighbour library is needed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..types import Passage
from .base import Hits, Retriever, check_k, check_query, corrupt_index_file, read_index_array, read_index_json, top_k
from .embedder import Embedder

_EMBEDDINGS = "embeddings.npy"
_META = "dense.json"
_QUERY_BLOCK = 256


def passage_text(p: Passage) -> str:
    """The text that is embedded for a passage: its title (when any) and its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


class DenseRetriever(Retriever):
    """Exact nearest-neighbour search over passage embeddings.

    Attributes: `passages`, `embedder`, `embeddings` (float32, shape (len(passages), dim)).
    """

    def __init__(self, passages: Sequence[Passage], embedder: Embedder, embeddings: np.ndarray) -> None:
        if embeddings.shape != (len(passages), embedder.dim):
            raise InputError(
                f"dense index has embeddings of shape {embeddings.shape}, expected "
                f"({len(passages)}, {embedder.dim}) for {len(passages)} passages "
                f"and embedder {embedder.name}"
            )
        self.passages = list(passages)
        self.embedder = embedder
        self.embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)

    @classmethod
    def build(
        cls, passages: Sequence[Passage], embedder: Embedder | None = None, batch_size: int = 64
    ) -> DenseRetriever:
        """Embed every passage (in batches) with `embedder` (default: MiniLM)."""
        embedder = embedder or Embedder.load()
        vecs = embedder.encode([passage_text(p) for p in passages], batch_size=batch_size)
        return cls(passages, embedder, vecs)

    def search_hits(self, query: str, k: int) -> Hits:
        return self.search_hits_many([query], k)[0]

    def search_hits_many(self, queries: Sequence[str], k: int) -> list[Hits]:
        k = check_k(k)
        for q in queries:
            check_query(q)
        if not queries:
            return []
        q_vecs = self.embedder.encode(list(queries))
        hits: list[Hits] = []
        # Score blocks of queries so that the (queries x passages) similarity matrix stays
        # small (256 x 100k float32 = 100 MB) however many queries are passed.
        for start in range(0, len(q_vecs), _QUERY_BLOCK):
            sims = q_vecs[start : start + _QUERY_BLOCK] @ self.embeddings.T
            hits.extend(top_k(row, k) for row in sims)
        return hits

    def save(self, directory: str | Path) -> None:
        """Write embeddings.npy and dense.json (embedder name, dimension, count) into `directory`."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        np.save(d / _EMBEDDINGS, self.embeddings, allow_pickle=False)
        meta = {"embedder": self.embedder.name, "dim": self.embedder.dim, "n": len(self.passages)}
        (d / _META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(
        cls, directory: str | Path, passages: Sequence[Passage], embedder: Embedder | None = None
    ) -> DenseRetriever:
        """Read a saved dense index; `passages` must be the list it was built from.

        Without `embedder`, the model named in dense.json is loaded. A given embedder must have
        the same name: query vectors from another model would not be comparable.
        """
        d = Path(directory)
        meta = read_index_json(d / _META, d.parent)
        if not isinstance(meta.get("embedder"), str) or not meta["embedder"].strip():
            raise corrupt_index_file(d / _META, "no embedder name", d.parent)
        name = meta["embedder"]
        vecs = read_index_array(d / _EMBEDDINGS, d.parent)
        if vecs.dtype.kind != "f":
            raise corrupt_index_file(d / _EMBEDDINGS, f"{vecs.dtype} values, not floats", d.parent)
        if embedder is None:
            embedder = Embedder.load(name)
        elif embedder.name != name:
            raise InputError(
                f"dense index in {d} was built with embedder {name!r}, "
                f"not {embedder.name!r}; rebuild the index or use {name!r}"
            )
        if vecs.ndim != 2 or vecs.shape[0] != len(passages):
            raise corrupt_index_file(
                d / _EMBEDDINGS,
                f"{vecs.shape[0] if vecs.ndim else 0} embeddings for {len(passages)} passages",
                d.parent,
            )
        if vecs.shape[1] != embedder.dim:
            raise corrupt_index_file(
                d / _EMBEDDINGS, f"embeddings of dimension {vecs.shape[1]}, {name!r} makes {embedder.dim}", d.parent
            )
        return cls(passages, embedder, vecs)
