"""InstructRAG, Intrinsic Abstention, CoT few-shot Hybrid and Dual Generation end to end with the
real SmolLM2-135M, plus parse-failure bookkeeping and trace memoisation with stand-in LLMs."""

from __future__ import annotations

import pytest
from doubles import CountingLLM, ScriptedLLM

from verirag.awf import registry
from verirag.awf.generators import Answer, InstructRAGGenerator
from verirag.awf.generators.instructrag import FAMILIES
from verirag.awf.methods import CoTHybrid, DualGeneration, IntrinsicAbstention, MethodOutput
from verirag.awf.trace import Trace
from verirag.errors import CapabilityError, InputError
from verirag.llm.base import LOGPROBS, SCORE
from verirag.types import Passage

QUESTION = "What is the capital of Peru?"
PASSAGES = [
    Passage(
        id="p1",
        title="Peru",
        text="Peru is a country in South America. Its capital and largest city is Lima, on the Pacific coast.",
    ),
    Passage(id="p2", text="The Andes mountains run through the east of Peru."),
]
SMALL = 32  # max_tokens in model tests: keeps the suite fast on a loaded machine


def canned(text="", *, logprobs=(-1.0, -2.0), capabilities=(SCORE,), finish_reason="stop") -> ScriptedLLM:
    """A stand-in LLM: generate returns `text`; score gives each word logprobs[0] with the passages in
    the prompt, logprobs[1] without."""
    ctx, no_ctx = logprobs
    return ScriptedLLM(
        text,
        score=lambda prompt, continuation: ctx if "Lima" in str(prompt) else no_ctx,
        capabilities=capabilities,
        finish_reason=finish_reason,
        name="canned",
        backend="canned",
    )


def _check_contract(out: MethodOutput, hard: bool):
    assert isinstance(out, MethodOutput)
    assert isinstance(out.answer, str)
    assert 0.0 <= out.score <= 1.0
    if hard:
        assert out.hard and out.score in (0.0, 1.0)
    if out.error:
        assert out.score == 0.0


# --- registry and prompts ---------------------------------------------------------------------


def test_registered():
    assert registry.get("generator", "instructrag") is InstructRAGGenerator
    assert registry.get("method", "intrinsic") is IntrinsicAbstention
    assert registry.get("method", "cot_hybrid") is CoTHybrid
    assert registry.get("method", "dual_generation") is DualGeneration


@pytest.mark.parametrize("family", FAMILIES)
def test_fewshot_prompts_per_family(family):
    llm = canned("Response: Lima")
    for obj, abstain_expected in (
        (InstructRAGGenerator(llm, family=family, layout="paper"), False),
        (CoTHybrid(llm, family=family, layout="paper"), True),
    ):
        [msg] = obj.messages(QUESTION, PASSAGES)
        content = msg["content"]
        assert msg["role"] == "user"
        assert content.count("Example ") == 2 and content.count("Response: ") >= 2
        assert "Document 1: Peru. Peru is a country" in content
        assert "Document 2: The Andes" in content
        assert content.rstrip().endswith(QUESTION)
        assert ("Response: __DONT_KNOW__" in content) == abstain_expected


def test_unknown_family():
    with pytest.raises(InputError, match="family"):
        InstructRAGGenerator(canned(), family="legal")
    with pytest.raises(InputError, match="family"):
        CoTHybrid(canned(), family="legal")


# --- stand-in LLM: parsing and bookkeeping ------------------------------------------------------


def test_instructrag_parses_final_answer():
    ans = InstructRAGGenerator(canned("Document 1 says Lima.\n**Response:** Lima")).answer(QUESTION, PASSAGES)
    assert ans.text == "Lima" and ans.error is None
    assert ans.meta["parse_ok"] and ans.meta["raw"].startswith("Document 1")


def test_instructrag_parse_failure_keeps_text():
    reply = "Document 1 says Lima.\nThe capital is Lima"
    ans = InstructRAGGenerator(canned(reply), strict_format=True).answer(QUESTION, PASSAGES)
    assert ans.error and "Response" in ans.error
    assert ans.text == "The capital is Lima"
    assert ans.meta["parse_ok"] is False and "Lima" in ans.meta["raw"]
    # by default a reply that ended on its own is a direct answer, marked but not an error
    ans = InstructRAGGenerator(canned(reply)).answer(QUESTION, PASSAGES)
    assert ans.error is None and ans.text == "The capital is Lima"
    assert ans.meta["parse_ok"] is False and "direct answer" in ans.meta["parse_warning"]


def test_instructrag_reply_cut_by_max_tokens_is_an_error():
    ans = InstructRAGGenerator(canned("Document 1 says", finish_reason="length")).answer(QUESTION, PASSAGES)
    assert ans.error and "max_tokens" in ans.error


@pytest.mark.parametrize(
    "text, score, abstained",
    [
        ("Lima", 1.0, False),
        ("__DONT_KNOW__", 0.0, True),
        ("DONT KNOW", 0.0, True),
        ("dont_know.", 0.0, True),
    ],
)
def test_intrinsic_canned(text, score, abstained):
    out = IntrinsicAbstention(canned(text)).run(Trace(QUESTION, PASSAGES))
    _check_contract(out, hard=True)
    assert out.score == score and out.details["abstained"] is abstained and out.error is None


def test_intrinsic_broad_abstention_option():
    text = "The context does not provide this information."
    assert IntrinsicAbstention(canned(text)).run(Trace(QUESTION, PASSAGES)).score == 1.0
    out = IntrinsicAbstention(canned(text), broad_abstention=True).run(Trace(QUESTION, PASSAGES))
    assert out.score == 0.0


