"""Calibration of confidence scores (CalibRAG's evaluation: ECE, Brier, NLL, AUROC, %NA).

Inputs: p_i in [0, 1], the predicted probability that answer i is correct (or faithful), and
y_i in {0, 1}, whether it is. Brier, NLL and AUROC also accept 2-D arrays, one row per
bootstrap resample (`verirag.metrics.stats.bootstrap_ci(..., vectorized=True)`), and then return
one value per row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ReliabilityDiagram", "abstention_rate", "auroc", "brier", "ece", "nll", "reliability_diagram", "sigmoid"]


def sigmoid(z):
    """The logistic function 1 / (1 + e^-z), elementwise, written e^-log(1 + e^-z) so that no
    z overflows. A float for a scalar, else an array."""
    r = np.exp(-np.logaddexp(0.0, -np.asarray(z, dtype=np.float64)))
    return float(r) if np.ndim(r) == 0 else r


def _py(p, y) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(p, dtype=np.float64)
    y = np.asarray(y)
    if y.dtype != bool and y.size and not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0/1 or booleans")
    y = y.astype(np.float64)
    if p.shape != y.shape:
        raise ValueError(f"probabilities {p.shape} and labels {y.shape} differ in shape")
    if p.size and (np.isnan(p).any() or p.min() < 0 or p.max() > 1):
        raise ValueError("probabilities must lie in [0, 1]")
    return p, y


@dataclass(frozen=True)
class ReliabilityDiagram:
    """Per-bin data of a reliability diagram.

    Bin m holds the examples with lower[m] <= p < upper[m] (the last bin is closed); empty bins
    have count 0 and NaN confidence / accuracy. gap = accuracy - confidence.
    """

    lower: np.ndarray
    upper: np.ndarray
    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray
    strategy: str

    @property
    def gap(self) -> np.ndarray:
        return self.accuracy - self.confidence

    @property
    def ece(self) -> float:
        n = self.count.sum()
        if n == 0:
            return float("nan")
        w = self.count / n
        return float(np.nansum(w * np.abs(self.gap)))

    def to_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}


def reliability_diagram(probs, labels, n_bins: int = 15, strategy: str = "uniform") -> ReliabilityDiagram:
    """Bin the predictions and report, per bin, count, mean confidence and accuracy.

    strategy="uniform": equal-width bins [m/M, (m+1)/M) over [0, 1] (last bin closed).
    strategy="adaptive" (equal mass): the examples sorted by p are cut into M bins of sizes
    differing by at most one (`np.array_split`); bin bounds are the min / max p inside them.
    """
    p, y = _py(probs, labels)
    if p.ndim != 1:
        raise ValueError("reliability_diagram takes 1-D arrays")
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    if strategy == "uniform":
        idx = np.minimum((p * n_bins).astype(np.int64), n_bins - 1)
        count = np.bincount(idx, minlength=n_bins)
        s_p = np.bincount(idx, weights=p, minlength=n_bins)
        s_y = np.bincount(idx, weights=y, minlength=n_bins)
        lower = np.arange(n_bins) / n_bins
        upper = np.arange(1, n_bins + 1) / n_bins
    elif strategy in ("adaptive", "quantile", "equal_mass"):
        order = np.argsort(p, kind="stable")
        parts = np.array_split(order, min(n_bins, max(len(p), 1)))
        count = np.array([len(q) for q in parts])
        s_p = np.array([p[q].sum() for q in parts])
        s_y = np.array([y[q].sum() for q in parts])
        lower = np.array([p[q].min() if len(q) else np.nan for q in parts])
        upper = np.array([p[q].max() if len(q) else np.nan for q in parts])
        strategy = "adaptive"
    else:
        raise ValueError(f"unknown binning strategy {strategy!r} (uniform or adaptive)")
    with np.errstate(invalid="ignore", divide="ignore"):
        conf = np.where(count > 0, s_p / np.maximum(count, 1), np.nan)
        acc = np.where(count > 0, s_y / np.maximum(count, 1), np.nan)
    return ReliabilityDiagram(lower=lower, upper=upper, count=count, confidence=conf, accuracy=acc, strategy=strategy)


def ece(probs, labels, n_bins: int = 15, strategy: str = "uniform") -> float:
    """Expected calibration error (Naeini et al. 2015):

        ECE = sum_m (|B_m| / n) |acc(B_m) - conf(B_m)|

    acc(B_m) = mean label in bin m, conf(B_m) = mean probability in bin m. Bins: equal width
    (strategy="uniform") or equal mass (strategy="adaptive"); see `reliability_diagram`.
    NaN for empty input.
    """
    return reliability_diagram(probs, labels, n_bins=n_bins, strategy=strategy).ece


def brier(probs, labels) -> float | np.ndarray:
    """Brier score = (1/n) sum_i (p_i - y_i)^2 (over the last axis)."""
    p, y = _py(probs, labels)
    r = np.mean((p - y) ** 2, axis=-1)
    return float(r) if np.ndim(r) == 0 else r


def nll(probs, labels, eps: float = 1e-12) -> float | np.ndarray:
    """Negative log-likelihood = -(1/n) sum_i [y_i log q_i + (1 - y_i) log(1 - q_i)],
    q_i = clip(p_i, eps, 1 - eps) so that a confident mistake costs -log(eps), not infinity."""
    p, y = _py(probs, labels)
    q = np.clip(p, eps, 1 - eps)
    r = -np.mean(y * np.log(q) + (1 - y) * np.log1p(-q), axis=-1)
    return float(r) if np.ndim(r) == 0 else r


def auroc(scores, labels) -> float | np.ndarray:
    """Area under the ROC curve, as the Mann-Whitney statistic with mid-ranks for ties:

        AUROC = (sum of ranks of positives - n1 (n1 + 1) / 2) / (n1 n0)

    = P(s_pos > s_neg) + P(s_pos = s_neg) / 2. NaN when one class is absent. Scores need not
    be probabilities. 2-D input: one value per row.
    """
    from verirag.metrics.stats import rankdata

    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels)
    if y.dtype != bool and y.size and not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0/1 or booleans")
    y = y.astype(bool)
    if s.shape != y.shape:
        raise ValueError("scores and labels differ in shape")
    ranks = rankdata(s, axis=-1)
    n1 = y.sum(axis=-1).astype(np.float64)
    n0 = y.shape[-1] - n1
    with np.errstate(invalid="ignore", divide="ignore"):
        r = ((ranks * y).sum(axis=-1) - n1 * (n1 + 1) / 2) / (n1 * n0)
    r = np.where((n1 > 0) & (n0 > 0), r, np.nan)
    return float(r) if np.ndim(r) == 0 else r


def abstention_rate(abstained: Sequence[bool] | Sequence[str] | np.ndarray) -> float:
    """%NA: the share of examples where the system gave no answer, in [0, 1] (x100 for %).

    Accepts booleans, or the response texts (then `abstention.is_abstention` decides).
    NaN for empty input.
    """
    a = list(abstained) if not isinstance(abstained, np.ndarray) else abstained
    if len(a) == 0:
        return float("nan")
    if not isinstance(a, np.ndarray) and any(isinstance(x, str) or x is None for x in a):
        from verirag.metrics.abstention import abstention_mask

        mask = abstention_mask(a)
    else:
        mask = np.asarray(a, dtype=bool)
    return float(mask.mean())
