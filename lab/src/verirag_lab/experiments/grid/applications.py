"""The AwF paper's two applications (section 6), computed from result records alone.

Both pair the records of two runs by example_id (e.g. InstructRAG+NLI and No-Context answers of
one model on one dataset). Examples present on one side only are reported (`unpaired_*`), never
silently dropped: the curves use the paired examples, and the counts say how many were left out.

No-RAG fallback (section 6.1, Figure 3, Tables 3-4): answer with the RAG answer when its score
s >= t, else with the no-RAG answer of the same model. With c_rag, c_norag in {0, 1} (correct):

    accuracy(t)      = mean_i( c_rag_i if s_i >= t else c_norag_i )
    fallback rate(t) = mean_i( s_i < t )

swept over the thresholds t in {distinct scores} + {inf} (rate 0 ... rate 1). The operating point
is chosen by K-fold cross-validation (`verirag.learned.threshold.cv_threshold`, gains c_rag / c_norag),
so its accuracy is out-of-fold; the in-sample maximum of the curve is reported as an optimistic
reference only.

Switch to a larger model (section 6.2, Figure 4, Table 5): the k lowest-scoring answers of the
small model are replaced by the larger model's answers. Examples tied at the cut are switched
uniformly at random, taken in expectation (each tie group's gain c_large - c_small is averaged),
so the curve is deterministic and linear inside a tie group:

    accuracy(k) = acc_small + (1/n) sum_{j <= k} g_(j),   rate = k / n,   k = 0..n

with g_(j) the tie-averaged gains in increasing score order. At the configured rate r, k =
floor(r n). A random switch has expected accuracy (1 - r) acc_small + r acc_large (the baseline).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verirag.learned.threshold import cv_threshold
from verirag.metrics.stats import group_bootstrap_intervals
from verirag.records import ResultRecord

__all__ = ["FallbackResult", "Pairing", "SwitchResult", "no_rag_fallback", "pair_records", "switch_to_larger"]


# --------------------------------------------------------------------------- pairing
@dataclass(frozen=True)
class Pairing:
    """Records of two runs matched by example_id (pairs in example_id order)."""

    left: list[ResultRecord]
    right: list[ResultRecord]
    unpaired_left: list[str]
    unpaired_right: list[str]

    @property
    def n(self) -> int:
        return len(self.left)


def _by_id(records: list[ResultRecord], side: str) -> dict[str, ResultRecord]:
    out: dict[str, ResultRecord] = {}
    for r in records:
        if r.example_id in out:
            raise ValueError(
                f"{side} records hold example_id {r.example_id!r} twice: pass the "
                "records of one (dataset, model, method) only"
            )
        out[r.example_id] = r
    return out


def pair_records(
    left: list[ResultRecord], right: list[ResultRecord], names: tuple[str, str] = ("left", "right")
) -> Pairing:
    """Match two record lists by example_id; ids present on one side only are listed (sorted)."""
    a, b = _by_id(list(left), names[0]), _by_id(list(right), names[1])
    common = sorted(a.keys() & b.keys())
    return Pairing(
        left=[a[k] for k in common],
        right=[b[k] for k in common],
        unpaired_left=sorted(a.keys() - b.keys()),
        unpaired_right=sorted(b.keys() - a.keys()),
    )


def _jsonable(x: Any) -> Any:
    if isinstance(x, np.ndarray):
        return [_jsonable(v) for v in x.tolist()]
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (float, np.floating)):
        x = float(x)
        return None if math.isnan(x) else ("inf" if x == math.inf else x)
    if isinstance(x, np.integer):
        return int(x)
    return x


# --------------------------------------------------------------------------- no-RAG fallback
@dataclass(frozen=True)
class FallbackResult:
    """No-RAG fallback of one RAG method (see the module docstring).

    Curve (one point per threshold, fallback rate increasing): thresholds, fallback_rate,
    accuracy; rag_accuracy_fallen / norag_accuracy_fallen: mean correctness of the RAG and the
    no-RAG answers on the examples that fall back (NaN at rate 0; the paper's Figure 3 green and
    red lines). Reference accuracies: rag_accuracy (never fall back), norag_accuracy (always),
    oracle_accuracy = mean(max(c_rag, c_norag)) (a perfect chooser). best_*: the in-sample
    maximum of the curve (optimistic). cv_*: the cross-validated operating point; cv_gain_* =
    its accuracy minus rag_accuracy, on all examples and on the answerable / unanswerable ones
    (the paper's Table 4 "relevant" / "irrelevant"), with a bootstrap interval on all examples
    (resampling question groups).
    """

    n: int
    thresholds: np.ndarray
    fallback_rate: np.ndarray
    accuracy: np.ndarray
    rag_accuracy_fallen: np.ndarray
    norag_accuracy_fallen: np.ndarray
    rag_accuracy: float
    norag_accuracy: float
    oracle_accuracy: float
    best_accuracy: float
    best_fallback_rate: float
    best_threshold: float
    cv_accuracy: float
    cv_fallback_rate: float
    cv_thresholds: np.ndarray
    cv_folds: int
    cv_gain: float
    cv_gain_low: float
    cv_gain_high: float
    cv_gain_answerable: float
    cv_gain_unanswerable: float
    n_answerable: int
    unpaired_rag: list[str] = field(default_factory=list)
    unpaired_norag: list[str] = field(default_factory=list)
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {k: _jsonable(v) for k, v in self.__dict__.items()}


def _fallback_curve(s, c_rag, c_norag):
    """Accuracy and fallback rate at every distinct threshold (ascending) and +inf (one sort)."""
    n = len(s)
    order = np.argsort(s, kind="stable")
    ss = s[order]
    starts = np.flatnonzero(np.r_[True, ss[1:] != ss[:-1]])
    cut = np.r_[starts, n]  # examples below each threshold
    rag_below = np.r_[0.0, np.cumsum(c_rag[order])][cut]
    norag_below = np.r_[0.0, np.cumsum(c_norag[order])][cut]
    acc = (c_rag.sum() - rag_below + norag_below) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        rag_f = np.where(cut > 0, rag_below / np.maximum(cut, 1), np.nan)
        norag_f = np.where(cut > 0, norag_below / np.maximum(cut, 1), np.nan)
    return np.r_[ss[starts], np.inf], cut / n, acc, rag_f, norag_f


def no_rag_fallback(
    rag_records: list[ResultRecord],
    norag_records: list[ResultRecord],
    folds: int = 5,
    seed: int = 0,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
) -> FallbackResult:
    """No-RAG fallback curve and its cross-validated operating point (module docstring).

    `rag_records`: one RAG method's records (score = its faithfulness score); `norag_records`:
    the same model's no-RAG answers; both of one dataset, paired by example_id. Folds keep each
    record's `group` together. Raises ValueError when no example is paired.
    """
    p = pair_records(rag_records, norag_records, ("RAG", "no-RAG"))
    if p.n == 0:
        raise ValueError(
            f"no example is in both runs ({len(p.unpaired_left)} RAG-only, {len(p.unpaired_right)} no-RAG-only)"
        )
    s = np.array([r.score for r in p.left], dtype=np.float64)
    cr = np.array([r.correct for r in p.left], dtype=np.float64)
    cn = np.array([r.correct for r in p.right], dtype=np.float64)
    ans = np.array([bool(r.answerable) or bool(r.faithful) for r in p.left])
    groups = np.array([r.group or r.example_id for r in p.left], dtype=object)
    thr, rate, acc, rag_f, norag_f = _fallback_curve(s, cr, cn)
    b = int(np.argmax(acc))
    notes: list[str] = []
    cv_acc = cv_rate = gain = g_lo = g_hi = g_ans = g_un = math.nan
    cv_t, n_folds = np.zeros(0), 0
    try:
        cv = cv_threshold(s, cr, cn, n_folds=folds, groups=groups, seed=seed)
    except ValueError as e:
        notes.append(f"no cross-validated point ({e})")
    else:
        final = np.where(cv.kept, cr, cn)
        diff = final - cr  # per-example gain over RAG-only
        cv_acc, cv_rate, cv_t, n_folds = cv.gain, 1.0 - cv.kept_rate, cv.fold_thresholds, len(cv.folds)
        # question groups resampled whole (HotpotQA's twins together), as the summary's intervals
        r = group_bootstrap_intervals(
            lambda ix: {"gain": diff[ix].mean(axis=1)},
            list(groups),
            n_resamples=n_resamples,
            confidence=confidence,
            seed=seed,
        )["gain"]
        gain, g_lo, g_hi = r.estimate, r.low, r.high
        g_ans = float(diff[ans].mean()) if ans.any() else math.nan
        g_un = float(diff[~ans].mean()) if (~ans).any() else math.nan
    return FallbackResult(
        n=p.n,
        thresholds=thr,
        fallback_rate=rate,
        accuracy=acc,
        rag_accuracy_fallen=rag_f,
        norag_accuracy_fallen=norag_f,
        rag_accuracy=float(cr.mean()),
        norag_accuracy=float(cn.mean()),
        oracle_accuracy=float(np.maximum(cr, cn).mean()),
        best_accuracy=float(acc[b]),
        best_fallback_rate=float(rate[b]),
        best_threshold=float(thr[b]),
        cv_accuracy=cv_acc,
        cv_fallback_rate=cv_rate,
        cv_thresholds=cv_t,
        cv_folds=n_folds,
        cv_gain=gain,
        cv_gain_low=g_lo,
        cv_gain_high=g_hi,
        cv_gain_answerable=g_ans,
        cv_gain_unanswerable=g_un,
        n_answerable=int(ans.sum()),
        unpaired_rag=p.unpaired_left,
        unpaired_norag=p.unpaired_right,
        notes="; ".join(notes),
    )


# --------------------------------------------------------------------------- switch to a larger model
@dataclass(frozen=True)
class SwitchResult:
    """Switch-to-larger-model curve (k = 0..n switched, rate = k / n) and its value at `rate`.

    small_accuracy / large_accuracy: accuracy of either model alone on the paired examples;
    accuracy_at_rate at achieved_rate = floor(rate n) / n; random_at_rate = the random-switch
    baseline (1 - r) small + r large at that same rate; oracle_at_rate: the best any switcher
    switching k examples could do (the k examples with the largest gain).
    """

    n: int
    rate: float
    switch_rate: np.ndarray
    accuracy: np.ndarray
    small_accuracy: float
    large_accuracy: float
    achieved_rate: float
    accuracy_at_rate: float
    random_at_rate: float
    oracle_at_rate: float
    unpaired_small: list[str] = field(default_factory=list)
    unpaired_large: list[str] = field(default_factory=list)

    @property
    def gain_over_random(self) -> float:
        return self.accuracy_at_rate - self.random_at_rate

    def random_curve(self) -> np.ndarray:
        """The random-switch baseline at every point of `switch_rate`."""
        return (1 - self.switch_rate) * self.small_accuracy + self.switch_rate * self.large_accuracy

    def to_dict(self) -> dict[str, Any]:
        d = {k: _jsonable(v) for k, v in self.__dict__.items()}
        d["gain_over_random"] = _jsonable(self.gain_over_random)
        return d


def _tie_averaged(s: np.ndarray, g: np.ndarray) -> np.ndarray:
    """g sorted by increasing s, each tie group's values replaced by the group mean."""
    order = np.argsort(s, kind="stable")
    ss, gs = s[order], g[order]
    gid = np.cumsum(np.r_[True, ss[1:] != ss[:-1]]) - 1
    return (np.bincount(gid, weights=gs) / np.bincount(gid))[gid]


def switch_to_larger(
    small_records: list[ResultRecord], large_records: list[ResultRecord], rate: float = 0.2
) -> SwitchResult:
    """Accuracy vs switch rate when the lowest-scoring small-model answers go to the larger model.

    `small_records`: one method on the small model (its scores rank the examples);
    `large_records`: the larger model's answers; both of one dataset, paired by example_id.
    Raises ValueError when no example is paired or rate is outside [0, 1].
    """
    if not 0 <= rate <= 1:
        raise ValueError("rate must lie in [0, 1]")
    p = pair_records(small_records, large_records, ("small-model", "large-model"))
    if p.n == 0:
        raise ValueError(
            f"no example is in both runs ({len(p.unpaired_left)} small-only, {len(p.unpaired_right)} large-only)"
        )
    n = p.n
    s = np.array([r.score for r in p.left], dtype=np.float64)
    cs = np.array([r.correct for r in p.left], dtype=np.float64)
    cl = np.array([r.correct for r in p.right], dtype=np.float64)
    acc = cs.mean() + np.r_[0.0, np.cumsum(_tie_averaged(s, cl - cs))] / n
    k = math.floor(rate * n + 1e-9)
    r = k / n
    best_gain = np.sort(cl - cs)[::-1][:k].sum() / n
    return SwitchResult(
        n=n,
        rate=rate,
        switch_rate=np.arange(n + 1) / n,
        accuracy=acc,
        small_accuracy=float(cs.mean()),
        large_accuracy=float(cl.mean()),
        achieved_rate=r,
        accuracy_at_rate=float(acc[k]),
        random_at_rate=float((1 - r) * cs.mean() + r * cl.mean()),
        oracle_at_rate=float(cs.mean() + best_gain),
        unpaired_small=p.unpaired_left,
        unpaired_large=p.unpaired_right,
    )
