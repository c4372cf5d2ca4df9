"""What to do with an answer once its faithfulness score is known (AwF, section 6).

The policies (AbstainPolicy, NoRagFallbackPolicy, EscalatePolicy) act on any AwF method's output
with a threshold that is a float or a fitted ThresholdController (fixed, target precision, or
target action rate); a controller whose target could not be certified
makes every answer act. `make_policy` builds one from the pipeline's `fallback` option.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from verirag.errors import InputError, VeriragError, is_outage
from verirag.learned.threshold import ANSWER, as_controller

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
# The threshold comes from a ThresholdController (or is a float); a policy turns (trace, method
# output, threshold) into a PolicyDecision. They work on any AwF method's MethodOutput.


@dataclass
class PolicyDecision:
    """What a policy did: `action` (ANSWERED, ABSTAINED, FALLBACK, ESCALATED), the answer to show,
    and `details` (score, threshold, original answer, second answer, errors)."""

    action: str
    final_answer: str
    details: dict[str, Any] = field(default_factory=dict)
    failure: VeriragError | None = None  # the second answer's exception (an outage: raised by the pipeline)

    @property
    def outage(self) -> bool:
        return is_outage(self.failure)


def _supported(output, threshold) -> bool:
    """Answered when the threshold (a float, or a fitted ThresholdController: an uncertified one
    answers nothing, so every answer acts) decides "answer" for the score. An output with an error
    (no answer, unparseable text, a predictor that could not score) never is, whatever the
    threshold: its score is not evidence."""
    if output.error or not (output.answer or "").strip():
        return False
    return as_controller(threshold).decide(output.score) == ANSWER


def _base_details(output, threshold) -> dict[str, Any]:
    # "threshold" is None for a controller whose target could not be certified
    return {
        "score": output.score,
        "threshold": as_controller(threshold).threshold_,
        "original_answer": output.answer,
        "method_error": output.error,
    }


class AbstainPolicy:
    """Below the threshold, say "I don't know" (ABSTENTION_TEXT)."""

    name = "abstain"
    reads_passages = False

    def apply(self, trace, output, threshold, *, second_trace=None) -> PolicyDecision:
        d = _base_details(output, threshold)
        if _supported(output, threshold):
            return PolicyDecision(ANSWERED, output.answer, d)
        return PolicyDecision(ABSTAINED, ABSTENTION_TEXT, d)


class _ReanswerPolicy:
    """Below the threshold, answer a second time. `reads_passages`: the second answer reads the
    passages, so it is given them whole when a stage cut them for the first (`second_trace`)."""

    action = FALLBACK
    reads_passages = False

    def _second(self, trace):  # -> Answer
        raise NotImplementedError

    def apply(self, trace, output, threshold, *, second_trace=None) -> PolicyDecision:
        """`second_trace`: the example the second answer reads (default `trace`: the same
        question and passages as the first answer)."""
        d = _base_details(output, threshold)
        if _supported(output, threshold):
            return PolicyDecision(ANSWERED, output.answer, d)
        failure = None
        try:
            second = self._second(trace if second_trace is None else second_trace)
            err, text = second.error, second.text
        except VeriragError as e:  # recorded: the user sees an abstention and why (an outage is raised)
            err, text, failure = f"{type(e).__name__}: {e}", "", e
        d["second_answer"] = text
        if err or not text.strip():
            d["error"] = f"{self.name} failed: {err or 'empty answer'}"
            return PolicyDecision(ABSTAINED, ABSTENTION_TEXT, d, failure)
        return PolicyDecision(self.action, text, d)


class NoRagFallbackPolicy(_ReanswerPolicy):
    """Below the threshold, answer again without the passages with the same LLM (AwF 6.1).
    The no-context answer is memoised in the trace, so a method that already produced it with the
    same model and options is not asked again."""

    name = "no_rag_fallback"
    action = FALLBACK

    def __init__(self, llm, **generator_kw):
        from verirag.awf.registry import create

        self.generator = create("generator", "no_context", llm, **generator_kw)

    def _second(self, trace):
        return trace.answer(self.generator)


class EscalatePolicy(_ReanswerPolicy):
    """Below the threshold, answer again with a second, larger model on any backend (AwF 6.2),
    with the passages (whole, when a stage cut them for the first answer: this expensive second
    try must not miss what the cut dropped), using `generator_name`. Its trace key names that
    model, so it never collides with the small model's answer."""

    name = "escalate"
    action = ESCALATED
    reads_passages = True

    def __init__(self, larger_llm, generator_name: str = "vanilla", **generator_kw):
        from verirag.awf.registry import create

        self.llm = larger_llm
        self.generator = create("generator", generator_name, larger_llm, **generator_kw)

    def _second(self, trace):
        return trace.answer(self.generator)


def make_policy(fallback: str, llm, *, escalate_llm=None, **generator_kw):
    """The policy named by the pipeline's `fallback` option (one of FALLBACKS); `generator_kw`
    (e.g. max_tokens) go to the generator that answers again, whose defaults stand otherwise."""
    if fallback == "abstain":
        return AbstainPolicy()
    if fallback == "no-rag":
        return NoRagFallbackPolicy(llm, **generator_kw)
    if fallback == "escalate":
        if escalate_llm is None:
            raise InputError("the escalate fallback needs a second model (escalate_model)")
        return EscalatePolicy(escalate_llm, **generator_kw)
    raise InputError(f"unknown fallback {fallback!r}; choose one of {', '.join(FALLBACKS)}")
