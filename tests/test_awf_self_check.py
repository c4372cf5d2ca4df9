"""The self_check predictor: the generator's conversation continued by one short question."""

from __future__ import annotations

import pytest
from doubles import ScriptedLLM, yes_no

from verirag.awf.compose import build_method
from verirag.awf.spec import method_names
from verirag.awf.trace import Trace
from verirag.errors import CapabilityError, InputError
from verirag.types import Generation, Passage

PASSAGES = [
    Passage("a", "The Harbour Ferry crosses the bay in 25 minutes.", title="Ferry"),
    Passage("b", "Puffins nest on the cliffs in April."),
]
QUESTION = "How long does the Harbour Ferry take to cross the bay?"


def recording(p_yes=0.7) -> ScriptedLLM:
    """A stand-in that records what it is asked (the test is about what self_check sends)."""
    reply = Generation(text=" 25 minutes", model="standin", token_ids=[5, 6])
    return ScriptedLLM(reply, next_token=yes_no(p_yes), name="standin")


def test_it_continues_the_generators_conversation_with_the_generated_ids():
    llm = recording()
    out = build_method("vanilla+self_check", llm).run(Trace(QUESTION, PASSAGES))
    assert out.score == pytest.approx(0.7) and out.error is None and out.answer == "25 minutes"
    generated, checked = llm.prompts
    assert llm.ops == ["generate", "next_token"]
    assert checked[: len(generated)] == generated  # the same conversation, not a new prompt
    reply, follow = checked[len(generated) :]
    assert reply == {"role": "assistant", "content": " 25 minutes", "token_ids": [5, 6]}  # raw text, ids
    assert follow["role"] == "user" and "Yes or No" in follow["content"]
    assert len(follow["content"].split()) <= 15  # short: read after every answer


def test_its_value_is_keyed_by_the_generation_it_continues():
    llm, trace = recording(), Trace(QUESTION, PASSAGES)
    a = build_method("vanilla+self_check", llm).run(trace)
    b = build_method("instructrag+self_check", llm).run(trace)
    keys = [k for k in trace.computed if k.startswith("predictor:self_check")]
    assert len(keys) == 2, trace.computed  # same answer text, different conversations: two checks
    assert a.score == b.score == pytest.approx(0.7)
    build_method("vanilla+self_check", llm).run(trace)
    assert len([k for k in trace.computed if k.startswith("predictor:self_check")]) == 2  # memoised


def test_an_answer_from_elsewhere_is_checked_in_the_vanilla_conversation():
    from verirag.awf.generators.vanilla import VanillaGenerator
    from verirag.awf.predictors.self_check import SelfCheckPredictor

    llm = recording(p_yes=0.2)
    v = SelfCheckPredictor(llm).verify(QUESTION, "25 minutes", PASSAGES)
    assert v.score == pytest.approx(0.2)
    # the score names no passage; the supporting one is attributed lexically (K-Precision)
    assert v.per_passage == [1.0, 0.0] and v.best == 0
    (prompt,) = llm.prompts
    assert llm.ops == ["next_token"]
    assert prompt[:-2] == VanillaGenerator.prompt_messages(QUESTION, PASSAGES)
    assert prompt[-2] == {"role": "assistant", "content": "25 minutes"}  # no ids: read as text
    assert SelfCheckPredictor(llm).verify(QUESTION, " ", PASSAGES).error  # empty answer: recorded
    assert SelfCheckPredictor(llm).verify(QUESTION, "x", []).error  # no passages: recorded


def test_it_needs_next_token_logprobs_and_a_conversation_with_passages():
    llm = recording()
    llm.capabilities = frozenset()
    with pytest.raises(CapabilityError, match="next_token"):
        build_method("vanilla+self_check", llm)
    with pytest.raises(InputError, match="no passages"):
        build_method("no_context+self_check", recording())
    assert "vanilla+self_check" in method_names() and "no_context+self_check" not in method_names()


@pytest.mark.slow
def test_on_llama_cpp_the_check_reads_only_its_new_tokens(smollm_path):
    """Real SmolLM2: after the generation the check evaluates only the follow-up's tokens, and a
    model without reuse (which replays the answer's path from scratch) gets the same score."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    live = LlamaCppLLM(smollm_path, n_ctx=2048, reuse_prefix=True)
    cold = LlamaCppLLM(smollm_path, n_ctx=2048, reuse_prefix=False)
    try:
        trace = Trace(QUESTION, PASSAGES)
        before = live.tokens_evaluated
        first = build_method("vanilla+self_check", live, max_tokens=24).run(trace)
        assert first.error is None, first.error
        gen = next(q.value.generation for k, q in trace.quantities.items() if k.startswith("generator"))
        check_tokens = live.tokens_evaluated - before - gen.prompt_tokens - len(gen.token_ids)
        assert 0 < check_tokens < 40, check_tokens
        again = build_method("vanilla+self_check", cold, max_tokens=24).run(Trace(QUESTION, PASSAGES))
        assert again.answer == first.answer and again.score == first.score
        assert cold.prefix_stats()["tokens_reused"] == 0
    finally:
        live.close()
        cold.close()
