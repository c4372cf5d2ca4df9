"""AwF metrics: hand-computed values, empty-denominator conventions, curves, statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verirag.metrics import awf


def test_hand_computed_hard_labels():
    v = [1, 1, 1, 0, 0, 0]
    V = [1, 0, 1, 1, 0, 0]
    A = [1, 1, 1, 1, 1, 0]
    # TP = 2, Pred-Pos = 3, Faithful = 3, F-Answerable = 5
    assert awf.awf_precision(v, V) == pytest.approx(2 / 3)
    assert awf.awf_recall(v, V, A) == pytest.approx(2 / 5)
    assert awf.awf_f1(v, V, A) == pytest.approx(2 * (2 / 3) * (2 / 5) / (2 / 3 + 2 / 5))
    cr, ar = awf.recall_decomposition(v, V, A)
    assert (cr, ar) == (pytest.approx(2 / 3), pytest.approx(3 / 5))
    assert cr * ar == pytest.approx(awf.awf_recall(v, V, A))
    s = awf.awf_scores(v, V, A)
    assert (s.true_pos, s.pred_pos, s.faithful, s.answerable) == (2, 3, 3, 5)
    # QPP: labels are answerability
    assert awf.qpp_precision(v, A) == 1.0
    assert awf.qpp_recall(v, A) == pytest.approx(3 / 5)


def test_empty_denominator_conventions():
    # never answers: precision 1 (vacuous), recall 0, F1 0
    assert awf.awf_precision([0, 0], [0, 1]) == 1.0
    assert awf.awf_recall([0, 0], [0, 1], [1, 1]) == 0.0
    assert awf.awf_f1([0, 0], [0, 1], [1, 1]) == 0.0
    # nothing answerable: recall 1; abstaining everywhere scores F1 = 1, answering scores 0
    assert awf.awf_recall([1, 0], [0, 0], [0, 0]) == 1.0
    assert awf.awf_f1([0, 0], [0, 0], [0, 0]) == 1.0
    assert awf.awf_f1([1, 0], [0, 0], [0, 0]) == 0.0
    # no faithful answer: classifier recall 1, product still equals the recall
    assert awf.recall_decomposition([1, 0], [0, 0], [1, 1]) == (1.0, 0.0)
    # override
    assert math.isnan(awf.awf_precision([0, 0], [0, 1], zero_division=float("nan")))
    # inconsistent labels: a faithful answer to an unanswerable question
    with pytest.raises(ValueError, match="answerable"):
        awf.awf_recall([1], [1], [0])
    assert awf.awf_recall([1], [1], [0], strict=False) == 1.0


def test_curve_handles_ties_as_one_threshold():
    s = [0.9, 0.8, 0.8, 0.3, 0.1]
    V = [1, 0, 1, 0, 0]
    A = [1, 1, 1, 1, 0]
    c = awf.awf_curve(s, V, A)
    np.testing.assert_array_equal(c.thresholds, [0.9, 0.8, 0.3, 0.1])
    np.testing.assert_allclose(c.precision, [1, 2 / 3, 2 / 4, 2 / 5])
    np.testing.assert_allclose(c.recall, [1 / 4, 2 / 4, 2 / 4, 2 / 4])
    b = awf.best_f1(s, V, A)
    assert b.threshold == 0.8 and b.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    # step-wise area: 1/4 * 1 + 1/4 * 2/3
    assert awf.pr_auc(s, V, A) == pytest.approx(0.25 + 0.25 * 2 / 3)


def test_hard_label_pr_auc_is_precision_times_recall():
    v = [1, 1, 0, 1]
    V = [1, 0, 0, 1]
    A = [1, 1, 1, 1]
    p, r = awf.awf_precision(v, V), awf.awf_recall(v, V, A)
    assert awf.pr_auc(v, V, A, hard=True) == pytest.approx(p * r)
    assert math.isnan(awf.pr_auc(v, [0] * 4, [0] * 4, hard=True))


def test_best_f1_degenerate_cases():
    assert awf.best_f1([0.5, 0.2], [0, 0], [0, 0]) == (1.0, math.inf, 1.0, 1.0)
    b = awf.best_f1([0.5, 0.2], [0, 0], [1, 1])
    assert b.f1 == 0.0
    assert math.isnan(awf.pr_auc([0.5], [0], [0]))


labels = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.7, 0.9, 1.0]), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
    )
)


def _fix(V, A):
    V, A = np.array(V), np.array(A)
    return V, A | V


@settings(max_examples=150, deadline=None)
@given(labels)
def test_best_f1_equals_brute_force(data):
    s, V, A = data
    V, A = _fix(V, A)
    s = np.array(s)
    best = 1.0 if A.sum() == 0 else 0.0  # the abstain-everywhere threshold
    for t in np.unique(s):
        best = max(best, awf.awf_f1((s >= t).astype(int), V, A))
    assert awf.best_f1(s, V, A).f1 == pytest.approx(best)
    # the reported threshold attains it, +inf (abstain on everything) too
    b = awf.best_f1(s, V, A)
    assert awf.awf_f1((s >= b.threshold).astype(int), V, A) == pytest.approx(b.f1)


@settings(max_examples=150, deadline=None)
@given(labels)
def test_curve_monotone_in_recall_and_matches_hard_labels(data):
    s, V, A = data
    V, A = _fix(V, A)
    s = np.array(s)
    c = awf.awf_curve(s, V, A)
    assert (np.diff(c.thresholds) < 0).all()
    assert (np.diff(c.recall) >= 0).all()  # lowering the threshold never loses recall
    assert (np.diff(c.pred_pos) > 0).all()
    for t, p, r in zip(c.thresholds, c.precision, c.recall):
        v = (s >= t).astype(int)
        assert p == pytest.approx(awf.awf_precision(v, V))
        assert r == pytest.approx(awf.awf_recall(v, V, A))
    assert ((c.precision >= 0) & (c.precision <= 1)).all()


@settings(max_examples=40, deadline=None)
@given(labels)
def test_pr_auc_equals_sklearn_average_precision_when_V_is_A(data):
    from sklearn.metrics import average_precision_score

    s, V, _ = data
    V = np.array(V)
    assume(V.sum() > 0)
    # with V = A (every answerable question answered faithfully) the AwF curve is the
    # classifier's precision-recall curve and the step-wise area is average precision
    assert awf.pr_auc(s, V, V) == pytest.approx(average_precision_score(V, s))


@settings(max_examples=60, deadline=None)
@given(labels, st.integers(1, 6), st.integers(0, 10_000))
def test_statistic_modes_agree(data, B, seed):
    s, V, A = data
    V, A = _fix(V, A)
    s = np.array(s)
    n = len(s)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(B, n))
    for stat in (awf.best_f1_statistic, awf.pr_auc_statistic):
        loop = np.array([stat(s[i], V[i], A[i]) for i in idx])
        rows = stat(s[idx], V[idx], A[idx])
        indexed = stat(s, V, A, indices=idx)
        np.testing.assert_allclose(rows, loop, err_msg=repr(stat))
        np.testing.assert_allclose(indexed, loop, err_msg=repr(stat))
    v = (s >= 0.5).astype(int)
    for stat in (awf.hard_pr_auc_statistic, awf.f1_statistic):
        loop = np.array([stat(v[i], V[i], A[i]) for i in idx])
        np.testing.assert_allclose(stat(v, V, A, indices=idx), loop)
        np.testing.assert_allclose(stat(v[idx], V[idx], A[idx]), loop)


def test_qpp_curve_is_awf_curve_with_answerability():
    s, A = [0.9, 0.4, 0.2], [1, 0, 1]
    c = awf.qpp_curve(s, A)
    np.testing.assert_allclose(c.precision, [1, 0.5, 2 / 3])
    np.testing.assert_allclose(c.recall, [0.5, 0.5, 1])
