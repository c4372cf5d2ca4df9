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

QPP variants: the label says whether the passages support the *reference* answer, i.e. V = A;
QPP-Precision = sum v A / sum v, QPP-Recall = sum v A / sum A.

Curves: thresholds are the distinct scores (ties form one threshold), v = 1[s >= t]; computed
with one sort, O(n log n). PR-AUC is the step-wise area sum_k (R_k - R_{k-1}) P_k with R_0 = 0
(the "average precision" of scikit-learn); for a hard-label method it reduces to P x R, the
paper's definition (Table 7), which `pr_auc(..., hard=True)` computes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

__all__ = [
    "AwFScores", "AwFCurve", "BestF1", "awf_precision", "awf_recall", "awf_f1", "awf_scores",
    "recall_decomposition", "qpp_precision", "qpp_recall", "qpp_f1", "awf_curve", "qpp_curve",
    "best_f1", "pr_auc", "AwFStatistic", "best_f1_statistic", "pr_auc_statistic",
    "hard_pr_auc_statistic", "f1_statistic",
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
            raise ValueError(f"{int(bad.sum())} examples have a faithful answer (V=1) but are marked "
                             "not answerable; a faithful answer makes a question answerable. Fix the "
                             "labels or pass strict=False to count those questions as answerable.")
        A = A | V
    return v, V, A


def _div(num: float, den: float, zero_division: float) -> float:
    return float(num) / float(den) if den else float(zero_division)


def _f1(p: float, r: float) -> float:
    if np.isnan(p) or np.isnan(r):
        return float("nan")
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


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
    v = _binary(v, "v")
    tp, pp, fa, na = int((v * V).sum()), int(v.sum()), int(V.sum()), int(A.sum())
    p = _div(tp, pp, zero_division)
    r = _div(tp, na, zero_division)
    return AwFScores(precision=p, recall=r, f1=_f1(p, r), true_pos=tp, pred_pos=pp, faithful=fa,
                     answerable=na, classifier_recall=_div(tp, fa, zero_division),
                     answering_recall=_div(fa, na, zero_division))


def awf_precision(v, V, *, zero_division: float = 1.0) -> float:
    """AwF-Precision = sum(v V) / sum(v); `zero_division` (default 1) when sum(v) = 0."""
    v, V, _ = _check(v, V)
    v = _binary(v, "v")
    return _div((v * V).sum(), v.sum(), zero_division)


def awf_recall(v, V, answerable, *, zero_division: float = 1.0, strict: bool = True) -> float:
    """AwF-Recall = sum(v V) / sum(A); `zero_division` (default 1) when sum(A) = 0."""
    return awf_scores(v, V, answerable, zero_division=zero_division, strict=strict).recall


def awf_f1(v, V, answerable, *, zero_division: float = 1.0, strict: bool = True) -> float:
    """AwF-F1 = 2 P R / (P + R), 0 when P + R = 0."""
    return awf_scores(v, V, answerable, zero_division=zero_division, strict=strict).f1


def recall_decomposition(v, V, answerable, *, zero_division: float = 1.0,
                         strict: bool = True) -> tuple[float, float]:
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
    order = np.argsort(-s, kind="stable")
    ss = s[order]
    tp = np.cumsum(V[order])
    pp = np.arange(1, len(s) + 1)
    ends = np.flatnonzero(np.r_[ss[1:] != ss[:-1], True]) if len(s) else np.zeros(0, int)
    tp, pp = tp[ends], pp[ends]
    na = int(A.sum())
    precision = tp / pp
    recall = tp / na if na else np.ones(len(ends))
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(precision + recall > 0, 2 * precision * recall / (precision + recall), 0.0)
    return AwFCurve(thresholds=ss[ends], precision=precision, recall=recall, f1=f1,
                    true_pos=tp, pred_pos=pp, n_answerable=na)


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


# --------------------------------------------------------------------------- bootstrap statistics
class AwFStatistic:
    """A bootstrap-ready AwF statistic: best F1, PR-AUC or F1 of hard decisions.

    Called three ways (see `verirag.metrics.stats.bootstrap_ci`):
      stat(scores, V, A)                   1-D arrays -> float
      stat(scores, V, A) with 2-D arrays   one resample per row (each row sorted) -> array
      stat(scores, V, A, indices=idx)      idx[b] = the examples drawn in resample b -> array
    The indices form is the fastest: the examples are sorted by score once, grouped into tie
    groups (one threshold each), and each resample's counts per group (drawn, drawn and
    faithful) come from one `bincount`; its curve is their cumulative sum.
    Labels are taken as in `strict=False`: a faithful answer counts its question as answerable.
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
        if indices is not None:
            return self._indexed(scores, V.astype(np.int64), A.astype(np.int64) | V.astype(np.int64),
                                 np.asarray(indices))
        if scores.ndim == 2:
            return self._rows(scores, V.astype(np.int64), A.astype(np.int64) | V.astype(np.int64))
        if self.kind == "f1":
            return awf_f1(scores, V, answerable, strict=False)
        if self.kind == "pr_auc":
            return pr_auc(scores, V, answerable, hard=self.hard, strict=False)
        return best_f1(scores, V, answerable, strict=False).f1

    # indices: idx (B, n) into the original examples
    def _indexed(self, s, V, A, idx):
        b = idx.shape[0]
        if self.hard:
            v = s.astype(np.int64)
            return self._hard_from_counts((v * V)[idx].sum(axis=1), v[idx].sum(axis=1),
                                          A[idx].sum(axis=1))
        order = np.argsort(-s, kind="stable")
        ss = s[order]
        start = np.r_[True, ss[1:] != ss[:-1]]
        group = np.empty(len(s), dtype=np.int64)
        group[order] = np.cumsum(start) - 1          # tie group of each example, by decreasing score
        G = int(start.sum())
        key = group * 2 + V                           # (group, faithful) in one integer
        flat = (key[idx] + (np.arange(b, dtype=np.int64) * (2 * G))[:, None]).ravel()
        c = np.bincount(flat, minlength=b * 2 * G).reshape(b, G, 2)
        cdt = np.int32 if len(s) < 2**31 else np.int64
        cc = np.cumsum(c, axis=1, dtype=cdt)
        tp = cc[:, :, 1]
        pp = cc[:, :, 0] + tp
        na = A.astype(np.int8)[idx].sum(axis=1, dtype=np.int64)
        return self._from_cumulative(tp, pp, na, dtp=c[:, :, 1])

    # rows: each row is one resample (its own sort)
    def _rows(self, s, V, A):
        na = A.sum(axis=1)
        if self.hard:
            return self._hard_from_counts((s.astype(np.int64) * V).sum(axis=1), s.astype(np.int64).sum(axis=1), na)
        order = np.argsort(-s, axis=1, kind="stable")
        ss = np.take_along_axis(s, order, axis=1)
        Vo = np.take_along_axis(V, order, axis=1)
        tp = np.cumsum(Vo, axis=1)
        pp = np.broadcast_to(np.arange(1, s.shape[1] + 1, dtype=np.int64), s.shape)
        is_end = np.ones(s.shape, dtype=bool)
        is_end[:, :-1] = ss[:, 1:] != ss[:, :-1]
        # positions that are not the end of a tie group do not define a threshold: copy the
        # group end's counts onto them (backward fill), so they repeat its (P, R) point.
        n = s.shape[1]
        idx = np.where(is_end, np.arange(n), n)
        nxt = np.minimum.accumulate(idx[:, ::-1], axis=1)[:, ::-1]
        tp = np.take_along_axis(tp, nxt, axis=1)
        pp = np.take_along_axis(np.ascontiguousarray(pp), nxt, axis=1)
        return self._from_cumulative(tp, pp, na)

    def _from_cumulative(self, tp, pp, na, dtp=None):
        """tp, pp: (B, K) cumulative counts at candidate thresholds (decreasing; a repeated
        point or a point with pp = 0 is harmless); na: (B,) answerable counts."""
        na = np.asarray(na, dtype=np.float64)
        nz = na > 0
        if self.kind == "best_f1":
            # F1 = 2PR / (P + R) = 2 TP / (PP + NA) (0 where TP = 0). With NA = 0, TP = 0 at every
            # threshold and abstaining everywhere (F1 = 1 by convention) is best.
            if tp.shape[1] == 0:
                return np.where(nz, 0.0, 1.0)
            best = (2.0 * tp / np.maximum(pp + na[:, None], 1.0)).max(axis=1)
            return np.where(nz, best, 1.0)
        # pr_auc: sum_k (R_k - R_{k-1}) P_k = sum_k dTP_k * (TP_k / PP_k) / NA
        if dtp is None:
            dtp = np.diff(tp, axis=1, prepend=0.0)
        area = (dtp * (tp / np.maximum(pp, 1.0))).sum(axis=1) / np.where(nz, na, 1.0)
        return np.where(nz, area, np.nan)

    def _hard_from_counts(self, tp, pp, na):
        tp, pp, na = (np.asarray(x, dtype=np.float64) for x in (tp, pp, na))
        with np.errstate(invalid="ignore", divide="ignore"):
            p = np.where(pp > 0, tp / np.where(pp > 0, pp, 1), 1.0)
            r = np.where(na > 0, tp / np.where(na > 0, na, 1), 1.0)
            if self.kind == "f1":
                return np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
            return np.where(na > 0, p * r, np.nan)


best_f1_statistic = AwFStatistic("best_f1")
pr_auc_statistic = AwFStatistic("pr_auc")
hard_pr_auc_statistic = AwFStatistic("pr_auc", hard=True)
f1_statistic = AwFStatistic("f1")
