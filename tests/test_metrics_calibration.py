"""Calibration metrics against hand computations and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verirag.metrics import calibration as C


def test_ece_hand_computed():
    p = [0.1, 0.2, 0.8, 0.9]
    y = [0, 1, 1, 1]
    # 2 bins: [0, .5): conf .15, acc .5 ; [.5, 1]: conf .85, acc 1 -> ECE = .5*.35 + .5*.15
    assert C.ece(p, y, n_bins=2) == pytest.approx(0.5 * 0.35 + 0.5 * 0.15)
    # p = 1.0 goes to the last (closed) bin, p = 0 to the first
    d = C.reliability_diagram([0.0, 1.0], [0, 1], n_bins=10)
    assert d.count[0] == 1 and d.count[-1] == 1 and d.ece == 0.0
    assert np.isnan(d.confidence[5])
    # adaptive bins: equal mass
    a = C.reliability_diagram(p, y, n_bins=2, strategy="adaptive")
    np.testing.assert_array_equal(a.count, [2, 2])
    assert C.ece(p, y, n_bins=2, strategy="adaptive") == pytest.approx(C.ece(p, y, n_bins=2))
    assert math.isnan(C.ece([], []))
    with pytest.raises(ValueError):
        C.ece([1.2], [1])


def test_ece_perfect_and_worst():
    assert C.ece([1.0, 1.0, 0.0], [1, 1, 0]) == 0.0
    assert C.ece([1.0, 0.0], [0, 1]) == 1.0


probs = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n), st.lists(st.integers(0, 1), min_size=n, max_size=n)
    )
)


@settings(max_examples=60, deadline=None)
@given(probs)
def test_against_sklearn(data):
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    p, y = np.array(data[0]), np.array(data[1])
    assert C.brier(p, y) == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    q = np.clip(p, 1e-6, 1 - 1e-6)
    assert C.nll(q, y) == pytest.approx(log_loss(y, q, labels=[0, 1]), rel=1e-9)
    if 0 < y.sum() < len(y):
        rounded = np.round(p, 1)  # ties
        assert C.auroc(rounded, y) == pytest.approx(roc_auc_score(y, rounded))
    else:
        assert math.isnan(C.auroc(p, y))
    assert 0 <= C.ece(p, y) <= 1


def test_nll_clipping():
    assert C.nll([0.0], [1]) == pytest.approx(-math.log(1e-12))
    assert C.nll([1.0], [1]) == pytest.approx(0.0, abs=1e-11)


def test_vectorised_rows():
    rng = np.random.default_rng(0)
    p = rng.random((5, 30))
    y = (rng.random((5, 30)) < p).astype(int)
    np.testing.assert_allclose(C.brier(p, y), [C.brier(a, b) for a, b in zip(p, y)])
    np.testing.assert_allclose(C.nll(p, y), [C.nll(a, b) for a, b in zip(p, y)])
    np.testing.assert_allclose(C.auroc(p, y), [C.auroc(a, b) for a, b in zip(p, y)])
