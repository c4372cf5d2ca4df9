"""Hybrid retrieval (RRF fusion), with a tiny deterministic stand-in for the embedding model.

`BagOfWordsEmbedder` is also used by test_retrieval_index.py: it keeps those tests fast and
free of torch; the real MiniLM model is exercised in test_retrieval_dense.py (marked slow).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from verirag.errors import InputError
from verirag.retrieval import BM25Retriever, DenseRetriever, HybridRetriever
from verirag.types import Passage


class BagOfWordsEmbedder:
    """Hashed bag-of-words vectors, L2-normalised; synonyms listed in SYNONYMS share a bucket."""

    SYNONYMS = {"feline": "cat", "kitty": "cat", "automobile": "car", "vehicle": "car"}

    def __init__(self, dim: int = 64, name: str = "test-bow") -> None:
        self.dim = dim
        self.name = name

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                word = self.SYNONYMS.get(word.strip(".,?!"), word.strip(".,?!"))
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


PASSAGES = [
    Passage(id="cat", text="The feline slept on the warm windowsill."),
    Passage(id="car", text="An automobile needs fuel, tyres and regular service."),
    Passage(id="both", text="A cat sat inside the car at the garage."),
    Passage(id="bread", text="Bake the bread for forty minutes until golden."),
    Passage(id="rain", text="Heavy rain flooded the valley roads overnight."),
]


@pytest.fixture(scope="module")
def hybrid() -> HybridRetriever:
    emb = BagOfWordsEmbedder()
    return HybridRetriever(BM25Retriever.build(PASSAGES), DenseRetriever.build(PASSAGES, emb))


def test_rrf_scores_match_the_formula(hybrid: HybridRetriever) -> None:
    query = "cat in a car"
    n = hybrid.n_candidates(3)
    runs = [hybrid.bm25.search(query, n), hybrid.dense.search(query, n)]
    expected: dict[str, float] = {}
    for run in runs:
        for hit in run:
            expected[hit.passage.id] = expected.get(hit.passage.id, 0.0) + 1 / (60 + hit.rank + 1)
    hits = hybrid.search(query, k=3)
    assert [h.rank for h in hits] == [0, 1, 2]
    for h in hits:
        assert h.score == pytest.approx(expected[h.passage.id])
    assert [h.score for h in hits] == pytest.approx(sorted(expected.values(), reverse=True)[:3])


def test_passage_matching_both_ways_wins(hybrid: HybridRetriever) -> None:
    assert hybrid.search("cat in a car", k=1)[0].passage.id == "both"


def test_dense_only_match_is_found(hybrid: HybridRetriever) -> None:
    # "kitty" shares no word with any passage: only the dense side can find the cat passages.
    assert hybrid.bm25.search("kitty", k=5) == []
    ids = [h.passage.id for h in hybrid.search("kitty", k=2)]
    assert set(ids) == {"cat", "both"}


def test_search_many_and_k_beyond_corpus(hybrid: HybridRetriever) -> None:
    queries = ["bread baking", "flooded roads"]
    assert hybrid.search_many(queries, k=10) == [hybrid.search(q, k=10) for q in queries]
    assert len(hybrid.search("bread", k=50)) == len(PASSAGES)


def test_candidates_per_retriever() -> None:
    assert HybridRetriever.n_candidates(None, 5) == 50  # type: ignore[arg-type]
    assert HybridRetriever.n_candidates(None, 40) == 160  # type: ignore[arg-type]


def test_rejects_different_passage_lists() -> None:
    emb = BagOfWordsEmbedder()
    with pytest.raises(InputError, match="same passages"):
        HybridRetriever(BM25Retriever.build(PASSAGES), DenseRetriever.build(PASSAGES[:3], emb))


def test_empty_query_raises(hybrid: HybridRetriever) -> None:
    with pytest.raises(InputError):
        hybrid.search(" ", k=3)


def test_dense_query_blocks_do_not_change_results(hybrid: HybridRetriever, monkeypatch: pytest.MonkeyPatch) -> None:
    queries = ["cat", "car fuel", "bread", "rain", "garage"]
    expected = hybrid.dense.search_many(queries, k=3)
    monkeypatch.setattr("verirag.retrieval.dense._QUERY_BLOCK", 2)
    assert hybrid.dense.search_many(queries, k=3) == expected
