"""How the pipeline records failures. The LLM here is a stand-in: these tests are about the
pipeline's bookkeeping when a model misbehaves, not about a model."""

from __future__ import annotations

import math

import pytest
from doubles import ScriptedLLM

from verirag.awf.pipeline import Pipeline, PipelineConfig
from verirag.llm.base import EXACT_NEXT_TOKEN, LOGPROBS, NEXT_TOKEN
from verirag.retrieval import Index
from verirag.types import Passage


def scripted(answers, judge) -> ScriptedLLM:
    """Answers `answers` in order; the judge's next token from `judge`."""
    return ScriptedLLM(list(answers), next_token=judge, capabilities=(LOGPROBS, NEXT_TOKEN, EXACT_NEXT_TOKEN))


def max_tokens(llm: ScriptedLLM) -> list[int]:
    """The generation length each generate request asked for."""
    return [r.options["max_tokens"] for r in llm.requests if r.op == "generate"]


def make(monkeypatch, answers, judge, **cfg):
    llm = scripted(answers, judge)
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: llm)
    index = Index.build(
        [Passage("a", "The ferry takes 25 minutes."), Passage("b", "Puffins nest in April.")], kind="bm25"
    )
    return Pipeline(PipelineConfig(model="scripted", k=2, **{"method": "vanilla+nli", **cfg}), index=index)


def test_empty_answer_is_recorded_and_abstains(monkeypatch):
    p = make(monkeypatch, [""], {"Yes": -0.1, "No": -3.0})
    r = p.ask("How long is the ferry?")
    assert r.action == "abstained" and not r.faithful
    assert "empty answer" in r.error
    assert r.score == 0.0 and r.retrieved_answer == ""


def test_judge_without_yes_or_no_is_recorded(monkeypatch):
    p = make(monkeypatch, ["25 minutes"], {"Maybe": -0.1})
    r = p.ask("How long is the ferry?")
    assert r.action == "abstained" and "could not judge" in r.error
    assert all(e.support_score is None for e in r.evidence)


def test_supported_answer_is_answered(monkeypatch):
    p = make(monkeypatch, ["25 minutes"], {"Yes": math.log(0.9), "No": math.log(0.1)})
    r = p.ask("How long is the ferry?")
    assert r.action == "answered" and r.answer == "25 minutes"
    assert r.score == pytest.approx(0.9) and r.supporting_passage.id == "a"


def test_failed_fallback_abstains_and_says_why(monkeypatch):
    p = make(monkeypatch, ["25 minutes", ""], {"Yes": math.log(0.2), "No": math.log(0.8)}, fallback="no-rag")
    r = p.ask("How long is the ferry?")
    assert r.action == "abstained" and "fallback failed" in r.error


def test_self_check_answers_and_names_the_supporting_passage(monkeypatch):
    p = make(monkeypatch, ["25 minutes"], {"Yes": math.log(0.8), "No": math.log(0.2)}, method="vanilla+self_check")
    r = p.ask("How long is the ferry?")
    assert r.method == "vanilla+self_check" and r.action == "answered"
    assert r.score == pytest.approx(0.8) and r.supporting_passage.id == "a"  # lexical attribution


def test_the_default_verifies_with_the_shipped_verifier_sentence_by_sentence(monkeypatch):
    """The default method's verifier is the trained one in the package (a real model, read from
    disk); only the generator is scripted."""
    # the default of a model the shipped stack was not fitted for (the default model's: below)
    p = make(
        monkeypatch,
        ["The ferry takes 25 minutes. Puffins nest in April."],
        {},
        method=PipelineConfig(model="scripted").method,
    )
    r = p.ask("How long is the ferry?")
    assert r.method == "vanilla+verifier" and 0.0 <= r.score <= 1.0
    assert [s.text for s in r.sentences] == ["The ferry takes 25 minutes.", "Puffins nest in April."]
    # the sentence the passage states is supported, the one it does not mention is not, and the
    # answer is as strong as its weakest sentence
    first, second = r.sentences
    assert first.supporting_passage == "a" and first.score > 0.5 > second.score
    assert r.score == pytest.approx(second.score) and r.action == "abstained"


