"""Turning scores into decisions: the threshold controller, where a faithfulness threshold comes
from (a fixed value, a target precision with a finite-sample guarantee via Learn then Test, an
action rate), cross-validated thresholds, and the threshold files `verirag calibrate` writes.

Construct with a target, fit on scores (and labels), read the fitted state, decide
(the scikit-learn / MAPIE controller shape):

    c = ThresholdController(precision=0.9, delta=0.1).fit(scores, labels)
    c.threshold_, c.certified_      # 0.63, True   -- or None, False: no threshold reaches 0.9
    c.decide(0.7)                   # "answer" or "act" (abstain / fall back / escalate)
    c.keep(scores)                  # vectorised: True where the answer is kept

"No threshold reaches the target" is a state of the fitted controller (`certified_` False,
`threshold_` None), not an infinite threshold: every answer then acts. Wherever a threshold is
taken, a float or a controller will do: `as_controller` makes a float a fixed controller.

A threshold file is the controller's saved form (`verirag.learned.base`: one JSON file), with
the fingerprints of what it was fitted for (model, method, method_digest, dataset) and the
method's options in its provenance (`method_options`); a mismatch with the answering set-up
warns (`warn_on`), since only the precision guarantee weakens. Files written before the format
tag (FittedThreshold: "threshold": "inf", "valid": false for an uncertified target) still load.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.learned.base import LearnedPart

ANSWER = "answer"  # the score reaches the threshold: the answer stands
ACT = "act"  # it does not (or no threshold is certified): abstain / fall back / escalate
KINDS = ("value", "precision", "action_rate")


class ThresholdController(LearnedPart):
    """A faithfulness threshold fitted to a target (construct, `fit`, read `threshold_`, `decide`).

    Exactly one of:
    - `value`: a fixed threshold; fitted at construction (`threshold_` = value, `certified_`
      True); `fit` only records `n_fit_` and `fit_action_rate_`.
    - `precision`: the smallest threshold t whose precision P(correct | score >= t) is at least
      `precision` with probability >= 1 - `delta` over the draw of the labelled data
      (`precision_guarantee_threshold`: Learn-then-Test with exact
      binomial tail p-values on the grid 0, 0.01, ..., 1; `method` "bonferroni" (default) or
      "fixed_sequence"). Assumes the labelled (score, correct) pairs are exchangeable with future
      ones. When no threshold can be certified, `certified_` is False and `threshold_` None:
      every answer acts. NaN scores (failed verification) count as 0 for this fit.
    - `action_rate`: act (abstain / fall back / escalate) on at most this share of examples, e.g.
      0.2 for "at most 20% escalations": with n fitted scores, `threshold_` is the (k+1)-th
      smallest score, k = floor(rate * n), so at most k fitted scores fall strictly below it (ties
      are answered). NaN scores always act and use up the budget first. Labels are not needed.
      This controls the empirical rate on the fitted data; on new data it holds approximately.
      A rate of 1 acts on everything (`threshold_` = +inf). Always `certified_`.

    Fitted attributes (set by `fit`; for `value` already at construction):
    - `threshold_`: float, or None when the target is not certified (every answer acts);
    - `certified_`: bool, whether the target is met / guaranteed (True for value and action_rate);
    - `n_fit_`: number of fitted scores; `fit_action_rate_`: share of fitted scores that act;
    - `result_` (precision only): the `PrecisionThreshold` with the per-grid-point p-values.

    Decisions: `decide(score)` is "answer" when the controller is certified, the score is not NaN
    and score >= `threshold_`; "act" otherwise. `keep(scores)` is the vectorised form (a bool array).
    """

    format_name = "threshold"
    title = "threshold file"
    fitted_attribute = "certified_"
    fit_command = "verirag calibrate RUN_DIR --model M --method METHOD --save FILE"
    warn_on = ("model", "method", "method_digest")

    def __init__(
        self,
        *,
        value: float | None = None,
        precision: float | None = None,
        action_rate: float | None = None,
        delta: float = 0.1,
        method: str = "bonferroni",
        fingerprints: dict[str, Any] | None = None,
    ):
        super().__init__(fingerprints)
        given = [
            k for k, v in (("value", value), ("precision", precision), ("action_rate", action_rate)) if v is not None
        ]
        if len(given) != 1:
            raise ValueError("give exactly one of value, precision, action_rate")
        self.kind = given[0]
        self.value, self.precision, self.action_rate = value, precision, action_rate
        self.delta, self.method = delta, method
        if value is not None and math.isnan(float(value)):
            raise ValueError("value must be a number, got NaN")
        if precision is not None and not 0 < precision < 1:
            raise ValueError("precision must lie in (0, 1)")
        if action_rate is not None and not 0 <= action_rate <= 1:
            raise ValueError("action_rate must lie in [0, 1]")
        if precision is not None:
            if not 0 < delta < 1:
                raise ValueError("delta must lie in (0, 1)")
            if method not in ("bonferroni", "fixed_sequence"):
                raise ValueError("method must be 'bonferroni' or 'fixed_sequence'")
        if value is not None:
            self.threshold_: float | None = float(value)
            self.certified_ = True

    @property
    def target(self) -> float:
        """The target's number: the value, the precision or the action rate."""
        return float({"value": self.value, "precision": self.precision, "action_rate": self.action_rate}[self.kind])

    # ---- fit ------------------------------------------------------------------------------
    def fit(self, scores, labels=None) -> ThresholdController:
        """Fit on scores (and 0/1 labels, 1 = correct / faithful, for a target precision)."""
        s = np.asarray(scores, dtype=np.float64).ravel()
        if self.kind == "value":
            if s.size:
                self.n_fit_ = int(s.size)
                self.fit_action_rate_ = float((~self.keep(s)).mean())
            return self
        if s.size == 0:
            raise ValueError("no scores to fit the threshold on")
        if self.kind == "precision":
            if labels is None:
                raise ValueError("a target precision needs labels (1 = correct / faithful)")
            res = precision_guarantee_threshold(
                np.nan_to_num(s, nan=0.0), labels, self.precision, delta=self.delta, method=self.method
            )
            self.result_ = res
            threshold, certified = res.threshold, res.valid
        else:
            finite = np.sort(s[~np.isnan(s)])
            budget = math.floor(self.action_rate * s.size + 1e-9) - int(np.isnan(s).sum())
            if finite.size == 0 or budget <= 0:
                threshold = float(finite[0]) if finite.size else 0.0
            elif budget >= finite.size:
                threshold = math.inf  # a rate of 1: every answer may act
            else:
                threshold = float(finite[budget])
            certified = True
        self.threshold_ = None if threshold is None else float(threshold)
        self.certified_ = bool(certified)
        self.n_fit_ = int(s.size)
        self.fit_action_rate_ = float((~self.keep(s)).mean())
        return self

    # ---- decide ---------------------------------------------------------------------------
    def keep(self, scores) -> np.ndarray:
        """keep[i] = the answer with score s_i stands: s_i >= threshold_ (never for NaN, never
        when the controller is not certified). A bool array shaped like `scores`."""
        self.check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        if self.threshold_ is None or not self.certified_:
            return np.zeros(s.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            return ~np.isnan(s) & (s >= self.threshold_)

    def target_text(self) -> str:
        """The target in words, e.g. "precision 0.9" or "action rate 0.2"."""
        return f"{self.kind.replace('_', ' ')} {self.target:g}"

    def uncertified_warning(self) -> str | None:
        """What every verdict of an uncertified controller says (None when certified): without it a
        result would read faithful=False, threshold=None and no reason."""
        if not self.fitted or self.certified_:
            return None
        return (
            f"no threshold is certified for the target {self.target_text()} on "
            f"{getattr(self, 'n_fit_', None) or '?'} labelled examples: every answer is judged not "
            "supported (fit on more labels, or lower the target)"
        )

    def decide(self, score: float | None) -> str:
        """ "answer" when the score reaches the threshold, else "act" (NaN / None scores act; an
        uncertified controller always acts)."""
        s = math.nan if score is None else float(score)
        return ANSWER if bool(self.keep(s)) else ACT

    def __float__(self) -> float:
        self.check_fitted()
        if self.threshold_ is None:
            raise ValueError(
                f"{self!r} is not certified: no threshold reaches the target on "
                f"{getattr(self, 'n_fit_', '?')} examples, so there is no number to "
                "compare with; every answer acts (use decide() or keep())"
            )
        return float(self.threshold_)

    # ---- saved form (a threshold file) --------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {k: v for k, v in super().state().items() if k != "result_"}  # p-values are not kept

    def restore(self, state: dict[str, Any], path: Path) -> None:
        super().restore(state, path)
        if self.threshold_ is None and self.certified_:
            self.threshold_ = math.inf  # an action rate of 1, written as null by the strict writer

    @classmethod
    def upgrade(cls, d: dict[str, Any], path: Path) -> dict[str, Any]:
        """A file written before the format tag (`FittedThreshold`): a threshold "inf" for a target
        precision, or `valid` / `certified` false, is an uncertified controller."""
        if "format" in d or d.get("kind") not in KINDS or "target" not in d:
            return super().upgrade(d, path)
        kind, target = d["kind"], float(d["target"])
        t = None if d.get("threshold") is None else float(d["threshold"])
        certified = bool(d.get("certified", d.get("valid", True)))
        if t is None or (kind == "precision" and math.isinf(t)):
            certified = False
        settings: dict[str, Any] = {kind: target}
        if kind == "precision":
            settings.update(delta=float(d.get("delta") or 0.1), method=d.get("ltt_method") or "bonferroni")
        return {
            "settings": settings,
            "fingerprints": {k: d.get(k) for k in ("model", "method", "dataset")},
            "state": {
                "threshold_": target if kind == "value" else t if certified else None,
                "certified_": certified or kind == "value",
                "n_fit_": d.get("n_fit"),
                "fit_action_rate_": d.get("fit_action_rate"),
            },
        }

    def __repr__(self) -> str:
        name = type(self).__name__
        fitted = ""
        if self.fitted and self.kind != "value":
            fitted = f", threshold_={self.threshold_:.4g}" if self.threshold_ is not None else ", not certified"
        return f"{name}({self.kind}={self.target:g}{fitted})"


def as_controller(threshold: float | ThresholdController) -> ThresholdController:
    """Wherever a threshold is taken, a float is a fixed controller; a controller must be fitted."""
    if isinstance(threshold, ThresholdController):
        threshold.check_fitted()
        return threshold
    return ThresholdController(value=float(threshold))


def parse_threshold(text: str | None) -> tuple[float | ThresholdController | None, ThresholdController | None]:
    """`--threshold` accepts a number or the path of a threshold file.

    Returns (what the pipeline uses, the file's controller): (float, None) for a number, (a fitted
    ThresholdController, the same) for a file, (None, None) for no option. An uncertified file
    gives a controller that makes every answer act."""
    if text is None:
        return None, None
    try:
        return float(text), None
    except ValueError:
        c = ThresholdController.load(text)
        return c, c


# ---- Learn then Test (Angelopoulos et al. 2021): a score threshold whose precision is at least a
# target with a finite-sample guarantee, from exact binomial tail p-values. `ThresholdController(
# precision=P)` fits with it; use the controller unless you need the per-grid-point p-values.
def binomial_tail_pvalue(errors, n_selected, max_error_rate: float) -> np.ndarray:
    """p = P(Binomial(n, eps) <= errors): valid p-value for H0 "error rate >= eps" given n
    selected examples (1 when n = 0)."""
    from scipy.stats import binom

    errors = np.asarray(errors)
    n_selected = np.asarray(n_selected)
    p = binom.cdf(errors, n_selected, max_error_rate)
    return np.where(n_selected > 0, p, 1.0)


@dataclass(frozen=True)
class PrecisionThreshold:
    """Result of `precision_guarantee_threshold`.

    threshold: the smallest certified threshold, or None when no grid point is certified (the
    target cannot be guaranteed on this data: every answer acts). valid: whether some threshold
    was certified. grid / p_values / n_selected / precision: per grid point (grid in decreasing
    order); rejected: the certified grid points.
    """

    threshold: float | None
    valid: bool
    target_precision: float
    delta: float
    method: str
    grid: np.ndarray
    p_values: np.ndarray
    n_selected: np.ndarray
    precision: np.ndarray
    rejected: np.ndarray

    @property
    def calibration_precision(self) -> float:
        """The precision on the calibration data at the chosen threshold (NaN when none)."""
        if not self.valid:
            return float("nan")
        k = int(np.flatnonzero(self.grid == self.threshold)[0])
        return float(self.precision[k])


def precision_guarantee_threshold(
    scores,
    labels,
    target_precision: float,
    delta: float = 0.1,
    grid: Sequence[float] | np.ndarray | None = None,
    method: str = "bonferroni",
) -> PrecisionThreshold:
    """A score threshold whose precision is at least `target_precision` with probability
    at least 1 - delta (Learn then Test, Angelopoulos et al. 2021, with a binomial tail bound).

    For each threshold t of a grid, the calibration examples with s >= t are "selected";
    with n_t selected and e_t of them wrong (label 0), H0(t): "precision(t) < target" has the
    exact p-value p_t = P(Binomial(n_t, 1 - target) <= e_t). Family-wise error control:
    - method="bonferroni" (default): certify every t with p_t <= delta / |grid|; valid for any
      grid, whatever the order;
    - method="fixed_sequence": test the grid from the highest threshold down at level delta and
      stop at the first p_t > delta. More powerful, but a grid point that selects (almost) no
      calibration example cannot be certified and ends the sequence: start the grid at a
      threshold that selects examples, chosen without the calibration labels (prior knowledge
      or a separate split), not at 1.0.
    The result is the smallest certified threshold (the one that answers most often), or None
    (`valid` False) when no grid point is certified.

    Guarantee: P( precision(t_hat) >= target ) >= 1 - delta, over the draw of the calibration
    set, where precision(t) = P(y = 1 | s >= t) on new data. Assumptions: calibration and test
    (score, label) pairs are i.i.d. from one distribution (exchangeable); labels are binary and
    correct; the grid (and, for fixed-sequence, its order) is fixed before looking at the
    calibration data (the default grid is 0, 0.01, ..., 1 and needs scores in [0, 1]);
    fixed-sequence gains power when precision grows with the threshold but stays valid otherwise. Given n_t, the selected labels
    are i.i.d. Bernoulli(precision(t)), so the p-value is exact, not asymptotic.
    """
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel()
    if s.shape != y.shape:
        raise ValueError("scores and labels differ in length")
    if y.size and not np.isin(y, (0, 1, True, False)).all():
        raise ValueError("labels must be 0/1")
    y = y.astype(np.int64)
    if not 0 < target_precision < 1 or not 0 < delta < 1:
        raise ValueError("target_precision and delta must lie in (0, 1)")
    if grid is None:
        if s.size and (s.min() < 0 or s.max() > 1):
            raise ValueError("scores outside [0, 1]: pass an explicit threshold grid")
        grid = np.linspace(0.0, 1.0, 101)
    g = np.unique(np.asarray(grid, dtype=np.float64))[::-1]  # decreasing
    # counts of selected examples and of errors at every grid point (one sort)
    order = np.sort(s)
    n_sel = len(s) - np.searchsorted(order, g, side="left")
    wrong = np.sort(s[y == 0])
    n_err = len(wrong) - np.searchsorted(wrong, g, side="left")
    pvals = binomial_tail_pvalue(n_err, n_sel, 1.0 - target_precision)
    if method == "fixed_sequence":
        ok = pvals <= delta
        rejected = np.cumprod(ok).astype(bool)
    elif method == "bonferroni":
        rejected = pvals <= delta / len(g)
    else:
        raise ValueError("method must be 'fixed_sequence' or 'bonferroni'")
    with np.errstate(invalid="ignore", divide="ignore"):
        prec = np.where(n_sel > 0, (n_sel - n_err) / np.maximum(n_sel, 1), np.nan)
    valid = bool(rejected.any())
    thr = float(g[rejected].min()) if valid else None
    return PrecisionThreshold(
        threshold=thr,
        valid=valid,
        target_precision=target_precision,
        delta=delta,
        method=method,
        grid=g,
        p_values=pvals,
        n_selected=n_sel,
        precision=prec,
        rejected=rejected,
    )


# ---- Cross-validated thresholds: choose a threshold on some examples, judge it on others.
# A threshold chosen on the same examples it is scored on is optimistic (it sees their labels).
# Here every example's decision comes from a threshold fitted without it ("out-of-fold"), so the
# reported gain or precision estimates what the fitted rule does on new data. Folds are
# group-aware: examples sharing a group (e.g. one HotpotQA question asked with and without its
# gold paragraph) always fall into the same fold, so no group is on both sides.
def kfold_indices(n: int, n_folds: int = 5, *, groups=None, seed: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
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
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])  # first position of each distinct score
    below_cum = np.r_[0.0, np.cumsum(below[order])]  # sum of gain_below over the first k
    above_cum = np.r_[0.0, np.cumsum(above[order])]
    cut = np.r_[starts, s.size]  # examples below each candidate
    total = below_cum[cut] + (above_cum[-1] - above_cum[cut])
    thresholds = np.r_[ss[starts], np.inf]
    j = int(np.argmax(total))  # first maximum: smallest threshold
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


def cv_threshold(scores, gain_above, gain_below, *, n_folds: int = 5, groups=None, seed: int = 0) -> CVThreshold:
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


def cross_fit_target(
    target: ThresholdController, scores, labels=None, n_folds: int = 5, groups=None, seed: int = 0
) -> np.ndarray:
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
