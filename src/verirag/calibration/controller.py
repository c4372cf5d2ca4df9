"""The threshold controller: where a faithfulness threshold comes from, and what it decides.

Construct with a target, fit on scores (and labels), read the fitted state, decide
(the scikit-learn / MAPIE controller shape):

    c = ThresholdController(precision=0.9, delta=0.1).fit(scores, labels)
    c.threshold_, c.certified_      # 0.63, True   -- or None, False: no threshold reaches 0.9
    c.decide(0.7)                   # "answer" or "act" (abstain / fall back / escalate)
    c.keep(scores)                  # vectorised: True where the answer is kept

"No threshold reaches the target" is a state of the fitted controller (`certified_` False,
`threshold_` None), not an infinite threshold: every answer then acts. The policies in
`verirag.awf.policies`, the pipeline, `verirag calibrate` / `verirag ask --threshold FILE` and
the experiment summaries all take a controller wherever they take a float threshold.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["ThresholdController", "ThresholdTarget", "ANSWER", "ACT", "KINDS"]

ANSWER = "answer"   # the score reaches the threshold: the answer stands
ACT = "act"         # it does not (or no threshold is certified): abstain / fall back / escalate
KINDS = ("value", "precision", "action_rate")


class ThresholdController:
    """A faithfulness threshold fitted to a target (construct, `fit`, read `threshold_`, `decide`).

    Exactly one of:
    - `value`: a fixed threshold; fitted at construction (`threshold_` = value, `certified_`
      True); `fit` only records `n_fit_` and `fit_action_rate_`.
    - `precision`: the smallest threshold t whose precision P(correct | score >= t) is at least
      `precision` with probability >= 1 - `delta` over the draw of the labelled data
      (`verirag.calibration.ltt.precision_guarantee_threshold`: Learn-then-Test with exact
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

    def __init__(self, *, value: float | None = None, precision: float | None = None,
                 action_rate: float | None = None, delta: float = 0.1, method: str = "bonferroni"):
        given = [k for k, v in (("value", value), ("precision", precision), ("action_rate", action_rate))
                 if v is not None]
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

    # ---- constructors (the names older callers use) ---------------------------------------
    @classmethod
    def fixed(cls, value: float) -> "ThresholdController":
        return cls(value=value)

    @classmethod
    def target_precision(cls, precision: float, delta: float = 0.1,
                         method: str = "bonferroni") -> "ThresholdController":
        return cls(precision=precision, delta=delta, method=method)

    @classmethod
    def max_action_rate(cls, rate: float) -> "ThresholdController":
        return cls(action_rate=rate)

    # ---- state ----------------------------------------------------------------------------
    @property
    def target(self) -> float:
        """The target's number: the value, the precision or the action rate."""
        return float({"value": self.value, "precision": self.precision,
                      "action_rate": self.action_rate}[self.kind])

    @property
    def fitted(self) -> bool:
        return hasattr(self, "certified_")

    @property
    def valid_(self) -> bool:
        """Older name of `certified_`."""
        self._check_fitted()
        return self.certified_

    def _check_fitted(self) -> None:
        if not self.fitted:
            raise RuntimeError(f"{self!r} is not fitted: call fit(scores, labels) first")

    # ---- fit ------------------------------------------------------------------------------
    def fit(self, scores, labels=None) -> "ThresholdController":
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
            from verirag.calibration.ltt import precision_guarantee_threshold
            if labels is None:
                raise ValueError("a target precision needs labels (1 = correct / faithful)")
            res = precision_guarantee_threshold(np.nan_to_num(s, nan=0.0), labels, self.precision,
                                                delta=self.delta, method=self.method)
            self.result_ = res
            threshold, certified = res.threshold, res.valid
        else:
            finite = np.sort(s[~np.isnan(s)])
            budget = int(math.floor(self.action_rate * s.size + 1e-9)) - int(np.isnan(s).sum())
            if finite.size == 0 or budget <= 0:
                threshold = float(finite[0]) if finite.size else 0.0
            elif budget >= finite.size:
                threshold = math.inf   # a rate of 1: every answer may act
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
        self._check_fitted()
        s = np.asarray(scores, dtype=np.float64)
        if self.threshold_ is None or not self.certified_:
            return np.zeros(s.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            return ~np.isnan(s) & (s >= self.threshold_)

    def decide(self, score: float | None) -> str:
        """"answer" when the score reaches the threshold, else "act" (NaN / None scores act; an
        uncertified controller always acts)."""
        s = math.nan if score is None else float(score)
        return ANSWER if bool(self.keep(s)) else ACT

    def __float__(self) -> float:
        self._check_fitted()
        if self.threshold_ is None:
            raise ValueError(f"{self!r} is not certified: no threshold reaches the target on "
                             f"{getattr(self, 'n_fit_', '?')} examples, so there is no number to "
                             "compare with; every answer acts (use decide() or keep())")
        return float(self.threshold_)

    # ---- JSON -----------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable: the target, and the fitted state when fitted. A threshold of +inf
        (action rate 1) is written "inf"; an uncertified one is null."""
        d: dict[str, Any] = {"kind": self.kind, "target": self.target}
        if self.kind == "precision":
            d.update(delta=self.delta, method=self.method)
        if self.fitted:
            t = self.threshold_
            d.update(threshold="inf" if t is not None and math.isinf(t) else t,
                     certified=self.certified_, n_fit=getattr(self, "n_fit_", None),
                     fit_action_rate=getattr(self, "fit_action_rate_", None))
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ThresholdController":
        """The controller `to_dict` described, fitted if it was (`result_` is not restored).
        Also reads old files: a threshold "inf" with no `certified` (or `valid` False) for a
        target precision is an uncertified controller."""
        kind = d["kind"]
        if kind not in KINDS:
            raise ValueError(f"unknown threshold kind {kind!r}; one of {', '.join(KINDS)}")
        kw: dict[str, Any] = {kind: float(d["target"])}
        if kind == "precision":
            if d.get("delta") is not None:
                kw["delta"] = float(d["delta"])
            if d.get("method") in ("bonferroni", "fixed_sequence"):
                kw["method"] = d["method"]
        c = cls(**kw)
        if "threshold" not in d:
            return c
        t = d["threshold"]
        t = None if t is None else float(t)
        certified = d.get("certified", d.get("valid", True))
        if kind == "precision" and (t is None or math.isinf(t)):
            certified = False   # old files wrote an uncertified precision target as "inf"
        if not certified or t is None:
            t, certified = None, False
        if kind != "value":
            c.threshold_, c.certified_ = t, bool(certified)
        if d.get("n_fit") is not None:
            c.n_fit_ = int(d["n_fit"])
        if d.get("fit_action_rate") is not None:
            c.fit_action_rate_ = float(d["fit_action_rate"])
        return c

    def __repr__(self) -> str:
        name = type(self).__name__
        fitted = ""
        if self.fitted and self.kind != "value":
            fitted = (f", threshold_={self.threshold_:.4g}" if self.threshold_ is not None
                      else ", not certified")
        return f"{name}({self.kind}={self.target:g}{fitted})"


# The older name: the same class, so `ThresholdTarget.target_precision(0.9)` keeps working.
ThresholdTarget = ThresholdController
