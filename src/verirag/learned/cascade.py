"""The cascade's band: where the trained verifier decides and where an LLM judge does (issue 36, item 4).

    band = CascadeBand(budget=0.2, judge="nli").fit(verifier_raw, judge_raw, labels)
    band.band_                        # [low, high] on the calibrated verifier scale
    p, inside = band.route(0.61)      # the verifier's calibrated score, and whether the judge decides
    score = band.combine(0.61, 0.83)  # the cascade's one score (the judge's, calibrated, when inside)
    band.save("cascade.json"); CascadeBand.load("cascade.json", expect={"verifier": fp})

Raw: a judge's own score, before the answer rules (`verirag.awf.core.AnswerRules`, which zero a
declined answer after the cascade has scored it): what `route` and `combine` see at answer time, so
the calibrations and the band are fitted on it too (an eval record's `raw_score`, not its `score`).

Scale: each judge's raw score s is mapped to P(faithful) by Platt scaling fitted on held-out labelled
answers, p = sigmoid(a * logit(s) + b) (`calibrations_[name] = [a, b]`, s clipped to [1e-6, 1 - 1e-6]),
so the verifier's and the judge's scores are one scale and the cascade's output is a calibrated score
whichever judge decided.

Band (`fit_band`): of the n held-out answers, at most k = floor(budget * n) may reach the judge. The
band is a run of k consecutive held-out answers in calibrated-verifier order that straddles the
decision `threshold` (P = 0.5 by default), chosen where the verifier is least reliable: the run
holding the most answers the verifier gets wrong at the threshold (ties: the run centred nearest the
threshold). Its edges are the midpoints to the neighbouring answers outside it, so exactly k held-out
answers fall inside; on new answers the share holds approximately. A budget of 0 is an empty band.

The held-out raw scores and labels are kept in the file (`scores_`: numbers only, no text), so a
cascade asked for another budget refits its band from them (`with_budget`) without a new run.

Fingerprints: `verifier` (the trained verifier's adapter and encoder: its scores mean something else
after retraining) is refused on a mismatch; `judge` (the judge's identity digest: another prompt or
model) warns, since only the judge's calibration weakens; `data` (the held-out answers) is recorded.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.base import LearnedPart
from verirag.metrics.calibration import auroc, sigmoid

# The band shipped in the package (made by `make cascade`), used when `vanilla+cascade` names none.
SHIPPED_CASCADE = Path(__file__).resolve().parent / "shipped" / "cascade.json"
DEFAULT_BUDGET = 0.20
DEFAULT_JUDGE = "nli"
VERIFIER = "verifier"
_EPS = 1e-6


def shipped_cascade_path() -> Path:
    """The band file `vanilla+cascade` reads when given none (`cascade=FILE` names another)."""
    return CascadeBand.shipped_file(SHIPPED_CASCADE, "cascade")


def logit(p) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.log(p / (1 - p))


def fit_platt(raw: Sequence[float], labels: Sequence[int]) -> list[float]:
    """[a, b] of p = sigmoid(a * logit(raw) + b), fitted by logistic regression (weak L2, C=100)."""
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(labels, dtype=int)
    if len(set(y.tolist())) < 2:
        raise InputError("a calibration needs faithful and unfaithful held-out answers")
    model = LogisticRegression(C=100.0, max_iter=1000).fit(logit(raw)[:, None], y)
    return [float(model.coef_[0][0]), float(model.intercept_[0])]


def apply_platt(ab: Sequence[float], raw) -> np.ndarray:
    return sigmoid(ab[0] * logit(raw) + ab[1])


def fit_band(calibrated: Sequence[float], errors: Sequence[bool], threshold: float, budget: float) -> list[float]:
    """[low, high]: the band around `threshold` holding at most floor(budget * n) of the n scores,
    placed over the verifier's errors (see the module docstring). A band with low > high is empty."""
    if not 0.0 <= budget <= 1.0:
        raise InputError(f"the budget is a share of answers in [0, 1], got {budget}")
    s = np.asarray(calibrated, dtype=np.float64)
    e = np.asarray(errors, dtype=bool)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    n = len(s)
    k = math.floor(budget * n + 1e-9)
    if k == 0 or n == 0:
        return [threshold, threshold - 1.0]  # empty: nothing reaches the judge
    if k >= n:
        return [0.0, 1.0]
    best: tuple | None = None
    for i in range(n - k + 1):
        j = i + k - 1
        # edges must separate the run from its neighbours, or a tie would let more than k in
        if (i > 0 and s[i - 1] == s[i]) or (j < n - 1 and s[j + 1] == s[j]):
            continue
        straddles = s[i] <= threshold <= s[j]
        centre = abs((s[i] + s[j]) / 2 - threshold)
        key = (straddles, int(e[i : j + 1].sum()), -centre)
        if best is None or key > best[0]:
            best = (key, i, j)
    if best is None:  # every run is cut by ties: nothing can be bounded to the budget
        return [threshold, threshold - 1.0]
    _, i, j = best
    low = 0.0 if i == 0 else float((s[i - 1] + s[i]) / 2)
    high = 1.0 if j == n - 1 else float((s[j] + s[j + 1]) / 2)
    return [low, high]


