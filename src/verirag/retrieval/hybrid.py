"""Hybrid retrieval: BM25 and dense results fused by Reciprocal Rank Fusion (RRF).

Why RRF rather than a weighted sum of scores: BM25 scores are unbounded and depend on query
length and corpus statistics (a 3-word query scores ~10, a 15-word query ~40), while cosine
similarities lie in [-1, 1] and cluster in a narrow band per model. Any fixed weighting of the
two is miscalibrated for some queries. RRF uses only ranks,

    score(d) = sum over retrievers r of 1 / (k_rrf + rank_r(d)),   rank from 1,

so each retriever contributes on the same scale; a passage ranked well by both wins. k_rrf = 60
is the constant of Cormack, Clarke & Buettcher (SIGIR 2009), which damps the weight of the
very first ranks. A passage missing from one retriever's candidate list contributes nothing
from that retriever.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import InputError
from .base import Hits, Retriever, check_k
from .bm25 import BM25Retriever
from .dense import DenseRetriever

# At least this many candidates are taken from each retriever, so that fusion can promote
# a passage that one retriever ranks moderately and the other ranks highly.
MIN_CANDIDATES = 50


class HybridRetriever(Retriever):
    """RRF fusion of a `BM25Retriever` and a `DenseRetriever` built over the same passages."""

    def __init__(self, bm25: BM25Retriever, dense: DenseRetriever, k_rrf: float = 60) -> None:
        if len(bm25.passages) != len(dense.passages) or any(
            a.id != b.id for a, b in zip(bm25.passages, dense.passages)
        ):
            raise InputError("hybrid retrieval needs BM25 and dense indexes over the same passages")
        if k_rrf < 0:
            raise InputError(f"k_rrf must be >= 0, got {k_rrf}")
        self.bm25 = bm25
        self.dense = dense
        self.k_rrf = float(k_rrf)
        self.passages = bm25.passages

    def n_candidates(self, k: int) -> int:
        """How many hits are taken from each retriever for a final top-k."""
        return max(4 * k, MIN_CANDIDATES)

    def search_hits_many(self, queries: Sequence[str], k: int) -> list[Hits]:
        k = check_k(k)
        n = self.n_candidates(k)
        lexical = self.bm25.search_hits_many(queries, n)
        semantic = self.dense.search_hits_many(queries, n)
        return [self._fuse([a, b], k) for a, b in zip(lexical, semantic)]

    def search_hits(self, query: str, k: int) -> Hits:
        return self.search_hits_many([query], k)[0]

    def _fuse(self, runs: list[Hits], k: int) -> Hits:
        fused: dict[int, float] = {}
        best_rank: dict[int, int] = {}
        for idx, _scores in runs:
            for rank, i in enumerate(idx.tolist(), start=1):
                fused[i] = fused.get(i, 0.0) + 1.0 / (self.k_rrf + rank)
                best_rank[i] = min(best_rank.get(i, rank), rank)
        # Ties (common: rank 1 in one list vs rank 1 in the other) go to the better single rank,
        # then to the lower passage position, so results are deterministic.
        order = sorted(fused, key=lambda i: (-fused[i], best_rank[i], i))[:k]
        return (np.asarray(order, dtype=np.int64), np.asarray([fused[i] for i in order], dtype=np.float64))
