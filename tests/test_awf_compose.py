"""Composition GEN+PRED, build_method, and the section-6 policies with threshold targets."""

from __future__ import annotations

import math

import numpy as np
import pytest
from doubles import CountingLLM, ScriptedLLM, yes_no

from verirag.awf.compose import ComposedMethod, build_method, build_predictor
from verirag.awf.methods.base import MethodOutput
from verirag.awf.policies import (
    ABSTAINED,
    ABSTENTION_TEXT,
    ANSWERED,
    ESCALATED,
    FALLBACK,
    AbstainPolicy,
    EscalatePolicy,
    NoRagFallbackPolicy,
    make_policy,
)
from verirag.awf.registry import register
from verirag.awf.spec import method_names
from verirag.awf.trace import Trace
from verirag.errors import BackendError, InputError, NotFittedError
from verirag.learned.threshold import ThresholdController
from verirag.types import Passage

PASSAGES = [
    Passage("a", "The Harbour Ferry crosses the bay in 25 minutes.", title="Ferry"),
    Passage("b", "Puffins nest on the cliffs in April."),
]
QUESTION = "How long does the Harbour Ferry take to cross the bay?"
PREDICTORS = ("trivial", "pre_answering", "nli", "k_precision", "llm_judge")


def standin(text="25 minutes", p_yes=0.8, name="standin", next_token=None) -> ScriptedLLM:
    """Answers `text` (an Exception is raised); judges Yes with `p_yes` ("I", pre_answering's no, as No)."""
    next_token = next_token or {**yes_no(p_yes), "I": math.log(1 - p_yes)}
    return ScriptedLLM(text, next_token=next_token, name=name, backend="standin", context_window=2048)


def run_all(llm):
    trace = Trace(QUESTION, PASSAGES)
    methods = [build_method(f"vanilla+{p}", llm, max_tokens=24) for p in PREDICTORS]
    outs = {m.registry_name: m.run(trace) for m in methods}
    outs["vanilla"] = build_method("vanilla", llm, max_tokens=24).run(trace)
    return trace, outs


def check_contract(out: MethodOutput):
    assert isinstance(out.answer, str) and 0.0 <= out.score <= 1.0
    if out.hard:
        assert out.score in (0.0, 1.0)


def test_all_predictors_cost_one_generation():
    llm = CountingLLM(standin())
    trace, outs = run_all(llm)
    assert llm.calls["generate"] == 1
    # pre_answering 1 + llm_judge 1 + nli one per passage (short passages: one chunk each)
    assert llm.calls["next_token"] == 1 + 1 + len(PASSAGES)
    assert sum(k.startswith("generator:vanilla|") for k in trace.computed) == 1
    assert {o.answer for o in outs.values()} == {"25 minutes"}
    assert outs["vanilla"].score == 1.0 and outs["vanilla+trivial"].hard
    assert outs["vanilla+k_precision"].score == 1.0
    assert outs["vanilla+nli"].score == pytest.approx(0.8)
    assert outs["vanilla+nli"].details["best"] == 0
    for o in outs.values():
        check_contract(o)
        assert o.error is None


def test_pre_answering_shared_across_generators():
    llm = CountingLLM(standin())
    trace = Trace(QUESTION, PASSAGES)
    for gen in ("vanilla", "no_context"):
        build_method(f"{gen}+pre_answering", llm).run(trace)
    assert llm.calls == {"generate": 2, "next_token": 1}
    assert sum(k.startswith("predictor:pre_answering|") for k in trace.values) == 1


def test_generator_errors_give_score_zero_with_error():
    for text in ("", BackendError("backend down")):
        out = build_method("vanilla+llm_judge", standin(text=text)).run(Trace(QUESTION, PASSAGES))
        assert out.score == 0.0 and out.error
    out = build_method("vanilla", standin(text="")).run(Trace(QUESTION, PASSAGES))
    assert out.score == 0.0 and "empty" in out.error


def test_predictor_nan_becomes_zero_with_error():
    mute = standin(next_token={"Hmm": 0.0})
    out = build_method("vanilla+llm_judge", mute).run(Trace(QUESTION, PASSAGES))
    assert out.score == 0.0 and "among the next-token candidates" in out.error and out.answer == "25 minutes"


