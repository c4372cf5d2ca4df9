"""Faithfulness predictors: trivial, pre_answering, k_precision, llm_judge (and nli alongside).
The LLM here is a stand-in (these tests are about the predictors' logic); every predictor runs end to
end on SmolLM2-135M in tests/test_awf_compose.py::test_every_predictor_end_to_end_on_smollm."""

from __future__ import annotations

import math

import pytest
from doubles import FailingLLM, ScriptedLLM

from verirag.awf.predictors import KPrecisionPredictor, LLMJudgePredictor, PreAnsweringPredictor, TrivialPredictor
from verirag.awf.registry import get, names
from verirag.awf.trace import Trace
from verirag.errors import BackendError, CapabilityError
from verirag.types import Passage

PASSAGES = [
    Passage("a", "The Harbour Ferry crosses the bay in 25 minutes.", title="Ferry"),
    Passage("b", "Puffins nest on the cliffs in April."),
]
QUESTION = "How long does the Harbour Ferry take to cross the bay?"


def test_all_registered():
    assert {"trivial", "pre_answering", "k_precision", "llm_judge", "nli"} <= set(names("predictor"))
    assert get("predictor", "pre_answering") is PreAnsweringPredictor


def test_trivial_is_always_one():
    assert TrivialPredictor().verify(QUESTION, "anything", PASSAGES).score == 1.0


def test_k_precision_scores_overlap():
    p = KPrecisionPredictor()
    v = p.verify(QUESTION, "25 minutes", PASSAGES)
    assert v.score == 1.0 and v.best == 0 and v.per_passage[1] == 0.0
    assert p.verify(QUESTION, "two hours", PASSAGES).score == 0.0
    assert math.isnan(p.verify(QUESTION, "  ", PASSAGES).score)


@pytest.mark.parametrize(
    "lps, expected",
    [
        ({"Yes": math.log(0.6), "I": math.log(0.2)}, 0.75),
        ({" yes": math.log(0.3), "No": math.log(0.1), "I": math.log(0.2)}, 0.5),  # "No" counts as no
        ({"I": math.log(0.9)}, 0.0),
    ],
)
def test_pre_answering_reads_branch_tokens(lps, expected):
    v = PreAnsweringPredictor(ScriptedLLM(next_token=lps)).verify(QUESTION, "", PASSAGES)
    assert v.ok and v.score == pytest.approx(expected)


def test_pre_answering_prompt_is_nomiracl_style():
    llm = ScriptedLLM(next_token={"Yes": 0.0})
    PreAnsweringPredictor(llm, layout="paper").verify(QUESTION, "", PASSAGES)
    text = llm.prompts[0][-1]["content"]
    assert '"Yes, answer is present" or "I don\'t know"' in text
    assert "[1] Ferry: The Harbour Ferry" in text and "[2] Puffins" in text and QUESTION in text


def test_pre_answering_without_branch_tokens_is_nan_with_error():
    v = PreAnsweringPredictor(ScriptedLLM(next_token={"Maybe": -0.1})).verify(QUESTION, "", PASSAGES)
    assert math.isnan(v.score) and "neither yes nor i/no among" in v.error


def test_pre_answering_is_memoised_independently_of_the_answer():
    llm = ScriptedLLM(next_token={"Yes": math.log(0.8), "I": math.log(0.2)})
    p = PreAnsweringPredictor(llm)
    trace = Trace(QUESTION, PASSAGES)
    from verirag.awf.compose import ComposedMethod
    from verirag.awf.generators import NoContextGenerator, VanillaGenerator

    a = ComposedMethod(VanillaGenerator(llm), p).verify_key(trace, "25 minutes")
    b = ComposedMethod(NoContextGenerator(llm), p).verify_key(trace, "another answer")
    assert a == b and a.startswith("predictor:pre_answering|")


def test_llm_judge_score_and_prompt():
    llm = ScriptedLLM(next_token={"Yes": math.log(0.3), "No": math.log(0.1)})
    v = LLMJudgePredictor(llm, layout="paper").verify(QUESTION, "25 minutes", PASSAGES)
    assert v.score == pytest.approx(0.75)
    user = llm.prompts[0][-1]["content"]
    assert "Answer: 25 minutes" in user and "[1]" in user and "[2]" in user
    assert math.isnan(LLMJudgePredictor(ScriptedLLM(next_token={"Hmm": 0.0})).verify(QUESTION, "x", PASSAGES).score)
    assert "empty answer" in LLMJudgePredictor(llm).verify(QUESTION, "", PASSAGES).error


def test_backend_failures_are_recorded():
    broken = FailingLLM(BackendError("prompt too long"))
    for p in (PreAnsweringPredictor(broken), LLMJudgePredictor(broken)):
        v = p.verify(QUESTION, "25 minutes", PASSAGES)
        assert math.isnan(v.score) and "prompt too long" in v.error


def test_missing_capability_fails_at_construction():
    for cls in (PreAnsweringPredictor, LLMJudgePredictor):
        with pytest.raises(CapabilityError):
            cls(ScriptedLLM())
    TrivialPredictor(ScriptedLLM()), KPrecisionPredictor(ScriptedLLM())  # need nothing
