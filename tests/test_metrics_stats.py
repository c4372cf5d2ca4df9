"""Bootstrap, rank correlations, conformal quantile. (Learn then Test: test_learned_threshold.py.)"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from verirag.metrics import awf, stats


# ---------------------------------------------------------------- bootstrap
def _mean_rows(x):
    return np.asarray(x).mean(axis=-1)


def test_bootstrap_reproducible_and_modes_agree():
    rng = np.random.default_rng(1)
    x = rng.normal(size=200)
    a = stats.bootstrap_ci(np.mean, x, n_resamples=300, seed=7, keep_distribution=True)
    b = stats.bootstrap_ci(np.mean, x, n_resamples=300, seed=7, keep_distribution=True)
    c = stats.bootstrap_ci(
        _mean_rows, x, n_resamples=300, seed=7, vectorized=True, batch_size=37, keep_distribution=True
    )
    np.testing.assert_array_equal(a.distribution, b.distribution)
    np.testing.assert_allclose(a.distribution, c.distribution)
    assert (a.low, a.high) == (b.low, b.high)
    assert a.low < a.estimate < a.high
    # normal-theory check: se of the mean ~ 1 / sqrt(200)
    assert a.standard_error == pytest.approx(1 / math.sqrt(200), rel=0.25)
    d = stats.bootstrap_ci(np.mean, x, n_resamples=300, seed=8)
    assert (d.low, d.high) != (a.low, a.high)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31), st.integers(3, 60))
def test_bootstrap_same_seed_same_interval(seed, n):
    x = np.random.default_rng(seed).random(n)
    r1 = stats.bootstrap_ci(np.median, x, n_resamples=50, seed=seed)
    r2 = stats.bootstrap_ci(np.median, x, n_resamples=50, seed=seed)
    assert (r1.low, r1.high, r1.estimate) == (r2.low, r2.high, r2.estimate)


def test_bootstrap_awf_statistics_all_modes_identical():
    rng = np.random.default_rng(3)
    n = 300
    s = np.round(rng.random(n), 2)
    A = (rng.random(n) < 0.7).astype(int)
    V = A * (rng.random(n) < s).astype(int)
    for stat in (awf.best_f1_statistic, awf.pr_auc_statistic):
        w = stats.bootstrap_ci(stat, s, V, A, n_resamples=120, seed=5, keep_distribution=True)
        r = stats.bootstrap_ci(stat, s, V, A, n_resamples=120, seed=5, vectorized=True, keep_distribution=True)
        lo = stats.bootstrap_ci(stat, s, V, A, n_resamples=120, seed=5, vectorized=False, keep_distribution=True)
        np.testing.assert_allclose(w.distribution, lo.distribution)
        np.testing.assert_allclose(r.distribution, lo.distribution)
        assert w.estimate == pytest.approx(stat(s, V, A))
        assert w.low <= w.estimate <= w.high


def test_bootstrap_counts_invalid_resamples():
    x = np.array([0, 0, 0, 1.0])
    res = stats.bootstrap_ci(lambda v: np.nan if v.sum() == 0 else 1.0, x, n_resamples=200, seed=0)
    assert res.n_invalid > 0 and res.low == res.high == 1.0


def test_resample_weights():
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    np.testing.assert_array_equal(stats.resample_weights(idx, 3), [[2, 0, 1], [0, 1, 2]])
    x = np.array([1.0, 2.0, 4.0])
    wmean = lambda v, indices: stats.resample_weights(indices, 3) @ v / 3  # noqa: E731
    a = stats.bootstrap_ci(wmean, x, n_resamples=40, seed=1, vectorized="indices", keep_distribution=True)
    b = stats.bootstrap_ci(np.mean, x, n_resamples=40, seed=1, keep_distribution=True)
    np.testing.assert_allclose(a.distribution, b.distribution)


def test_bootstrap_argument_checks():
    with pytest.raises(ValueError):
        stats.bootstrap_ci(np.mean, np.arange(3), np.arange(4))
    with pytest.raises(ValueError):
        stats.bootstrap_ci(np.mean, np.arange(3), confidence=1.5)
    with pytest.raises(ValueError):
        stats.bootstrap_ci(lambda x: x.mean(axis=-1)[:1], np.arange(5.0), vectorized=True, n_resamples=4)


# ---------------------------------------------------------------- ranks and correlation
small = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 5), min_size=n, max_size=n),
        st.lists(st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 1)), min_size=n, max_size=n),
    )
)


@settings(max_examples=150, deadline=None)
@given(small)
def test_rank_correlations_equal_scipy(data):
    x, y = np.array(data[0], float), np.array(data[1], float)
    np.testing.assert_allclose(stats.rankdata(y), scipy.stats.rankdata(y))
    want_r = scipy.stats.spearmanr(x, y).statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else float("nan")
    want_t = scipy.stats.kendalltau(x, y, variant="b").statistic if np.ptp(x) > 0 and np.ptp(y) > 0 else float("nan")
    got_r, got_t = stats.spearman(x, y), stats.kendall_tau_b(x, y)
    if math.isnan(want_r):
        assert math.isnan(got_r) and math.isnan(got_t)
    else:
        assert got_r == pytest.approx(want_r, abs=1e-9)
        assert got_t == pytest.approx(want_t, abs=1e-9)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=50))
def test_inversion_count_brute_force(a):
    want = sum(1 for i in range(len(a)) for j in range(i + 1, len(a)) if a[i] > a[j])
    assert stats._count_inversions(np.array(a, dtype=np.int64)) == want


def test_kendall_hand_computed_and_large():
    # x = 1,2,3,4 ; y = 1,3,2,4: 5 concordant, 1 discordant, no ties -> (5-1)/6
    assert stats.kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2, 5000)
    y = np.round(rng.random(5000) + 0.3 * x, 2)
    assert stats.kendall_tau_b(x, y) == pytest.approx(scipy.stats.kendalltau(x, y).statistic)
    rows = rng.random((4, 50))
    np.testing.assert_allclose(
        stats.spearman(rows, rows[::-1]), [scipy.stats.spearmanr(a, b).statistic for a, b in zip(rows, rows[::-1])]
    )


def test_metric_human_correlation_table():
    recs = [
        {"em": e, "recall": r, "label_correct": h}
        for e, r, h in [(0, 1, 1), (1, 1, 1), (0, 0.5, 1), (0, 0, 0), (0, 0.2, 0), (0, None, 1)]
    ]
    t = stats.metric_human_correlation(recs, ["em", "recall"])
    assert [r.metric for r in t.rows] == ["em", "recall"]
    assert t.rows[1].n == 5 and t.rows[0].n == 6
    assert t.best().metric == "recall"
    assert t.rows[1].kendall_tau_b == pytest.approx(
        scipy.stats.kendalltau([1, 1, 0.5, 0, 0.2], [1, 1, 1, 0, 0]).statistic
    )
    text = t.to_text()
    assert "recall" in text and "Kendall" in text
    t2 = stats.metric_human_correlation(recs, ["recall"], n_resamples=50)
    lo, hi = t2.rows[0].spearman_ci
    assert lo <= hi


# ---------------------------------------------------------------- conformal
def test_conformal_quantile_hand_and_numpy():
    s = np.arange(1, 100)  # n = 99, alpha = .1 -> k = ceil(100 * .9) = 90
    assert stats.conformal_quantile(s, 0.1) == 90
    assert stats.conformal_quantile([1, 2, 3], 0.1) == math.inf  # k = ceil(3.6) = 4 > 3
    rng = np.random.default_rng(0)
    x = rng.random(57)
    k = math.ceil(58 * 0.8)
    assert stats.conformal_quantile(x, 0.2) == np.quantile(x, k / 57, method="inverted_cdf")


def test_conformal_coverage_by_simulation():
    rng = np.random.default_rng(1)
    alpha, n, reps = 0.1, 50, 2000
    cal = rng.normal(size=(reps, n))
    test = rng.normal(size=reps)
    q = np.array([stats.conformal_quantile(c, alpha) for c in cal])
    coverage = (test <= q).mean()
    assert 1 - alpha - 0.02 <= coverage <= 1 - alpha + 1 / (n + 1) + 0.02
