"""Cross-validated thresholds: choose a threshold on some examples, judge it on others.

A threshold chosen on the same examples it is scored on is optimistic (it sees their labels).
Here every example's decision comes from a threshold fitted without it ("out-of-fold"), so the
reported gain or precision estimates what the fitted rule does on new data.

Folds are group-aware: examples sharing a group (e.g. one HotpotQA question asked with and
without its gold paragraph) always fall into the same fold, so no group is on both sides.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from verirag.calibration.controller import ThresholdController

__all__ = ["kfold_indices", "CVThreshold", "best_threshold", "cv_threshold", "cross_fit_target"]


def kfold_indices(n: int, n_folds: int = 5, *, groups=None,
                  seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split range(n) into folds; returns [(train_idx, test_idx)] (sorted index arrays).

    Every example is in exactly one test fold; examples with equal `groups` values share a fold.
    Assignment: the groups are shuffled with `seed`, then, largest first (ties in shuffled order),
    each goes to the fold holding the fewest examples so far (lowest index on ties). Without
    groups (every example its own group) this deals a shuffled deck round-robin, so fold sizes
    differ by at most one. Deterministic for a given (n, groups, seed).

    With fewer groups than `n_folds`, there are as many folds as groups (leave-one-group-out).
    Raises ValueError with fewer than 2 groups: nothing would be left to train on.
    """
    if n_folds < 2:
        raise ValueError("n_folds must be >= 2")
    if groups is None:
        gid = np.arange(n)
    else:
        g = np.asarray(groups)
        if g.shape != (n,):
            raise ValueError(f"groups must have length n={n}, got shape {g.shape}")
        gid = np.unique(g, return_inverse=True)[1].ravel()
    sizes = np.bincount(gid) if n else np.zeros(0, dtype=np.int64)
    n_groups = len(sizes)
    if n_groups < 2:
        raise ValueError(f"cross-validation needs at least 2 groups of examples, got {n_groups}")
    k = min(n_folds, n_groups)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n_groups)
    order = order[np.argsort(-sizes[order], kind="stable")]  # largest first, shuffled within a size
    fold_of_group = np.empty(n_groups, dtype=np.int64)
    load = np.zeros(k, dtype=np.int64)
    for grp in order:
        f = int(np.argmin(load))  # argmin returns the lowest index among ties
        fold_of_group[grp] = f
        load[f] += sizes[grp]
    fold = fold_of_group[gid]
    idx = np.arange(n)
    return [(idx[fold != f], idx[fold == f]) for f in range(k)]


def best_threshold(scores, gain_above, gain_below) -> tuple[float, float]:
    """The threshold t maximising G(t) = mean_i (gain_above_i if s_i >= t else gain_below_i).

    Candidates: the distinct scores and +inf (every example below). One sort:
    G(u_j) = (sum of gain_below over s < u_j + sum of gain_above over s >= u_j) / n.
    On equal gains the smallest candidate wins (the most examples kept above). Returns (t, G(t)).
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    above = np.asarray(gain_above, dtype=np.float64).ravel()
    below = np.asarray(gain_below, dtype=np.float64).ravel()
    if not (s.shape == above.shape == below.shape):
        raise ValueError("scores, gain_above and gain_below differ in length")
    if s.size == 0:
        raise ValueError("no scores to choose a threshold from")
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    order = np.argsort(s, kind="stable")
    ss = s[order]
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])   # first position of each distinct score
    below_cum = np.r_[0.0, np.cumsum(below[order])]             # sum of gain_below over the first k
    above_cum = np.r_[0.0, np.cumsum(above[order])]
    cut = np.r_[starts, s.size]                                 # examples below each candidate
    total = below_cum[cut] + (above_cum[-1] - above_cum[cut])
    thresholds = np.r_[ss[starts], np.inf]
    j = int(np.argmax(total))                                   # first maximum: smallest threshold
    return float(thresholds[j]), float(total[j] / s.size)


@dataclass(frozen=True)
class CVThreshold:
    """Result of `cv_threshold`.

    kept: out-of-fold decisions, kept[i] = s_i >= (threshold fitted on the folds without i).
    gain: the out-of-fold mean gain, mean_i(where(kept, gain_above, gain_below)).
    fold_thresholds: one threshold per fold; folds: the (train_idx, test_idx) pairs used.
    """

    kept: np.ndarray
    gain: float
    fold_thresholds: np.ndarray
    folds: list[tuple[np.ndarray, np.ndarray]]

    @property
    def kept_rate(self) -> float:
        return float(self.kept.mean()) if self.kept.size else float("nan")


def cv_threshold(scores, gain_above, gain_below, *, n_folds: int = 5, groups=None,
                 seed: int = 0) -> CVThreshold:
    """K-fold cross-validated threshold for a per-example gain.

    For each fold f: t_f = `best_threshold` on the other folds; the held-out examples are kept
    where s >= t_f. E.g. No-RAG fallback: gain_above = RAG answer correct, gain_below = no-RAG
    answer correct, so `gain` is the accuracy of the fallback rule chosen without each example.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    above = np.asarray(gain_above, dtype=np.float64).ravel()
    below = np.asarray(gain_below, dtype=np.float64).ravel()
    if not (s.shape == above.shape == below.shape):
        raise ValueError("scores, gain_above and gain_below differ in length")
    folds = kfold_indices(s.size, n_folds, groups=groups, seed=seed)
    kept = np.zeros(s.size, dtype=bool)
    ts = np.empty(len(folds))
    for f, (train, test) in enumerate(folds):
        ts[f], _ = best_threshold(s[train], above[train], below[train])
        kept[test] = s[test] >= ts[f]
    gain = float(np.where(kept, above, below).mean())
    return CVThreshold(kept=kept, gain=gain, fold_thresholds=ts, folds=folds)


def cross_fit_target(target: ThresholdController, scores, labels=None, n_folds: int = 5, groups=None,
                     seed: int = 0) -> np.ndarray:
    """Out-of-fold decisions kept[i] = s_i >= threshold, the threshold never fitted on example i.

    A fixed value needs no fitting: kept = s >= value on all examples. A fitted target (target
    precision, action rate) is copied and fitted on the training folds of each split, then
    applied to its held-out fold (`ThresholdController.keep`): a fold whose target cannot be
    certified keeps nothing. NaN scores are never kept. `target` itself is not modified.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    if target.kind == "value":
        return target.keep(s)
    y = None if labels is None else np.asarray(labels).ravel()
    if y is not None and y.shape != s.shape:
        raise ValueError("scores and labels differ in length")
    kept = np.zeros(s.size, dtype=bool)
    for train, test in kfold_indices(s.size, n_folds, groups=groups, seed=seed):
        t = copy.deepcopy(target).fit(s[train], None if y is None else y[train])
        kept[test] = t.keep(s[test])
    return kept