def test_intrinsic_empty_is_error():
    out = IntrinsicAbstention(canned("   ")).run(Trace(QUESTION, PASSAGES))
    _check_contract(out, hard=True)
    assert out.error and out.score == 0.0 and out.answer == ""


@pytest.mark.parametrize(
    "text, score, ok",
    [
        ("Document 1 names Lima.\nResponse: Lima", 1.0, True),
        ("No document helps.\nResponse: __DONT_KNOW__", 0.0, True),
        ("Maybe __DONT_KNOW__ but document 1 says Lima.\nResponse: Lima", 1.0, True),
        ("Document 1 names Lima, so the answer is Lima", 0.0, False),  # parse failure
        ("", 0.0, False),
    ],
)
def test_cot_hybrid_canned_strict(text, score, ok):
    out = CoTHybrid(canned(text), strict_format=True).run(Trace(QUESTION, PASSAGES))
    _check_contract(out, hard=True)
    assert out.score == score and out.details["parse_ok"] is ok
    assert (out.error is None) == ok
    if not ok and text:
        assert out.answer == text  # the last line is kept, not dropped


def test_cot_hybrid_direct_answer_is_kept_with_a_warning():
    out = CoTHybrid(canned("Lima is the capital")).run(Trace(QUESTION, PASSAGES))
    assert (out.score, out.error, out.details["parse_ok"]) == (1.0, None, False)
    assert out.details["parse_warning"]
    out = CoTHybrid(canned("__DONT_KNOW__")).run(Trace(QUESTION, PASSAGES))
    assert (out.score, out.error) == (0.0, None)


def test_parse_failures_counted_in_denominator():
    # a batch mixing parsable and unparsable replies: every item has an output, failures score 0
    texts = ["Response: Lima", "Lima, I think", "Response: __DONT_KNOW__", "garbled"]
    outs = [CoTHybrid(canned(t), strict_format=True).run(Trace(QUESTION, PASSAGES)) for t in texts]
    assert len(outs) == 4
    assert [o.score for o in outs] == [1.0, 0.0, 0.0, 0.0]
    assert sum(o.error is not None for o in outs) == 2


def test_dual_generation_decision_and_memo():
    llm = CountingLLM(canned("Lima", logprobs=(-0.5, -2.5)))
    method = DualGeneration(llm)
    trace = Trace(QUESTION, PASSAGES)
    out = method.run(trace)
    _check_contract(out, hard=False)
    assert out.details["decision"] == pytest.approx(2.0)  # log ppl_noctx - log ppl_ctx
    assert out.score > 0.5
    assert out.details["ppl_ctx"] < out.details["ppl_noctx"]
    assert llm.calls == {"generate": 1, "score": 2}
    assert method.run(trace).score == out.score
    assert llm.calls == {"generate": 1, "score": 2}
    heads = {k.split("|")[0] for k in trace.values}
    assert heads == {"generator:vanilla", "method:dual_generation.score_ctx", "method:dual_generation.score_noctx"}
    # the answer relies less on the passages: the score is lower (monotone mapping)
    low = DualGeneration(canned("Lima", logprobs=(-2.5, -0.5))).run(Trace(QUESTION, PASSAGES))
    assert low.details["decision"] == pytest.approx(-2.0) and low.score < 0.5


def test_dual_generation_needs_score():
    with pytest.raises(CapabilityError):
        DualGeneration(canned("Lima", capabilities=(LOGPROBS,)))


def test_dual_generation_empty_answer_is_error():
    out = DualGeneration(canned("  ")).run(Trace(QUESTION, PASSAGES))
    _check_contract(out, hard=False)
    assert out.error and out.score == 0.0


def test_dual_generation_shares_vanilla_answer():
    # an answer already in the trace (e.g. from a vanilla+PREDICTOR composition) is reused
    llm = CountingLLM(canned("should not be generated"))
    trace = Trace(QUESTION, PASSAGES)
    method = DualGeneration(llm)
    trace.get(method.generator.quantity_key(trace), lambda: Answer(text="Lima"))
    out = method.run(trace)
    assert out.answer == "Lima" and llm.calls["generate"] == 0


# --- the real SmolLM2-135M ----------------------------------------------------------------------


@pytest.mark.slow
def test_instructrag_smollm(smollm):
    ans = InstructRAGGenerator(smollm, max_tokens=SMALL).answer(QUESTION, PASSAGES)
    assert isinstance(ans.text, str) and isinstance(ans.meta["raw"], str)
    assert ans.meta["parse_ok"] or ans.error or ans.meta["parse_warning"]


@pytest.mark.slow
@pytest.mark.parametrize("name, hard", [("intrinsic", True), ("cot_hybrid", True), ("dual_generation", False)])
def test_methods_smollm(smollm, name, hard):
    llm = CountingLLM(smollm)
    method = registry.create("method", name, llm, max_tokens=SMALL)
    trace = Trace(QUESTION, PASSAGES)
    out = method.run(trace)
    _check_contract(out, hard=hard)
    first = dict(llm.calls)
    assert first["generate"] == 1
    again = method.run(trace)  # a rerun on the same trace makes no backend call
    assert llm.calls == first
    assert (again.answer, again.score) == (out.answer, out.score)
    if name == "dual_generation":
        assert first["score"] == 2
        assert out.error is None, out.error  # SmolLM2 answers the question (deterministically): both scores read
        d = out.details
        assert d["ppl_ctx"] > 0 and d["ppl_noctx"] > 0
        assert isinstance(d["decision"], float)