def test_build_method_names_and_errors():
    names = method_names()
    assert {"vanilla", "vanilla+nli", "no_context+pre_answering"} <= set(names)
    with pytest.raises(InputError, match="not a generator"):
        build_method("nonsense+nli", standin())
    with pytest.raises(InputError, match="unknown predictor"):
        build_method("vanilla+nonsense", standin())
    m = build_method("vanilla+nli", standin(), judge_llm=standin(name="judge"))
    assert isinstance(m, ComposedMethod) and m.predictor.entailment.llm.model_id == "judge"
    assert build_method("vanilla+llm_judge", standin(), judge_llm=standin(name="j")).predictor.llm.model_id == "j"


@pytest.mark.parametrize("name", ["llm_judge", "self_check", "pre_answering", "nli", "cascade"])
def test_a_predictor_that_judges_with_an_llm_refuses_none(name):
    # an InputError, not an AttributeError: a stack built to verify strings sets such a part aside
    with pytest.raises(InputError, match="LLM"):
        build_predictor(name, None)


def test_predictors_that_need_no_llm_take_none():
    assert build_predictor("k_precision", None).verify("q", "a b", PASSAGES) is not None
    assert build_predictor("nli", None, judge_llm=standin(name="judge")).entailment.llm.model_id == "judge"


def test_build_method_finds_unified_methods_at_call_time():
    from verirag.awf.methods.base import AwFMethod
    from verirag.awf.registry import _REGISTRY

    @register("method", "_test_unified")
    class Unified(AwFMethod):
        hard = True

        def __init__(self, llm, *, max_tokens: int = 96):  # options are declared, not **kw
            self.llm, self.kw = llm, {"max_tokens": max_tokens}

        def run(self, trace):
            return MethodOutput(answer="x", score=1.0, hard=True)

    try:
        m = build_method("_test_unified", standin(), max_tokens=7)
        assert isinstance(m, Unified) and m.kw == {"max_tokens": 7} and m.options == {"max_tokens": 7}
        assert "_test_unified" in method_names()
    finally:
        _REGISTRY["method"].pop("_test_unified")


# --------------------------------------------------------------------------- threshold targets
def simulate(n, rng):
    """Scores whose correctness probability grows with the score: P(correct | s) = s."""
    s = rng.uniform(0, 1, n)
    return s, (rng.uniform(0, 1, n) < s).astype(int)


def test_fixed_threshold():
    t = ThresholdController(value=0.4)
    assert t.threshold_ == 0.4 and t.fit([0.1, 0.9]) is t and float(t) == 0.4


def test_target_precision_met_on_held_out_data():
    rng = np.random.default_rng(0)
    met = 0
    for _ in range(20):
        t = ThresholdController(precision=0.8, delta=0.1).fit(*simulate(1000, rng))
        assert t.certified_ and 0.6 <= t.threshold_ < 1.0  # the exact threshold is 0.6 (conservative)
        s, y = simulate(20000, rng)
        met += y[s >= t.threshold_].mean() >= 0.8
    assert met >= 18  # guaranteed with probability >= 0.9 per run


def test_target_precision_unreachable_acts_on_everything():
    t = ThresholdController(precision=0.9).fit([0.5] * 20, [0, 1] * 10)
    assert not t.certified_ and not t.certified_ and t.threshold_ is None
    assert t.decide(1.0) == "act"


def test_target_precision_needs_labels():
    with pytest.raises(ValueError, match="labels"):
        ThresholdController(precision=0.8).fit([0.5, 0.6])


def test_action_rate_gives_the_right_share():
    rng = np.random.default_rng(1)
    s = rng.uniform(0, 1, 1000)
    t = ThresholdController(action_rate=0.2).fit(s)
    assert (s < t.threshold_).mean() == pytest.approx(0.2, abs=0.001) and t.fit_action_rate_ <= 0.2
    held = rng.uniform(0, 1, 50000)
    assert (held < t.threshold_).mean() == pytest.approx(0.2, abs=0.03)
    # ties are answered, NaN always acts and uses the budget
    assert ThresholdController(action_rate=0.5).fit([0.3, 0.3, 0.3, 0.9]).fit_action_rate_ == 0.0
    t2 = ThresholdController(action_rate=0.5).fit([math.nan, 0.1, 0.2, 0.3])
    assert t2.threshold_ == 0.2 and t2.fit_action_rate_ == 0.5
    assert ThresholdController(action_rate=0.0).fit([0.2, 0.5]).fit_action_rate_ == 0.0


