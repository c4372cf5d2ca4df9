"""Learn then Test (Angelopoulos et al. 2021): a score threshold whose precision is at least a
target with a finite-sample guarantee, from exact binomial tail p-values.

`verirag.calibration.controller.ThresholdController(precision=P)` fits with it; use the
controller unless you need the per-grid-point p-values of `PrecisionThreshold`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PrecisionThreshold", "precision_guarantee_threshold", "binomial_tail_pvalue"]


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


def precision_guarantee_threshold(scores, labels, target_precision: float, delta: float = 0.1,
                                  grid: Sequence[float] | np.ndarray | None = None,
                                  method: str = "bonferroni") -> PrecisionThreshold:
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
    return PrecisionThreshold(threshold=thr, valid=valid, target_precision=target_precision,
                              delta=delta, method=method, grid=g, p_values=pvals, n_selected=n_sel,
                              precision=prec, rejected=rejected)
