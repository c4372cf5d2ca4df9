"""Deterministic KV-prefix reuse: evaluation paths, and an LRU of saved states within a budget.

llama.cpp's logits depend on how the tokens were split into decode batches (measured on
qwen2.5-0.5b Q4_K_M: reusing a prefix that ends inside a batch moved logits by up to 0.2, while a
prefix that ends on a batch boundary gave bitwise-identical logits). So every request has one
canonical *path*, the sequence of decode batches a fresh evaluation uses:
- a prompt: its tokens in chunks of n_batch counted from its first position;
- generated tokens: one batch each, exactly as decoding evaluated them;
- a suffix after a generation: its tokens in chunks of n_batch counted from its first position.
A saved state can serve a request only for the batches both paths share exactly (same tokens,
same split), so the reused KV cache is the one a fresh evaluation would have built, and what is
evaluated next is split as a fresh evaluation splits it. Results never depend on what happened
to be cached.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Chunk = tuple[int, ...]
Path = tuple[Chunk, ...]


def batched(tokens: Sequence[int], n_batch: int) -> list[Chunk]:
    """`tokens` in decode batches of `n_batch`, counted from the first of them."""
    return [tuple(tokens[i : i + n_batch]) for i in range(0, len(tokens), n_batch)]


def singles(tokens: Sequence[int]) -> list[Chunk]:
    """Generated tokens: one decode batch each."""
    return [(int(t),) for t in tokens]


def shared_chunks(a: Sequence[Chunk], b: Sequence[Chunk]) -> int:
    """How many leading batches two paths share exactly."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def n_tokens(path: Sequence[Chunk]) -> int:
    return sum(len(c) for c in path)


@dataclass
class Saved:
    path: Path
    state: Any  # what the backend needs to restore this KV cache (e.g. a LlamaState)
    nbytes: int


class PrefixStore:
    """Saved KV states keyed by their evaluation path, least recently used evicted first, never
    holding more than `budget_bytes` (a state larger than the budget is not kept)."""

    def __init__(self, budget_bytes: int):
        self.budget_bytes = int(budget_bytes)
        self._items: OrderedDict[Path, Saved] = OrderedDict()
        self.nbytes = 0
        self.peak_bytes = 0
        self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._items)

    def best(self, path: Sequence[Chunk]) -> tuple[Saved | None, int]:
        """The saved state sharing the most leading batches with `path`, and how many."""
        best, best_n = None, 0
        for saved in self._items.values():
            n = shared_chunks(saved.path, path)
            if n > best_n or (n == best_n and best is not None and n and len(saved.path) < len(best.path)):
                best, best_n = saved, n
        if best is None:
            self.misses += 1
        else:
            self.hits += 1
            self._items.move_to_end(best.path)
        return best, best_n

    def put(self, path: Sequence[Chunk], state: Any, nbytes: int) -> bool:
        """Keep `state` for `path` (replacing one saved for the same path); False if it cannot fit."""
        path = tuple(path)
        if nbytes > self.budget_bytes:
            return False
        old = self._items.pop(path, None)
        if old is not None:
            self.nbytes -= old.nbytes
        while self._items and self.nbytes + nbytes > self.budget_bytes:
            _, evicted = self._items.popitem(last=False)
            self.nbytes -= evicted.nbytes
            self.evictions += 1
        self._items[path] = Saved(path, state, int(nbytes))
        self.nbytes += int(nbytes)
        self.peak_bytes = max(self.peak_bytes, self.nbytes)
        return True

    def covers(self, path: Sequence[Chunk]) -> bool:
        """Whether a saved state holds all of `path` (no need to save it again)."""
        return any(len(s.path) >= len(path) and shared_chunks(s.path, path) == len(path) for s in self._items.values())

    def clear(self) -> None:
        self._items.clear()
        self.nbytes = 0

    def stats(self) -> dict[str, int]:
        return {
            "states": len(self._items),
            "bytes": self.nbytes,
            "peak_bytes": self.peak_bytes,
            "budget_bytes": self.budget_bytes,
            "hits": self.hits,
            "misses": self.misses,
            "evictions": self.evictions,
        }
