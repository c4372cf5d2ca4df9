"""What every retriever shares: query validation and turning index hits into `ScoredPassage`.

Retrievers work internally on positions in their passage list (numpy arrays of indices and
scores) so that fusion (hybrid) can combine them without string keys; `to_scored` converts
at the edge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError
from ..types import Passage, ScoredPassage

# (indices into the passage list, scores), best first.
Hits = tuple[np.ndarray, np.ndarray]


def check_query(query: object) -> str:
    """Return the query if it is a non-blank string, else raise `InputError`."""
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    if not query.strip():
        raise InputError("query is empty")
    return query


def check_k(k: object) -> int:
    """Return k if it is a positive integer, else raise `InputError`."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k (number of passages to return) must be a positive integer, got {k!r}")
    return int(k)


def top_k(scores: np.ndarray, k: int) -> Hits:
    """Indices and scores of the k highest scores, best first; ties go to the lower index.

    argpartition selects the k best in O(n) before sorting only those k, which matters when
    the corpus has hundreds of thousands of passages and k is 5. Equal scores are common
    (duplicate passages), so the cut at the k-th score is made by index, not left to
    argpartition, and results never depend on its internal order.
    """
    n = scores.shape[0]
    k = min(k, n)
    if k == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=scores.dtype)
    if k < n:
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        above = np.flatnonzero(scores > kth)
        cand = np.concatenate([above, np.flatnonzero(scores == kth)[: k - len(above)]])
    else:
        cand = np.arange(n)
    # lexsort sorts by the last key first: score descending, then index ascending.
    order = np.lexsort((cand, -scores[cand]))
    idx = cand[order].astype(np.int64)
    return idx, scores[idx]


def to_scored(passages: Sequence[Passage], hits: Hits) -> list[ScoredPassage]:
    idx, scores = hits
    return [
        ScoredPassage(passage=passages[int(i)], score=float(s), rank=r) for r, (i, s) in enumerate(zip(idx, scores))
    ]


class Retriever:
    """Mixin: `search` / `search_many` over a subclass's `passages`, `search_hits` and
    `search_hits_many` (which validate their inputs)."""

    passages: Sequence[Passage]

    def search_hits(self, query: str, k: int) -> Hits:  # pragma: no cover - abstract
        raise NotImplementedError

    def search_hits_many(self, queries: Sequence[str], k: int) -> list[Hits]:  # pragma: no cover
        raise NotImplementedError

    def search(self, query: str, k: int = 5) -> list[ScoredPassage]:
        """Up to k passages, best first. An empty query raises `InputError`."""
        return to_scored(self.passages, self.search_hits(query, k))

    def search_many(self, queries: Sequence[str], k: int = 5) -> list[list[ScoredPassage]]:
        """`search` for each query; all queries are validated before any is run."""
        return [to_scored(self.passages, h) for h in self.search_hits_many(queries, k)]


# --------------------------------------------------------------------------- index files
def rebuild_hint(index_dir: Path | str | None = None) -> str:
    """How to make a broken index whole again: build it anew from its corpus."""
    return f"rebuild the index with `verirag index CORPUS --out {index_dir or 'DIR'}`"


def corrupt_index_file(path: Path, why: BaseException | str, index_dir: Path | str | None = None) -> InputError:
    """The one error of an index file that cannot be read back: the file, what is wrong, the fix."""
    if isinstance(why, OSError) and why.strerror:  # its str() repeats the path
        why = why.strerror
    elif isinstance(why, BaseException):
        why = f"{type(why).__name__}: {why}"
    return InputError(f"index file {path} is missing or corrupt ({why}); {rebuild_hint(index_dir)}")


def read_index_json(path: Path, index_dir: Path | str | None = None) -> dict[str, Any]:
    """A JSON object of an index folder; anything else (missing, truncated, another type) is an
    `InputError` naming the file."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    # UnicodeDecodeError and JSONDecodeError are ValueErrors; a deep enough nesting is a RecursionError
    except (OSError, ValueError, RecursionError) as e:
        raise corrupt_index_file(path, e, index_dir) from e
    if not isinstance(value, dict):
        raise corrupt_index_file(path, f"a JSON {type(value).__name__}, not an object", index_dir)
    return value


def read_index_array(path: Path, index_dir: Path | str | None = None, *, mmap: bool = False) -> np.ndarray:
    """A .npy array of an index folder. A file cut short makes numpy raise EOFError or ValueError
    (its header promises more bytes than there are); both become an `InputError` naming the file.
    `mmap`: only map the file, to check it before a library that reads it itself (bm25s)."""
    try:
        return np.load(path, allow_pickle=False, mmap_mode="r" if mmap else None)
    except (OSError, ValueError, EOFError) as e:
        raise corrupt_index_file(path, e, index_dir) from e
