"""group_bootstrap_intervals: the cluster bootstrap behind paired comparisons and Figure 6's cells."""

from __future__ import annotations

import numpy as np
import pytest

from verirag.metrics.stats import bootstrap_intervals, group_bootstrap_intervals, resample_indices


def mean_stat(x):
    return lambda ix: {"mean": x[ix].mean(axis=1)}


def test_groups_of_one_are_the_example_bootstrap():
    x = np.random.default_rng(0).normal(size=40)
    a = group_bootstrap_intervals(mean_stat(x), [f"g{i:02d}" for i in range(40)], n_resamples=300, seed=3)
    b = bootstrap_intervals(mean_stat(x), 40, n_resamples=300, seed=3)
    assert (a["mean"].low, a["mean"].high, a["mean"].estimate) == pytest.approx(
        (b["mean"].low, b["mean"].high, b["mean"].estimate)
    )


@pytest.mark.parametrize("sizes", [(2,) * 15, (1, 2, 3) * 5])
def test_whole_groups_are_drawn(sizes):
    """Against a brute-force cluster bootstrap on the same draws, for equal and unequal sizes."""
    rng = np.random.default_rng(1)
    groups = [f"q{g:02d}" for g, n in enumerate(sizes) for _ in range(n)]
    x = rng.normal(size=len(groups)) + np.array([int(g[1:]) % 3 for g in groups])
    got = group_bootstrap_intervals(mean_stat(x), groups, n_resamples=200, seed=5, confidence=0.9)["mean"]
    names = sorted(set(groups))
    members = [[i for i, g in enumerate(groups) if g == n] for n in names]
    brute = [
        x[[i for g in row for i in members[g]]].mean() for ix in resample_indices(len(names), 200, 5) for row in ix
    ]
    assert (got.low, got.high) == pytest.approx(tuple(np.quantile(brute, [0.05, 0.95])))
    assert got.estimate == pytest.approx(x.mean()) and got.n_invalid == 0