class CascadeBand(LearnedPart):
    """Fitted attributes: `band_` ([low, high] on the calibrated verifier scale), `calibrations_`
    ({judge name: [a, b]}, the verifier's and the judge's), `scores_` (the held-out raw scores and
    labels it was fitted on: {"verifier", "judge", "labels", "groups"}), `n_fit_`, `fit_share_` (the
    share of held-out answers inside the band), `fit_auroc_` (verifier, judge and cascade on them)."""

    format_name = "cascade"
    title = "cascade band"
    fitted_attribute = "band_"
    fit_command = "verirag train cascade RUN --out FILE"
    refuse_on = ("verifier",)
    warn_on = ("judge",)

    def __init__(
        self,
        *,
        budget: float = DEFAULT_BUDGET,
        threshold: float = 0.5,
        judge: str = DEFAULT_JUDGE,
        fingerprints: dict[str, Any] | None = None,
    ):
        super().__init__(fingerprints)
        if not 0.0 <= float(budget) <= 1.0:
            raise InputError(f"the budget is a share of answers in [0, 1], got {budget}")
        if not 0.0 < float(threshold) < 1.0:
            raise InputError(f"the decision threshold is a probability in (0, 1), got {threshold}")
        self.budget, self.threshold, self.judge = float(budget), float(threshold), str(judge)
        self.band_: list[float] | None = None

    # ---- fitting ---------------------------------------------------------------------------------
    def fit(
        self,
        verifier_scores: Sequence[float],
        judge_scores: Sequence[float],
        labels: Sequence[int],
        groups: Sequence[str] | None = None,
    ) -> CascadeBand:
        v = np.asarray(verifier_scores, dtype=np.float64)
        j = np.asarray(judge_scores, dtype=np.float64)
        y = np.asarray(labels, dtype=int)
        if not (v.shape == j.shape == y.shape) or v.ndim != 1:
            raise InputError(f"one verifier score, judge score and label per answer: {v.shape}, {j.shape}, {y.shape}")
        if not (np.isfinite(v).all() and np.isfinite(j).all()):
            raise InputError("the held-out scores hold NaN or infinite values: drop the failed answers first")
        self.calibrations_ = {VERIFIER: fit_platt(v, y), self.judge: fit_platt(j, y)}
        self.scores_ = {
            "verifier": v.tolist(),
            "judge": j.tolist(),
            "labels": y.tolist(),
            "groups": list(groups) if groups is not None else None,
        }
        self._fit_band()
        if not self.fingerprints.get("data"):
            blob = repr((self.scores_["verifier"], self.scores_["judge"], self.scores_["labels"])).encode()
            self.fingerprints["data"] = hashlib.sha256(blob).hexdigest()[:16]
        return self

    def _fit_band(self) -> None:
        v, j = np.asarray(self.scores_["verifier"]), np.asarray(self.scores_["judge"])
        y = np.asarray(self.scores_["labels"], dtype=int)
        pv = self.calibrate(VERIFIER, v)
        self.band_ = fit_band(pv, (pv >= self.threshold) != (y == 1), self.threshold, self.budget)
        inside = self.inside(pv)
        cascade = np.where(inside, self.calibrate(self.judge, j), pv)
        self.n_fit_ = len(y)
        self.fit_share_ = float(inside.mean()) if len(y) else 0.0
        self.fit_auroc_ = {"verifier": auroc(v, y), "judge": auroc(j, y), "cascade": auroc(cascade, y)}

    def with_budget(self, budget: float) -> CascadeBand:
        """A copy whose band is refitted from the stored held-out scores to `budget`."""
        self.check_fitted()
        other = CascadeBand(budget=budget, threshold=self.threshold, judge=self.judge, fingerprints=self.fingerprints)
        other.calibrations_, other.scores_, other.provenance = self.calibrations_, self.scores_, dict(self.provenance)
        other._fit_band()
        return other

    def with_band(self, low: float, high: float) -> CascadeBand:
        """A copy with the band [low, high] given (calibrated verifier scale), calibrations kept."""
        self.check_fitted()
        if not (0.0 <= low <= 1.0 and 0.0 <= high <= 1.0):
            raise InputError(f"a band is [low, high] within [0, 1], got [{low}, {high}]")
        other = self.with_budget(self.budget)
        other.band_ = [float(low), float(high)]
        pv = other.calibrate(VERIFIER, other.scores_["verifier"])
        other.fit_share_ = float(other.inside(pv).mean()) if len(pv) else 0.0
        return other

    # ---- using it ------------------------------------------------------------------------------
    def calibrated_for(self, name: str) -> bool:
        return name in (getattr(self, "calibrations_", None) or {})

    def calibrate(self, name: str, raw):
        """P(faithful) of judge `name`'s raw score(s); a judge without a calibration keeps its raw score."""
        if getattr(self, "calibrations_", None) is None:
            self.check_fitted()
        ab = self.calibrations_.get(name)
        out = np.asarray(raw, dtype=np.float64) if ab is None else apply_platt(ab, raw)
        return float(out) if np.ndim(out) == 0 else out

    def inside(self, calibrated):
        low, high = self.band_
        c = np.asarray(calibrated, dtype=np.float64)
        out = (c >= low) & (c <= high)
        return bool(out) if np.ndim(out) == 0 else out

    def route(self, verifier_raw: float) -> tuple[float, bool]:
        """(the verifier's calibrated score, whether it falls inside the band: the judge decides)."""
        p = self.calibrate(VERIFIER, verifier_raw)
        return p, self.inside(p)

    def combine(self, verifier_raw, judge_raw=None, judge: str | None = None):
        """The cascade's score(s): the judge's calibrated score inside the band, the verifier's outside.
        Vectorised over arrays (judge_raw then has a value, maybe NaN, wherever the band holds)."""
        pv = self.calibrate(VERIFIER, verifier_raw)
        if judge_raw is None:
            return pv
        pj = self.calibrate(judge or self.judge, judge_raw)
        out = np.where(self.inside(pv), pj, pv)
        return float(out) if np.ndim(out) == 0 else out

    # ---- saved form -------------------------------------------------------------------------------
    def restore(self, state: dict[str, Any], path: Path) -> None:
        super().restore(state, path)
        band = self.band_
        if not (isinstance(band, list) and len(band) == 2 and all(isinstance(x, (int, float)) for x in band)):
            raise ValueError(f"band_ must be [low, high], got {band!r}")
        for name, ab in (self.calibrations_ or {}).items():
            if not (isinstance(ab, list) and len(ab) == 2 and all(math.isfinite(float(x)) for x in ab)):
                raise ValueError(f"calibration {name!r} must be [a, b], got {ab!r}")
        if VERIFIER not in (self.calibrations_ or {}):
            raise ValueError("no calibration of the verifier")
