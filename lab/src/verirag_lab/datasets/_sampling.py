"""Deterministic subsampling shared by every loader.

Loaders subsample their *source items* (questions) before any costly step (retrieval, reference
generation) and before building derived examples, so `n` counts questions and HotpotQA's twin
examples of one question are always kept or dropped together.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TypeVar

from verirag.errors import InputError

T = TypeVar("T")


def check_n(n: object) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise InputError(f"n (number of questions to sample) must be a positive integer, got {n!r}")
    return n


def subsample(items: Sequence[T], n: int | None, seed: int = 0) -> list[T]:
    """`n` items drawn with `random.Random(seed)`, in their original order; all if n is None or
    n >= len(items). The same (items, n, seed) always gives the same selection."""
    n = check_n(n)
    if n is None or n >= len(items):
        return list(items)
    picked = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in picked]
