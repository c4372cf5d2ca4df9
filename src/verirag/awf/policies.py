"""What to do with an answer once its faithfulness score is known (AwF, section 6).

The policies (AbstainPolicy, NoRagFallbackPolicy, EscalatePolicy) act on any AwF method's output
with a threshold that is a float or a ThresholdTarget (fixed, target precision, or target action
rate). `make_policy` builds one from the pipeline's `fallback` option.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

ANSWERED = "answered"
ABSTAINED = "abstained"
FALLBACK = "fallback"

ESCALATED = "escalated"

# Below the threshold: "abstain" says so; "no-rag" answers again without the passages (the
# retrieved ones are likely irrelevant and would only distract the model); "escalate" answers
# again with a second, larger model.
FALLBACKS = ("abstain", "no-rag", "escalate")

ABSTENTION_TEXT = "I don't know: the retrieved passages do not support an answer."


# --------------------------------------------------------------------------- section 6 policies
# The threshold comes from a ThresholdTarget (or is a float); a policy turns (trace, method
# output, threshold) into a PolicyDecision. They work on any AwF method's MethodOutput.


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


@dataclass
class PolicyDecision:
    """What a policy did: `action` (ANSWERED, ABSTAINED, FALLBACK, ESCALATED), the answer to show,
    and `details` (score, threshold, original answer, second answer, errors)."""

    action: str
    final_answer: str
    details: dict[str, Any] = field(default_factory=dict)


def _threshold(threshold) -> float:
    return float(threshold)  # a float, or a fitted ThresholdTarget


def _supported(output, threshold) -> bool:
    """Answered when score >= threshold. An output with an error (no answer, unparseable text,
    a predictor that could not score) never is, whatever the threshold: its score is not evidence."""
    if output.error or not (output.answer or "").strip():
        return False
    return not math.isnan(output.score) and output.score >= _threshold(threshold)


def _base_details(output, threshold) -> dict[str, Any]:
    return {"score": output.score, "threshold": _threshold(threshold), "original_answer": output.answer,
            "method_error": output.error}


class AbstainPolicy:
    """Below the threshold, say "I don't know" (ABSTENTION_TEXT)."""

    name = "abstain"

    def apply(self, trace, output, threshold) -> PolicyDecision:
        d = _base_details(output, threshold)
        if _supported(output, threshold):
            return PolicyDecision(ANSWERED, output.answer, d)
        return PolicyDecision(ABSTAINED, ABSTENTION_TEXT, d)


class _ReanswerPolicy:
    action = FALLBACK

    def _second(self, trace):  # -> Answer
        raise NotImplementedError

    def apply(self, trace, output, threshold) -> PolicyDecision:
        d = _base_details(output, threshold)
        if _supported(output, threshold):
            return PolicyDecision(ANSWERED, output.answer, d)
        try:
            second = self._second(trace)
            err, text = second.error, second.text
        except Exception as e:  # recorded: the user sees an abstention and why
            err, text = f"{type(e).__name__}: {e}", ""
        d["second_answer"] = text
        if err or not text.strip():
            d["error"] = f"{self.name} failed: {err or 'empty answer'}"
            return PolicyDecision(ABSTAINED, ABSTENTION_TEXT, d)
        return PolicyDecision(self.action, text, d)


class NoRagFallbackPolicy(_ReanswerPolicy):
    """Below the threshold, answer again without the passages with the same LLM (AwF 6.1).
    The no-context answer is memoised in the trace ("answer:no_context"), so a method that already
    produced it (e.g. dual generation) is not asked twice."""

    name = "no_rag_fallback"
    action = FALLBACK

    def __init__(self, llm, *, max_tokens: int = 96):
        from verirag.awf.registry import create
        self.generator = create("generator", "no_context", llm, max_tokens=max_tokens)

    def _second(self, trace):
        return trace.answer(self.generator)


class EscalatePolicy(_ReanswerPolicy):
    """Below the threshold, answer again with a second, larger model on any backend (AwF 6.2),
    with the passages, using `generator_name`. Memoised in the trace under a key naming that model,
    so it never collides with the small model's answer."""

    name = "escalate"
    action = ESCALATED

    def __init__(self, larger_llm, generator_name: str = "vanilla", **generator_kw):
        from verirag.awf.registry import create
        self.llm = larger_llm
        self.generator = create("generator", generator_name, larger_llm, **generator_kw)
        self.key = f"escalate:{generator_name}:{larger_llm.fingerprint or larger_llm.model_id}"

    def _second(self, trace):
        return trace.get(self.key, lambda: self.generator.answer(trace.question, trace.passages))


def make_policy(fallback: str, llm, *, escalate_llm=None, max_tokens: int = 96):
    """The policy named by the pipeline's `fallback` option (one of FALLBACKS)."""
    if fallback == "abstain":
        return AbstainPolicy()
    if fallback == "no-rag":
        return NoRagFallbackPolicy(llm, max_tokens=max_tokens)
    if fallback == "escalate":
        if escalate_llm is None:
            raise ValueError("the escalate fallback needs a second model (escalate_model)")
        return EscalatePolicy(escalate_llm, max_tokens=max_tokens)
    raise ValueError(f"unknown fallback {fallback!r}; choose one of {', '.join(FALLBACKS)}")