def test_the_default_models_stack_set_aside_for_another_model_falls_back_to_the_verifier_and_says_so(monkeypatch):
    from verirag.awf.defaults import GENERATED_DEFAULT

    assert PipelineConfig().method == GENERATED_DEFAULT
    p = make(monkeypatch, ["The ferry takes 25 minutes."], {}, method=GENERATED_DEFAULT)
    r = p.ask("How long is the ferry?")
    assert r.method == "vanilla+stacked" and r.faithful and r.sentences  # the verifier's sentences
    assert any("judged by verifier alone: the stack does not fit" in w for w in r.warnings)
    # a given answer goes to the fallback directly, under its own name, with nothing to warn about
    v = p.verify("How long is the ferry?", "The ferry takes 25 minutes.", [Passage("a", "The ferry takes 25 minutes.")])
    assert v.method == "vanilla+verifier" and v.faithful and v.score == pytest.approx(r.score)
    assert not any("stack" in w for w in v.warnings)


def test_without_the_shipped_verifier_the_default_says_so_and_never_substitutes(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIRAG_VERIFIER_DIR", str(tmp_path))  # a folder with no verifier in it
    assert Pipeline.from_preset("tiny").config.method == "vanilla+verifier"
    with pytest.raises(Exception, match="no trained verifier"):
        make(monkeypatch, ["25 minutes"], {}, method="vanilla+verifier").ask("How long is the ferry?")


def test_choosing_a_judge_chooses_the_method_that_uses_it():
    assert Pipeline.from_preset("tiny").config.method == "vanilla+verifier"
    assert Pipeline.from_preset("tiny", judge="llm").config.method == "vanilla+nli"
    assert Pipeline.from_preset("tiny", judge="llm", method="instructrag+nli").config.method == "instructrag+nli"


def test_a_declined_answer_is_not_called_supported(monkeypatch):
    """A refusal may look "supported" to an in-context verifier; the pipeline acts on it instead."""
    p = make(
        monkeypatch,
        ["The context does not provide this information."],
        {"Yes": math.log(0.9), "No": math.log(0.1)},
        method="vanilla+self_check",
    )
    r = p.ask("What is the wifi password?")
    assert r.action == "abstained" and r.score == 0.0 and not r.faithful
    assert r.retrieved_answer == "The context does not provide this information."


RATIONALE = "The ferry crosses the bay; the passage gives its time.\nResponse: 25 minutes"


def test_a_method_answers_at_its_own_length_unless_the_user_sets_one(monkeypatch):
    """InstructRAG writes a rationale before its answer: the pipeline must not cut it to another
    method's length (the README's `--method instructrag+pre_answering`)."""
    p = make(
        monkeypatch,
        [RATIONALE, "ferry"],
        {"Yes": math.log(0.2), "No": math.log(0.8)},
        method="instructrag+pre_answering",
        fallback="no-rag",
    )
    r = p.ask("How long is the ferry?")
    own = p.method.generator.max_tokens
    assert own == 256 and r.retrieved_answer == "25 minutes"
    assert max_tokens(p.llm.inner) == [own, 96]  # the no-rag fallback at no_context's own length
    q = make(monkeypatch, [RATIONALE], {"Yes": 0.0}, method="instructrag+pre_answering", max_answer_tokens=300)
    q.ask("How long is the ferry?")
    assert q.method.generator.max_tokens == 300 and max_tokens(q.llm.inner) == [300]


def test_verifying_with_a_predictor_that_calls_no_llm_loads_no_llm(monkeypatch):
    """The trained verifier and k_precision judge a given answer without the generator's model:
    `verify` must not load it (a 1-2 GB model for nothing); self_check needs it, so it loads."""
    loaded = []

    def load(spec, **kw):
        loaded.append(spec)
        return scripted([], {"Yes": math.log(0.7), "No": math.log(0.3)})

    monkeypatch.setattr("verirag.awf.pipeline.load_llm", load)
    passages = [Passage("a", "The ferry takes 25 minutes."), Passage("b", "Puffins nest in April.")]
    for method in ("vanilla+verifier", "vanilla+k_precision"):
        v = Pipeline(PipelineConfig(model="not-a-model", method=method)).verify(
            "How long is the ferry?", "25 minutes", passages
        )
        assert v.method == method and v.supporting_passage.id == "a" and v.score > 0.5
    assert loaded == []
    v = Pipeline(PipelineConfig(model="scripted", method="vanilla+self_check")).verify(
        "How long is the ferry?", "25 minutes", passages
    )
    assert loaded == ["scripted"] and v.method == "vanilla+self_check" and v.score == pytest.approx(0.7)
    # a method that cannot verify a given answer is still refused by name
    with pytest.raises(Exception, match="scores only the answers it generates"):
        Pipeline(PipelineConfig(model="scripted", method="intrinsic")).verify("q?", "a", passages)