def test_target_validation():
    with pytest.raises(ValueError):
        ThresholdController(value=0.5, precision=0.9)
    with pytest.raises(NotFittedError, match="not fitted"):
        float(ThresholdController(action_rate=0.2))


# --------------------------------------------------------------------------- policies
def out(answer="25 minutes", score=0.3, error=None):
    return MethodOutput(answer=answer, score=score, error=error)


def test_abstain_policy():
    tr = Trace(QUESTION, PASSAGES)
    assert AbstainPolicy().apply(tr, out(score=0.9), 0.5).action == ANSWERED
    d = AbstainPolicy().apply(tr, out(score=0.3), ThresholdController(value=0.5))
    assert d.action == ABSTAINED and d.final_answer == ABSTENTION_TEXT
    assert d.details["original_answer"] == "25 minutes" and d.details["threshold"] == 0.5
    assert AbstainPolicy().apply(tr, out(answer="", score=0.0, error="empty"), 0.0).action == ABSTAINED


def test_no_rag_fallback_uses_the_trace():
    llm = CountingLLM(standin(text="half an hour"))
    pol, tr = NoRagFallbackPolicy(llm), Trace(QUESTION, PASSAGES)
    assert pol.apply(tr, out(score=0.9), 0.5).final_answer == "25 minutes" and llm.calls["generate"] == 0
    d = pol.apply(tr, out(score=0.1), 0.5)
    assert (d.action, d.final_answer, d.details["second_answer"]) == (FALLBACK, "half an hour", "half an hour")
    pol.apply(tr, out(score=0.1), 0.5)
    assert llm.calls["generate"] == 1 and any(k.startswith("generator:no_context|") for k in tr.values)


def test_escalate_policy_with_a_second_model():
    small, large = standin(text="25 minutes", name="small"), CountingLLM(standin(text="25 min", name="large"))
    tr = Trace(QUESTION, PASSAGES)
    build_method("vanilla", small).run(tr)  # the small model's answer is in the trace
    d = EscalatePolicy(large).apply(tr, out(score=0.2), 0.5)
    assert d.action == ESCALATED and d.final_answer == "25 min" and large.calls["generate"] == 1
    answers = {k.split("|")[1]: v.text for k, v in tr.values.items() if k.startswith("generator:")}
    assert answers == {"small": "25 minutes", "large": "25 min"}  # no collision with the small model


def test_failed_second_answer_abstains_and_says_why():
    d = EscalatePolicy(standin(text=BackendError("endpoint down"))).apply(
        Trace(QUESTION, PASSAGES), out(score=0.1), 0.5
    )
    assert d.action == ABSTAINED and "endpoint down" in d.details["error"]
    d = NoRagFallbackPolicy(standin(text="")).apply(Trace(QUESTION, PASSAGES), out(score=0.1), 0.5)
    assert d.action == ABSTAINED and "escalate" not in d.details["error"]


def test_make_policy_and_errors_never_answer():
    assert isinstance(make_policy("abstain", None), AbstainPolicy)
    assert isinstance(make_policy("no-rag", standin(text="x")), NoRagFallbackPolicy)
    with pytest.raises(InputError, match="second model"):
        make_policy("escalate", standin(text="x"))
    with pytest.raises(InputError, match="unknown fallback"):
        make_policy("pray", None)
    failed = MethodOutput(answer="25 minutes", score=0.0, error="predictor failed")
    assert AbstainPolicy().apply(Trace(QUESTION, PASSAGES), failed, 0.0).action == ABSTAINED


# --------------------------------------------------------------------------- real model
@pytest.mark.slow
def test_every_predictor_end_to_end_on_smollm(smollm):
    llm = CountingLLM(smollm)
    _trace, outs = run_all(llm)
    assert llm.calls["generate"] == 1
    assert set(outs) == {f"vanilla+{p}" for p in PREDICTORS} | {"vanilla"}
    answer = outs["vanilla"].answer
    for name, o in outs.items():
        check_contract(o)
        assert o.answer == answer, name
        assert o.error is None, (name, o.error)  # the real model gives every branch token
    assert outs["vanilla+trivial"].score == 1.0
