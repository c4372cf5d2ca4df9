"""Retrieval: load a corpus, chunk it, index it (BM25, dense, hybrid), search, save, load.

    from verirag.retrieval import load_corpus, Index
    corpus = load_corpus("docs/")             # corpus.skipped lists files left out, with reasons
    index = Index.build(corpus.passages, kind="hybrid")
    hits = index.search("who wrote Beer Hunter?", k=5)
    index.save("my-index"); index = Index.load("my-index")

Nothing heavy is imported until used: the embedding model (and torch) load only for dense or
hybrid indexes.
"""

from __future__ import annotations

from .bm25 import BM25Retriever
from .chunking import chunk_passages, chunk_words
from .corpus import CorpusLoad, load_corpus
from .dense import DenseRetriever
from .embedder import DEFAULT_EMBEDDER, Embedder
from .hybrid import HybridRetriever
from .index import Index

__all__ = [
    "DEFAULT_EMBEDDER",
    "BM25Retriever",
    "CorpusLoad",
    "DenseRetriever",
    "Embedder",
    "HybridRetriever",
    "Index",
    "chunk_passages",
    "chunk_words",
    "load_corpus",
]
