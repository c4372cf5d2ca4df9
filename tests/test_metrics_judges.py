"""LLM judges: verdict parsing on canned replies, a scripted stand-in LLM, and SmolLM2 end to end."""

from __future__ import annotations

import math

import pytest
from doubles import ScriptedLLM

from verirag.errors import BackendError
from verirag.evaluation import judges as JE
from verirag.metrics import judges as J


@pytest.mark.parametrize(
    "text,want",
    [
        ("yes", True),
        ("Yes.", True),
        ("YES", True),
        ("no", False),
        ("No.", False),
        (" no\n", False),
        ("CompareGPT response: yes", True),
        ("Answer: No, the prediction is wrong.", False),
        ("**Yes**", True),
        ('"no"', False),
        ("Correct", True),
        ("Incorrect.", False),
        ("True", True),
        ("false", False),
        ("Not supported by the evidence.", False),
        ("The answer is yes.", True),
        ("I would say no", False),
        ("Supported", True),
        ("Yes, but no details are given", True),  # first word decides
    ],
)
def test_parse_readable(text, want):
    verdict, reason = J.parse_yes_no(text)
    assert verdict is want, (text, reason)
    assert reason.startswith("parsed")


@pytest.mark.parametrize(
    "text", ["", "   ", None, "Maybe.", "It depends on yes or no", "Paris", "The prediction mentions the date."]
)
def test_parse_unreadable_is_none_with_reason(text):
    verdict, reason = J.parse_yes_no(text)
    assert verdict is None and reason.startswith("unparseable")


def test_correctness_judge_max_over_references_and_raw_kept():
    llm = ScriptedLLM(["No.", "Yes"])
    v = JE.CorrectnessJudge(llm).judge("Who?", ["Bill Murray", "Murray"], "It was Bill.")
    assert v.verdict is True and v.score == 1.0
    assert v.raw == ["No.", "Yes"] and len(v.calls) == 2
    user = llm.prompts[0][-1]["content"]
    assert "Reference answer: Bill Murray" in user and "Response: It was Bill." in user
    # stops at the first yes
    llm = ScriptedLLM(["yes", "no"])
    v = JE.CorrectnessJudge(llm).judge("Who?", ["a", "b"], "a")
    assert len(v.calls) == 1 and llm.replies == ["no"]


def test_unreadable_verdict_is_recorded_not_dropped():
    llm = ScriptedLLM(["no", "Hmm, hard to say."])
    v = JE.CorrectnessJudge(llm).judge("q", ["a", "b"], "c")
    assert v.verdict is None and v.score is None and "unparseable" in v.reason
    assert v.raw == ["no", "Hmm, hard to say."]
    assert math.isnan(J.score_or_nan(v))
    # a backend error is recorded as well
    llm = ScriptedLLM([BackendError("server down")])
    v = JE.FaithfulnessJudge(llm).judge(["Paris is in France."], "Paris", "Where?")
    assert v.verdict is None and v.reason.startswith("error:")
    assert v.to_dict()["reason"] == v.reason


def test_faithfulness_judge_prompt_and_logprob_mode():
    llm = ScriptedLLM(["No"])
    v = JE.FaithfulnessJudge(llm).judge(["Paris is in France.", "It is big."], "Lyon", "Where?")
    assert v.verdict is False
    assert "Evidence: Paris is in France. It is big." in llm.prompts[0][-1]["content"]
    llm = ScriptedLLM([], next_token={"Yes": math.log(0.6), " yes": math.log(0.1), "No": math.log(0.1), "The": -1})
    v = JE.FaithfulnessJudge(llm, mode="logprobs").judge(["p"], "r")
    assert v.verdict is True and v.score == pytest.approx(0.7 / 0.8)
    assert v.raw[0]["p_yes"] == pytest.approx(0.7)
    llm = ScriptedLLM([], next_token={" Yes": math.log(0.2), "No": math.log(0.2)})
    assert JE.FaithfulnessJudge(llm, mode="logprobs").judge(["p"], "r").score == pytest.approx(0.5)
    llm = ScriptedLLM([], next_token={"The": -0.1})
    v = JE.FaithfulnessJudge(llm, mode="logprobs").judge(["p"], "r")
    assert v.verdict is None and "among the next-token candidates" in v.reason


@pytest.mark.slow
def test_judges_end_to_end_with_smollm(smollm):
    cj = JE.CorrectnessJudge(smollm, max_tokens=6)
    v = cj.judge("What is the capital of France?", ["Paris"], "The capital of France is Paris.")
    assert v.raw and isinstance(v.raw[0], str)
    assert v.verdict in (True, False, None)
    assert v.reason.startswith("unparseable" if v.verdict is None else "parsed"), v.reason  # either way, said how
    fj = JE.FaithfulnessJudge(smollm, mode="logprobs")
    f = fj.judge(["Paris is the capital of France."], "Paris", "What is the capital of France?")
    assert f.verdict in (True, False) and 0.0 <= f.score <= 1.0
    assert set(f.raw[0]) == {"p_yes", "p_no"}
