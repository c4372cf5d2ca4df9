"""Lexical retrieval with BM25, on the bm25s library.

bm25s precomputes every (term, passage) BM25 weight into a sparse matrix at build time, so a
query only sums a few posting lists: much faster than scoring every passage per query (see
benchmarks/bench_bm25.py). The scoring variant is Lucene's (idf = ln(1 + (N - n + 0.5) /
(n + 0.5)), always positive) with k1 = 1.5, b = 0.75.

The title and the text of each passage are indexed together: titles often carry the entity a
question names ("Michael Jackson (writer)") while the text does not repeat it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from ..errors import InputError
from ..types import Passage
from .analyzer import EnglishAnalyzer
from .base import (
    Hits,
    Retriever,
    check_k,
    check_query,
    corrupt_index_file,
    read_index_array,
    read_index_json,
    rebuild_hint,
    top_k,
)

_META = "bm25.json"
# what bm25s writes (its default names): checked one by one before bm25s reads them, so that a bad
# file is named in the error rather than surfacing as whatever bm25s or numpy raise
_BM25S_JSON = ("params.index.json", "vocab.index.json")
_BM25S_ARRAYS = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")
_EMPTY: Hits = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32))


def passage_text(p: Passage) -> str:
    """The text that is indexed for a passage: its title (when any) and its text."""
    return f"{p.title}\n{p.text}" if p.title else p.text


class BM25Retriever(Retriever):
    """BM25 over a fixed list of passages.

    Results contain only passages that share at least one term with the query, so a search
    may return fewer than k passages (none for a query of unknown words or only stopwords).
    """

    def __init__(self, passages: Sequence[Passage], model: bm25s.BM25, analyzer: EnglishAnalyzer | None = None) -> None:
        self.passages = list(passages)
        self.model = model
        self.analyzer = analyzer or EnglishAnalyzer()

    @classmethod
    def build(cls, passages: Sequence[Passage], k1: float = 1.5, b: float = 0.75) -> BM25Retriever:
        """Tokenise and index `passages` (title + text)."""
        if not passages:
            raise InputError("cannot build a BM25 index over zero passages")
        analyzer = EnglishAnalyzer()
        tokens = analyzer.many([passage_text(p) for p in passages])
        if not any(tokens):
            raise InputError("no passage contains an indexable word (all text is stopwords or punctuation)")
        # csc_backend="auto" builds the sparse matrix with scipy when it is installed: about
        # twice as fast as bm25s's pure-numpy path; the index is identical either way.
        model = bm25s.BM25(k1=k1, b=b, method="lucene", csc_backend="auto")
        model.index(tokens, show_progress=False)
        return cls(passages, model, analyzer)

    def search_hits(self, query: str, k: int) -> Hits:
        k = check_k(k)
        check_query(query)
        ids = self.model.get_tokens_ids(self.analyzer(query))
        if not ids:
            return _EMPTY
        scores = self.model.get_scores_from_ids(ids)
        idx, top = top_k(scores, k)
        keep = top > 0
        return idx[keep], top[keep]

    def search_hits_many(self, queries: Sequence[str], k: int) -> list[Hits]:
        for q in queries:  # validate all before doing any work
            check_query(q)
        return [self.search_hits(q, k) for q in queries]

    def save(self, directory: str | Path) -> None:
        """Write the bm25s index files and bm25.json (analyzer, passage count) into `directory`."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        self.model.save(str(d), show_progress=False)
        meta = {"analyzer": self.analyzer.name, "n": len(self.passages)}
        (d / _META).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, passages: Sequence[Passage]) -> BM25Retriever:
        """Read an index written by `save`; `passages` must be the list it was built from."""
        d = Path(directory)
        analyzer = EnglishAnalyzer()
        meta = read_index_json(d / _META, d.parent)
        vocab = {name: read_index_json(d / name, d.parent) for name in _BM25S_JSON}["vocab.index.json"]
        data, rows, pointers = (read_index_array(d / name, d.parent, mmap=True) for name in _BM25S_ARRAYS)
        # the CSC matrix's own arithmetic: a column (two pointers) per term id, a row index per weight;
        # bm25s's empty token "" has an id but no column
        ids = [i for t, i in vocab.items() if t]
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids):
            raise corrupt_index_file(d / _BM25S_JSON[1], "a term id that is not a natural number", d.parent)
        if not (pointers.ndim == data.ndim == rows.ndim == 1 and len(pointers) > max(ids, default=-1) + 1):
            raise corrupt_index_file(d / _BM25S_ARRAYS[2], f"{len(pointers)} pointers for {len(ids)} terms", d.parent)
        weights, row_file, pointer_file = (d / name for name in _BM25S_ARRAYS)
        if len(data) != len(rows):
            raise corrupt_index_file(weights, f"{len(data)} weights, {len(rows)} row indices in {row_file}", d.parent)
        if int(pointers[-1]) != len(data):
            raise corrupt_index_file(
                pointer_file, f"it ends at {int(pointers[-1])}, {weights} holds {len(data)}", d.parent
            )
        del data, rows, pointers  # only mapped to check them; bm25s reads them itself
        try:
            model = bm25s.BM25.load(str(d), show_progress=False)
            n_docs = int(model.scores["num_docs"])
        except Exception as e:  # whatever else a damaged file makes bm25s raise
            raise InputError(f"BM25 index in {d} is corrupt ({type(e).__name__}: {e}); {rebuild_hint(d.parent)}") from e
        rows = model.scores["indices"]
        if len(rows) and int(rows.max()) >= n_docs:
            raise corrupt_index_file(d / _BM25S_ARRAYS[1], f"a passage index past the {n_docs} passages", d.parent)
        if meta.get("analyzer") != analyzer.name:
            raise InputError(
                f"BM25 index in {d} was tokenised with {meta.get('analyzer')!r}, this "
                f"version of verirag uses {analyzer.name!r}; rebuild the index"
            )
        if n_docs != len(passages):
            raise InputError(
                f"BM25 index in {d} holds {n_docs} passages but {len(passages)} were given; {rebuild_hint(d.parent)}"
            )
        return cls(passages, model, analyzer)
