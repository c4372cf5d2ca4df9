"""Cross-validated thresholds: folds, the in-sample best threshold, out-of-fold decisions."""

from __future__ import annotations

import numpy as np
import pytest

from verirag.learned.threshold import ThresholdController, best_threshold, cross_fit_target, cv_threshold, kfold_indices


# --------------------------------------------------------------------------- folds
def test_folds_partition_and_balance():
    folds = kfold_indices(23, 5, seed=3)
    assert len(folds) == 5
    tests = np.concatenate([te for _, te in folds])
    assert sorted(tests.tolist()) == list(range(23))
    assert sorted(len(te) for _, te in folds) == [4, 4, 5, 5, 5]
    for tr, te in folds:
        assert not set(tr) & set(te)
        assert len(tr) + len(te) == 23
        assert np.all(np.diff(tr) > 0) and np.all(np.diff(te) > 0)


def test_folds_deterministic_and_seeded():
    a = kfold_indices(50, 5, seed=1)
    b = kfold_indices(50, 5, seed=1)
    c = kfold_indices(50, 5, seed=2)
    assert all(np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert not all(np.array_equal(x[1], y[1]) for x, y in zip(a, c))


def test_folds_keep_groups_together():
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 17, size=80).astype(str)  # string ids, uneven sizes
    folds = kfold_indices(80, 5, groups=groups, seed=0)
    fold_of = {}
    for f, (_, te) in enumerate(folds):
        for i in te:
            assert fold_of.setdefault(groups[i], f) == f, "a group is split across folds"
    assert len(set(fold_of.values())) == 5
    # each group's examples are all on one side of every split
    for tr, te in folds:
        assert not set(groups[tr]) & set(groups[te])


def test_folds_fewer_groups_than_folds():
    folds = kfold_indices(4, 5, groups=["a", "a", "b", "c"])
    assert len(folds) == 3  # one fold per group
    with pytest.raises(ValueError, match="at least 2 groups"):
        kfold_indices(3, 5, groups=["a", "a", "a"])
    with pytest.raises(ValueError):
        kfold_indices(1, 5)


# --------------------------------------------------------------------------- best threshold
def test_best_threshold_by_hand():
    # s:     0.1 0.4 0.4 0.8 ; keep (s >= t) -> gain_above, else gain_below
    s = [0.4, 0.1, 0.8, 0.4]
    above = [1, 0, 1, 0]
    below = [0, 1, 0, 1]
    # t = 0.1: all above -> 1+0+1+0 = 2 -> 0.5
    # t = 0.4: 0.1 below (1) + others above (1+1+0) = 3 -> 0.75
    # t = 0.8: 0.1, 0.4, 0.4 below (1+0+1) + 0.8 above (1) = 3 -> 0.75 (tie: smaller t wins)
    # t = inf: all below: 0+1+0+1 = 2 -> 0.5
    t, g = best_threshold(s, above, below)
    assert (t, g) == (0.4, 0.75)


def test_best_threshold_can_choose_inf():
    t, g = best_threshold([0.2, 0.9], [0, 0], [1, 1])
    assert t == np.inf and g == 1.0


def test_best_threshold_matches_brute_force():
    rng = np.random.default_rng(5)
    for _ in range(20):
        n = int(rng.integers(1, 30))
        s = rng.integers(0, 6, n) / 5.0  # many ties
        a, b = rng.random(n), rng.random(n)
        t, g = best_threshold(s, a, b)
        cands = np.r_[np.unique(s), np.inf]
        gains = [np.where(s >= c, a, b).mean() for c in cands]
        assert g == pytest.approx(max(gains))
        assert t == cands[int(np.argmax(gains))]


# --------------------------------------------------------------------------- cv threshold
def test_cv_threshold_by_hand_two_folds():
    # two groups -> two folds, each trained on the other
    s = np.array([0.2, 0.9, 0.3, 0.7])
    groups = ["g1", "g1", "g2", "g2"]
    above = np.array([0, 1, 0, 1])  # RAG right on the high scores
    below = np.array([1, 0, 1, 0])  # no-RAG right on the low scores
    res = cv_threshold(s, above, below, groups=groups, n_folds=2, seed=0)
    # fold trained on g1 (0.2 -> below, 0.9 -> above): best t = 0.9 (t=0.2 gives 0.5, 0.9 gives 1)
    # applied to g2: 0.3 < 0.9 below (right), 0.7 < 0.9 below (wrong) -> 1/2
    # fold trained on g2 (0.3, 0.7): best t = 0.7; applied to g1: 0.2 below (right), 0.9 above (right)
    by_fold = {tuple(te): t for (_, te), t in zip(res.folds, res.fold_thresholds)}
    assert by_fold[(2, 3)] == 0.9 and by_fold[(0, 1)] == 0.7
    assert res.kept.tolist() == [False, True, False, False]
    assert res.gain == pytest.approx(3 / 4)
    assert res.kept_rate == pytest.approx(1 / 4)


def test_cv_threshold_perfect_separation_recovers_oracle():
    rng = np.random.default_rng(0)
    n = 200
    s = rng.random(n)
    above = (s >= 0.5).astype(float)
    below = 1 - above
    res = cv_threshold(s, above, below, n_folds=5, seed=0)
    # only a held-out score between the fold's largest "below" and smallest "above" can flip
    assert res.gain >= 0.97
    assert len(res.fold_thresholds) == 5


# --------------------------------------------------------------------------- cross-fitted targets
def test_cross_fit_fixed_value_is_plain_threshold():
    s = np.array([0.1, 0.5, 0.7, np.nan])
    kept = cross_fit_target(ThresholdController(value=0.5), s, None)
    assert kept.tolist() == [False, True, True, False]


def test_cross_fit_action_rate_never_sees_the_scored_fold():
    s = np.arange(10) / 10.0
    target = ThresholdController(action_rate=0.5)
    kept = cross_fit_target(target, s, None, n_folds=2, seed=0)
    assert not target.fitted  # the caller's target is not fitted by cross-fitting
    folds = kfold_indices(10, 2, seed=0)
    expected = np.zeros(10, dtype=bool)
    for tr, te in folds:
        t = np.sort(s[tr])[2]  # 5 training scores, floor(0.5 * 5) = 2 below the threshold
        expected[te] = s[te] >= t
    assert kept.tolist() == expected.tolist()


def test_cross_fit_precision_target_uses_labels():
    rng = np.random.default_rng(1)
    s = rng.random(1000)
    y = (rng.random(1000) < s).astype(int)  # calibrated: P(y=1 | s) = s
    kept = cross_fit_target(ThresholdController(precision=0.8, delta=0.1), s, y, n_folds=5, seed=0)
    assert 0 < kept.sum() < 1000
    assert y[kept].mean() >= 0.8
    # nothing certifiable (all labels wrong): no certified threshold in any fold, nothing kept
    assert not cross_fit_target(ThresholdController(precision=0.8), s, np.zeros(1000, int)).any()
    with pytest.raises(ValueError):
        cross_fit_target(ThresholdController(precision=0.8), s, None)
