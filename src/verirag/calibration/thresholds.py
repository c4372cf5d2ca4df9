"""Where a faithfulness threshold comes from: a fixed value, a target precision with a
finite-sample guarantee, or a target action rate ("at most 20% escalations").

Construct, fit on labelled data, read `threshold_` (the scikit-learn / MAPIE pattern). The
policies in `verirag.awf.policies` accept a fitted ThresholdTarget wherever they take a float.
"""
from __future__ import annotations

import math

import numpy as np


class ThresholdTarget:
    """Where the faithfulness threshold comes from (construct, fit, read `threshold_`).

    Exactly one of:
    - `value`: a fixed threshold; `threshold_` is set at construction, `fit` is a no-op.
    - `precision`: the smallest threshold t whose precision P(correct | score >= t) is at least
      `precision` with probability >= 1 - `delta` over the draw of the labelled data
      (`verirag.metrics.stats.precision_guarantee_threshold`: Learn-then-Test with exact binomial
      tail p-values on the grid 0, 0.01, ..., 1, Bonferroni by default). Assumes the labelled
      (score, correct) pairs are exchangeable with future ones. When no threshold can be certified,
      `threshold_` is +inf (act on everything) and `valid_` is False.
    - `action_rate`: act (abstain / fall back / escalate) on at most this share of examples, e.g.
      0.2 for "at most 20% escalations": with n fitted scores, `threshold_` is the (k+1)-th
      smallest score, k = floor(rate * n), so at most k fitted scores fall strictly below it (ties
      are answered). NaN scores always act and use up the budget first. Labels are not needed.
      This controls the empirical rate on the fitted data; on new data it holds approximately.

    Fitted attributes: `threshold_`, `n_fit_`, `fit_action_rate_` (share of fitted scores below
    the threshold), and for `precision` also `valid_` and `result_` (the PrecisionThreshold).
    NaN scores (failed verification) count as 0 for the precision fit, as MethodOutput does.
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
        if precision is not None and not 0 < precision < 1:
            raise ValueError("precision must lie in (0, 1)")
        if action_rate is not None and not 0 <= action_rate <= 1:
            raise ValueError("action_rate must lie in [0, 1]")
        if value is not None:
            self.threshold_ = float(value)

    @classmethod
    def fixed(cls, value: float) -> "ThresholdTarget":
        return cls(value=value)

    @classmethod
    def target_precision(cls, precision: float, delta: float = 0.1, method: str = "bonferroni") -> "ThresholdTarget":
        return cls(precision=precision, delta=delta, method=method)

    @classmethod
    def max_action_rate(cls, rate: float) -> "ThresholdTarget":
        return cls(action_rate=rate)

    @property
    def fitted(self) -> bool:
        return hasattr(self, "threshold_")

    def fit(self, scores, labels=None) -> "ThresholdTarget":
        s = np.asarray(scores, dtype=np.float64).ravel()
        if self.kind == "value":
            return self
        if s.size == 0:
            raise ValueError("no scores to fit the threshold on")
        self.n_fit_ = int(s.size)
        if self.kind == "precision":
            from verirag.metrics.stats import precision_guarantee_threshold
            if labels is None:
                raise ValueError("a target precision needs labels (1 = correct / faithful)")
            res = precision_guarantee_threshold(np.nan_to_num(s, nan=0.0), labels, self.precision,
                                                delta=self.delta, method=self.method)
            self.result_, self.valid_, self.threshold_ = res, res.valid, float(res.threshold)
        else:
            finite = np.sort(s[~np.isnan(s)])
            budget = int(math.floor(self.action_rate * s.size + 1e-9)) - int(np.isnan(s).sum())
            if finite.size == 0 or budget <= 0:
                self.threshold_ = float(finite[0]) if finite.size else 0.0
            elif budget >= finite.size:
                self.threshold_ = math.inf
            else:
                self.threshold_ = float(finite[budget])
        below = np.isnan(s) | (s < self.threshold_)
        self.fit_action_rate_ = float(below.mean())
        return self

    def __float__(self) -> float:
        if not self.fitted:
            raise RuntimeError(f"ThresholdTarget({self.kind}) is not fitted: call fit(scores, labels) first")
        return float(self.threshold_)

    def __repr__(self) -> str:
        target = {"value": self.value, "precision": self.precision, "action_rate": self.action_rate}[self.kind]
        fitted = f", threshold_={self.threshold_:.4g}" if self.fitted else ""
        return f"ThresholdTarget({self.kind}={target}{fitted})"
