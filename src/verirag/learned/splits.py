"""Splits by question group: every caller that holds questions out draws them here.

A question's items (its retrieved documents, HotpotQA's twin examples, one answer per retriever)
share its wording, so a split by item would leak it: a group is always wholly on one side.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np


def shuffled_groups(groups: Sequence[Hashable], seed: int = 0) -> list:
    """The distinct groups, sorted, then shuffled by numpy's default_rng(seed) (the one RNG of
    every split, cross-validation folds included)."""
    distinct = sorted(set(groups))
    return [distinct[i] for i in np.random.default_rng(seed).permutation(len(distinct))]


def split_by_group(
    groups: Sequence[Hashable], share: float | None = None, seed: int = 0, *, count: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(rest, drawn): boolean masks over the items. Drawn are the items of the first `count`
    shuffled groups (`shuffled_groups`), or of round(share * number of groups) of them."""
    order = shuffled_groups(groups, seed)
    n = count if count is not None else round((share or 0.0) * len(order))
    drawn = set(order[:n])
    mask = np.array([g in drawn for g in groups], dtype=bool)
    return ~mask, mask


def split_by_group_within(
    groups: Sequence[Hashable], strata: Sequence[Hashable], share: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """`split_by_group` drawn within each stratum apart (`strata[i]` is item i's): a stratum added
    to the data leaves the others' split as it was without it."""
    rest = np.zeros(len(groups), dtype=bool)
    drawn = np.zeros(len(groups), dtype=bool)
    for stratum in sorted(set(strata), key=repr):
        idx = np.array([i for i, s in enumerate(strata) if s == stratum])
        r, d = split_by_group([groups[i] for i in idx], share, seed)
        rest[idx], drawn[idx] = r, d
    return rest, drawn
