"""Answering-with-Faithfulness metrics ("Generate but Verify", section 3).

Per example i: the method's faithfulness indicator v_i in {0, 1} (or a continuous score s_i,
thresholded as v_i = 1[s_i >= t]); the ground truth V_i = 1 if the generated answer is faithful
to the passages; and A_i = 1 if the question is faithfully answerable (some answer supported by
the passages exists; a faithful answer implies A_i = 1).

    TP = sum_i v_i V_i          Pred-Pos = sum_i v_i
    Faithful = sum_i V_i        F-Answerable = sum_i A_i
    AwF-Precision = TP / Pred-Pos
    AwF-Recall    = TP / F-Answerable = (TP / Faithful) * (Faithful / F-Answerable)
                                        classifier recall   answering recall
    AwF-F1        = 2 P R / (P + R)   (0 when P + R = 0)

Empty denominators (conventions, each vacuously true, tested):
- Pred-Pos = 0 (the method never answers): precision = 1 (no unfaithful answer was given);
  this is also the start point (recall 0, precision 1) of every precision-recall curve.
- F-Answerable = 0 (nothing can be answered): recall = 1 (nothing was missed); so abstaining on
  every question scores F1 = 1 there, answering anything scores precision 0 and F1 0.
- Faithful = 0: classifier recall = 1, so that the decomposition still multiplies to the recall.
`zero_division=` overrides the value (e.g. `np.nan`).

The counts have one home: `awf_counts` (one threshold) and `awf_curve_counts` (every threshold,
one sort), for the sample or for bootstrap resamples (`indices=`); `AwFCounts` gives their rates.

QPP variants: the label says whether the passages support the *reference* answer, i.e. V = A;
QPP-Precision = sum v A / sum v, QPP-Recall = sum v A / sum A.

Curves: thresholds are the distinct scores (ties form one threshold), v = 1[s >= t]; computed
with one sort, O(n log n). PR-AUC is the step-wise area sum_k (R_k - R_{k-1}) P_k with R_0 = 0
(the "average precision" of scikit-learn); for a hard-label method it reduces to P x R, the
paper's definition (Table 7), which `pr_auc(..., hard=True)` computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

__all__ = [
    "AwFCounts",
    "AwFCurve",
    "AwFScores",
    "AwFStatistic",
    "BestF1",
    "awf_counts",
    "awf_curve",
    "awf_curve_counts",
    "awf_f1",
    "awf_precision",
    "awf_recall",
    "awf_scores",
    "best_f1",
    "best_f1_statistic",
    "f1_statistic",
    "hard_pr_auc_statistic",
    "harmonic_f1",
    "pr_auc",
    "pr_auc_statistic",
    "qpp_curve",
    "qpp_f1",
    "qpp_precision",
    "qpp_recall",
    "random_pr_auc",
    "recall_decomposition",
]


# --------------------------------------------------------------------------- validation
def _binary(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.dtype == bool:
        return a.astype(np.int64)
    if a.size and not np.isin(a, (0, 1)).all():
        raise ValueError(f"{name} must contain only 0/1 (or booleans)")
    return a.astype(np.int64)


def _check(v, V, answerable=None, strict: bool = True):
    v = np.asarray(v)
    V = _binary(V, "V")
    if v.shape != V.shape or v.ndim != 1:
        raise ValueError(f"inputs must be 1-D arrays of one length, got {v.shape} and {V.shape}")
    if answerable is None:
        return v, V, None
    A = _binary(answerable, "answerable")
    if A.shape != V.shape:
        raise ValueError("answerable differs in length")
    bad = (V == 1) & (A == 0)
    if bad.any():
        if strict:
            raise ValueError(
                f"{int(bad.sum())} examples have a faithful answer (V=1) but are marked "
                "not answerable; a faithful answer makes a question answerable. Fix the "
                "labels or pass strict=False to count those questions as answerable."
            )
        A = A | V
    return v, V, A


def _scalar_or_array(x: np.ndarray):
    return float(x) if x.ndim == 0 else x


def _div(num, den, zero_division: float = 1.0):
    """num / den elementwise, `zero_division` where den = 0 (a float for scalar input)."""
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    return _scalar_or_array(np.where(den > 0, num / np.where(den > 0, den, 1.0), zero_division))


def harmonic_f1(p, r):
    """F1 = 2 P R / (P + R), 0 when P + R = 0, NaN when P or R is NaN (elementwise)."""
    p, r = np.asarray(p, dtype=np.float64), np.asarray(r, dtype=np.float64)
    s = p + r
    f1 = np.where(s > 0, 2 * p * r / np.where(s > 0, s, 1.0), 0.0)
    return _scalar_or_array(np.where(np.isnan(s), np.nan, f1))


# --------------------------------------------------------------------------- counts
@dataclass(frozen=True)
class AwFCounts:
    """The confusion counts behind AwF precision and recall, and the rates they give.

        true_pos = sum_i v_i V_i   pred_pos = sum_i v_i   faithful = sum_i V_i   answerable = sum_i A_i

    Each is a number (the sample) or an array (per resample, or per resample and threshold; the
    four broadcast together). The rates are elementwise, with the module's conventions:
    precision = TP / Pred-Pos, recall = TP / F-Answerable (`zero_division`, default 1, where the
    denominator is 0), F1 = `harmonic_f1(precision, recall)`.
    """

    true_pos: Any
    pred_pos: Any
    faithful: Any
    answerable: Any

    def precision(self, zero_division: float = 1.0):
        return _div(self.true_pos, self.pred_pos, zero_division)

    def recall(self, zero_division: float = 1.0):
        return _div(self.true_pos, self.answerable, zero_division)

    def f1(self, zero_division: float = 1.0):
        return harmonic_f1(self.precision(zero_division), self.recall(zero_division))


def awf_counts(v, V, answerable, *, indices=None) -> AwFCounts:
    """The counts of hard decisions v (formulas in `AwFCounts`), summed over the last axis.

    1-D 0/1 arrays give the sample's counts; 2-D arrays (one resample per row), or 1-D arrays
    with `indices` (B, n) (row b = the examples drawn in resample b), give B counts each.
    No validation here: the public functions check their labels first.
    """
    v, V, A = (np.asarray(x).astype(bool) for x in (v, V, answerable))
    if indices is not None:
        v, V, A = v[indices], V[indices], A[indices]
    return AwFCounts(*(np.count_nonzero(x, axis=-1) for x in (v & V, v, V, A)))


def awf_curve_counts(scores, V, answerable, *, indices=None) -> tuple[np.ndarray, AwFCounts]:
    """(thresholds, counts): the distinct scores in decreasing order, and at thresholds[k] the
    counts of v = 1[s >= thresholds[k]]: true_pos and pred_pos of shape (B, K), faithful and
    answerable of shape (B, 1), one row per row of `indices` (B, n) (row b = the examples drawn
    in resample b; default: the sample itself, B = 1).

    One sort serves every resample: the examples are grouped into tie groups (one threshold
    each) by decreasing score, a resample's draws per (group, faithful) come from one
    `bincount`, and the counts at a threshold are their cumulative sums.
    """
    s = np.asarray(scores, dtype=np.float64)
    V = np.asarray(V).astype(np.int64)
    n = len(s)
    idx = np.arange(n)[None] if indices is None else np.asarray(indices)
    b = idx.shape[0]
    order = np.argsort(-s, kind="stable")
    ss = s[order]
    start = np.ones(n, dtype=bool)
    start[1:] = ss[1:] != ss[:-1]
    group = np.empty(n, dtype=np.int64)
    group[order] = np.cumsum(start) - 1
    G = int(start.sum())
    flat = ((group * 2 + V)[idx] + (np.arange(b, dtype=np.int64) * (2 * G))[:, None]).ravel()
    c = np.bincount(flat, minlength=b * 2 * G).reshape(b, G, 2)
    tp = np.cumsum(c[:, :, 1], axis=1)
    pp = tp + np.cumsum(c[:, :, 0], axis=1)
    faithful = tp[:, -1:] if G else np.zeros((b, 1), dtype=np.int64)
    answerable = np.count_nonzero(np.asarray(answerable).astype(bool)[idx], axis=1)[:, None]
    return ss[start], AwFCounts(tp, pp, faithful, answerable)


# --------------------------------------------------------------------------- hard labels
@dataclass(frozen=True)
class AwFScores:
    """AwF precision / recall / F1 of hard decisions, with their counts and the recall factors."""

    precision: float
    recall: float
    f1: float
    true_pos: int
    pred_pos: int
    faithful: int
    answerable: int
    classifier_recall: float
    answering_recall: float

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def awf_scores(v, V, answerable, *, zero_division: float = 1.0, strict: bool = True) -> AwFScores:
    """All AwF quantities of hard decisions v (see the module docstring for the formulas)."""
    v, V, A = _check(v, V, answerable, strict)
    c = awf_counts(_binary(v, "v"), V, A)
    return AwFScores(
        precision=c.precision(zero_division),
        recall=c.recall(zero_division),
        f1=c.f1(zero_division),
        true_pos=int(c.true_pos),
        pred_pos=int(c.pred_pos),
        faithful=int(c.faithful),
        answerable=int(c.answerable),
        classifier_recall=_div(c.true_pos, c.faithful, zero_division),
        answering_recall=_div(c.faithful, c.answerable, zero_division),
    )


def awf_precision(v, V, *, zero_division: float = 1.0) -> float:
    """AwF-Precision = sum(v V) / sum(v); `zero_division` (default 1) when sum(v) = 0."""
    v, V, _ = _check(v, V)
    return awf_counts(_binary(v, "v"), V, V).precision(zero_division)


def awf_recall(v, V, answerable, *, zero_division: float = 1.0, strict: bool = True) -> float:
    """AwF-Recall = sum(v V) / sum(A); `zero_division` (default 1) when sum(A) = 0."""
    return awf_scores(v, V, answerable, zero_division=zero_division, strict=strict).recall


def awf_f1(v, V, answerable, *, zero_division: float = 1.0, strict: bool = True) -> float:
    """AwF-F1 = 2 P R / (P + R), 0 when P + R = 0."""
    return awf_scores(v, V, answerable, zero_division=zero_division, strict=strict).f1


def recall_decomposition(v, V, answerable, *, zero_division: float = 1.0, strict: bool = True) -> tuple[float, float]:
    """(classifier recall, answering recall) = (TP / Faithful, Faithful / F-Answerable);
    their product is AwF-Recall (also under the empty-denominator conventions)."""
    s = awf_scores(v, V, answerable, zero_division=zero_division, strict=strict)
    return s.classifier_recall, s.answering_recall


def qpp_precision(v, answerable, *, zero_division: float = 1.0) -> float:
    """QPP-Precision = sum(v A) / sum(v): AwF-Precision with V replaced by A."""
    return awf_precision(v, answerable, zero_division=zero_division)


def qpp_recall(v, answerable, *, zero_division: float = 1.0) -> float:
    """QPP-Recall = sum(v A) / sum(A)."""
    return awf_recall(v, answerable, answerable, zero_division=zero_division)


def qpp_f1(v, answerable, *, zero_division: float = 1.0) -> float:
    """QPP-F1 = harmonic mean of QPP-Precision and QPP-Recall."""
    return awf_f1(v, answerable, answerable, zero_division=zero_division)


# --------------------------------------------------------------------------- curves
@dataclass(frozen=True)
class AwFCurve:
    """Precision and recall at every distinct threshold, thresholds in decreasing order.

    At thresholds[k], v = 1[s >= thresholds[k]]; tp[k], pred_pos[k] are the counts there.
    recall is 1 everywhere when n_answerable = 0 (the convention above).
    """

    thresholds: np.ndarray
    precision: np.ndarray
    recall: np.ndarray
    f1: np.ndarray
    true_pos: np.ndarray
    pred_pos: np.ndarray
    n_answerable: int


class BestF1(NamedTuple):
    f1: float
    threshold: float
    precision: float
    recall: float


def awf_curve(scores, V, answerable, *, strict: bool = True) -> AwFCurve:
    """AwF precision / recall / F1 at each distinct score threshold (one sort: O(n log n))."""
    s, V, A = _check(scores, V, answerable, strict)
    s = s.astype(np.float64)
    if np.isnan(s).any():
        raise ValueError("scores contain NaN")
    thresholds, c = awf_curve_counts(s, V, A)
    precision, recall = c.precision()[0], c.recall()[0]
    return AwFCurve(
        thresholds=thresholds,
        precision=precision,
        recall=recall,
        f1=harmonic_f1(precision, recall),
        true_pos=c.true_pos[0],
        pred_pos=c.pred_pos[0],
        n_answerable=int(c.answerable[0, 0]),
    )


def qpp_curve(scores, answerable) -> AwFCurve:
    """QPP precision / recall curve: `awf_curve` with V = A."""
    return awf_curve(scores, answerable, answerable)


def best_f1(scores, V, answerable, *, strict: bool = True) -> BestF1:
    """max over thresholds of AwF-F1, with the (largest) threshold that attains it.

    The "abstain on everything" threshold (+inf: precision 1, recall 0 -- or recall 1 when
    nothing is answerable) is a candidate too, so the result is defined for any input.
    """
    c = awf_curve(scores, V, answerable, strict=strict)
    f1_inf = 1.0 if c.n_answerable == 0 else 0.0
    if len(c.f1) == 0 or c.f1.max() < f1_inf:
        return BestF1(f1_inf, float("inf"), 1.0, 1.0 if c.n_answerable == 0 else 0.0)
    k = int(np.argmax(c.f1))  # first maximum: the largest threshold attaining it
    return BestF1(float(c.f1[k]), float(c.thresholds[k]), float(c.precision[k]), float(c.recall[k]))


def pr_auc(scores, V, answerable, *, hard: bool = False, strict: bool = True) -> float:
    """Area under the AwF precision-recall curve.

    Continuous scores: sum_k (R_k - R_{k-1}) P_k over the distinct thresholds in decreasing
    order, R_0 = 0 (step-wise, no interpolation). `hard=True`: `scores` are hard decisions v and
    the area is AwF-Precision x AwF-Recall (the paper's definition for hard-label methods;
    equal to the step-wise area of the single point). NaN when F-Answerable = 0.
    """
    if hard:
        s = awf_scores(scores, V, answerable, strict=strict)
        return float("nan") if s.answerable == 0 else s.precision * s.recall
    c = awf_curve(scores, V, answerable, strict=strict)
    if c.n_answerable == 0:
        return float("nan")
    return float(np.sum(np.diff(c.recall, prepend=0.0) * c.precision))


def random_pr_auc(faithful: int, answerable: int, n: int) -> float:
    """Expected PR-AUC (step-wise, as `pr_auc`) of a random order of n answers, `faithful` of them
    faithful, `answerable` questions answerable: the expected average precision of a random
    ranking, H_n / n + (F - 1) / (n - 1) (1 - H_n / n) with H_n the n-th harmonic number, times the
    answering recall F / F-Answerable that bounds AwF recall. The chance level of a verifier of
    these answers; it tends to (F / n)(F / F-Answerable), a constant score's PR-AUC, as n grows.
    NaN when nothing is answerable, 0 when nothing is faithful."""
    if answerable == 0 or n == 0:
        return float("nan")
    if faithful == 0:
        return 0.0
    h = float(np.sum(1.0 / np.arange(1, n + 1)))
    ap = 1.0 if n == 1 else h / n + (faithful - 1) / (n - 1) * (1.0 - h / n)
    return faithful / answerable * ap


# --------------------------------------------------------------------------- bootstrap statistics
class AwFStatistic:
    """A bootstrap-ready AwF statistic: best F1, PR-AUC or F1 of hard decisions.

    Called three ways (see `verirag.metrics.stats.bootstrap_ci`):
      stat(scores, V, A)                   1-D arrays -> float
      stat(scores, V, A) with 2-D arrays   one resample per row -> array
      stat(scores, V, A, indices=idx)      idx[b] = the examples drawn in resample b -> array
    The indices form is the fastest: `awf_curve_counts` sorts the examples once for all
    resamples. Labels are taken as in `strict=False`: a faithful answer counts its question as
    answerable. With nothing answerable, best F1 is 1 (abstaining everywhere) and PR-AUC NaN.
    """

    vectorized = "indices"

    def __init__(self, kind: str, *, hard: bool = False) -> None:
        if kind not in ("best_f1", "pr_auc", "f1"):
            raise ValueError(f"unknown AwF statistic {kind!r}")
        self.kind, self.hard = kind, hard or kind == "f1"

    def __repr__(self) -> str:
        return f"AwFStatistic({self.kind!r}, hard={self.hard})"

    def __call__(self, scores, V, answerable, *, indices=None):
        scores, V, A = np.asarray(scores), np.asarray(V), np.asarray(answerable)
        if scores.ndim == 2:
            return np.array([self(*row) for row in zip(scores, V, A)], dtype=np.float64)
        if indices is None:
            if self.kind == "f1":
                return awf_f1(scores, V, answerable, strict=False)
            if self.kind == "pr_auc":
                return pr_auc(scores, V, answerable, hard=self.hard, strict=False)
            return best_f1(scores, V, answerable, strict=False).f1
        A = A.astype(bool) | V.astype(bool)
        if self.hard:
            c = awf_counts(scores, V, A, indices=indices)
            if self.kind == "f1":
                return c.f1()
            return np.where(c.answerable > 0, c.precision() * c.recall(), np.nan)
        _, c = awf_curve_counts(scores, V, A, indices=indices)
        some = c.answerable[:, 0] > 0
        if self.kind == "best_f1":  # the abstain-everything threshold (+inf) is a candidate too
            best = c.f1().max(axis=1, initial=0.0)
            return np.where(some, best, 1.0)
        # PR-AUC = sum_k (R_k - R_{k-1}) P_k
        area = (np.diff(c.recall(), axis=1, prepend=0.0) * c.precision()).sum(axis=1)
        return np.where(some, area, np.nan)


best_f1_statistic = AwFStatistic("best_f1")
pr_auc_statistic = AwFStatistic("pr_auc")
hard_pr_auc_statistic = AwFStatistic("pr_auc", hard=True)
f1_statistic = AwFStatistic("f1")
