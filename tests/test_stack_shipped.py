"""The stacked verifier shipped in the package (`make stack`: the shipped verifier's score beside the
default model's token log-probabilities, fitted on the distillation's answers): `vanilla+stacked`
reads it when no stack is named, it belongs to the shipped verifier, and another model is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from verirag.awf.predictors.verifier import DEFAULT_SOFTMIN
from verirag.errors import InputError
from verirag.learned import stack as stack_module
from verirag.learned.stack import StackedVerifier, shipped_stack_path


def test_the_shipped_stack_belongs_to_the_shipped_verifier():
    """A verifier retrained without `make stack` would leave a stack whose verifier feature means
    something else: the stacked predictor refuses it at build time, so CI must catch it first."""
    from verirag.awf.compose import build_predictor

    stack = StackedVerifier.load(shipped_stack_path())
    assert "verifier" in stack.features and "logprob_mean" in stack.features
    source = stack.sources["verifier"]
    assert source["digest"] == build_predictor(source["predictor"], None, options=source.get("options") or {}).digest


def test_the_default_names_the_model_the_shipped_stack_was_fitted_for():
    from verirag.awf.defaults import STACK_MODEL

    assert StackedVerifier.load(shipped_stack_path()).provenance["cv"]["model"] == STACK_MODEL


@pytest.mark.slow
def test_another_model_is_refused_by_the_shipped_stack(smollm):
    from verirag.awf.compose import build_predictor

    with pytest.raises(InputError, match="fitted for model"):
        build_predictor("stacked", smollm)


def test_an_installation_without_the_stack_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(stack_module, "SHIPPED_STACK", tmp_path / "stack.json")
    with pytest.raises(InputError, match="verirag train stack"):
        shipped_stack_path()


# ---- the fallback: where the stack cannot judge, a named predictor does, and says so ----------------
CANDIDATES = Path(__file__).resolve().parents[1] / "data" / "verifier" / "candidates"
NO_JUDGE_STACK = str(CANDIDATES / "stack-no-judge" / "stack.json")  # the stack shipped before llm_judge joined it
QUESTION = "Who designed the lighthouse on Skarvoy?"
PASSAGES = ["The lighthouse on Skarvoy was designed by Maren Solberg in 1899.", "The ferry runs twice a day."]


@pytest.fixture
def warm_shipped(monkeypatch):
    """The verifier shipped with the earlier stacks (`warm`) as the shipped one: the committed candidate
    stacks name the shipped verifier as it was then, and load beside it (and only beside it)."""
    from verirag.learned.shipped import VERIFIER_ENV

    monkeypatch.setenv(VERIFIER_ENV, str(CANDIDATES / "warm"))


def test_an_earlier_stack_is_refused_beside_todays_verifier_and_loads_beside_its_own(monkeypatch):
    from verirag.awf.compose import build_predictor
    from verirag.learned.shipped import VERIFIER_ENV

    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    with pytest.raises(InputError, match="identity 6dc0679461ec; built here it is"):
        build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK})
    monkeypatch.setenv(VERIFIER_ENV, str(CANDIDATES / "warm"))
    assert build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK}).model is not None


def _passages():
    from verirag.types import Passage

    return [Passage(f"p{i}", t) for i, t in enumerate(PASSAGES)]


def test_an_answer_without_logprobs_is_judged_by_the_fallback_alone_and_says_so(warm_shipped, tmp_path):
    import json

    from verirag.awf.compose import build_predictor

    verifier = build_predictor("verifier", None)
    # a stack that reads no LLM judge, so it is built here without an LLM
    stacked = build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK, "fallback": "verifier"})
    # the stack reads the rule it was fitted on (the plain minimum), the fallback today's: one network
    part, fallback = stacked.parts["verifier"], stacked.fallback_part
    assert part.model.softmin == 0.0 and fallback.model.softmin == DEFAULT_SOFTMIN
    assert part.model.adapter_sha256_ == fallback.model.adapter_sha256_
    today = json.loads(Path(NO_JUDGE_STACK).read_text())  # a stack fitted on today's default verifier
    today["settings"]["sources"]["verifier"].update(options={}, digest=verifier.digest)
    (tmp_path / "today.json").write_text(json.dumps(today))
    same = build_predictor("stacked", None, options={"stack": str(tmp_path / "today.json"), "fallback": "verifier"})
    assert same.parts["verifier"] is same.fallback_part  # the same identity: one instance serves both
    alone = verifier.verify(QUESTION, "Maren Solberg designed it.", _passages())
    v = stacked.verify(QUESTION, "Maren Solberg designed it.", _passages())
    assert v.ok and v.score == pytest.approx(alone.score) and v.best == alone.best
    assert any("judged by verifier alone" in w and "logprob_min" in w for w in v.warnings)
    # without a fallback the same answer is an error that names what is missing, never a guess (a
    # stack that reads no LLM judge, so it can be built without an LLM)
    plain = build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK})
    v = plain.verify(QUESTION, "Maren Solberg designed it.", _passages())
    assert not v.ok and "logprob_min" in v.error


def test_a_stack_for_another_model_is_set_aside_for_the_fallback(tmp_path):
    import json
    import types

    from verirag.awf.compose import build_predictor

    saved = json.loads(shipped_stack_path().read_text())
    saved["fingerprints"]["model"] = "another-model"
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(saved))
    llm = types.SimpleNamespace(fingerprint="this-model")  # only its fingerprint is read before judging
    with pytest.raises(InputError, match="fitted for model 'another-model'"):
        build_predictor("stacked", llm, options={"stack": str(path)})
    stacked = build_predictor("stacked", llm, options={"stack": str(path), "fallback": "verifier"})
    assert stacked.model is None and "fitted for model" in stacked.unfit
    v = stacked.verify(QUESTION, "Maren Solberg designed it.", _passages())
    assert v.ok and any(w.startswith("judged by verifier alone: the stack does not fit") for w in v.warnings)


def test_the_stack_reads_the_language_rule_of_the_verifier_it_combines(warm_shipped):
    """A text the verifier cannot read is unverified whatever the log-probs say (issue 47, item 5)."""
    from verirag.awf.compose import build_predictor

    assert build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK}).english_only
    assert build_predictor("stacked", None, options={"fallback": "verifier"}).english_only


def test_a_stack_cannot_fall_back_on_a_stack():
    from verirag.awf.compose import build_predictor

    with pytest.raises(InputError, match="another predictor"):
        build_predictor("stacked", None, options={"fallback": "stacked"})


def test_a_stack_that_reads_llm_judge_needs_an_llm_and_falls_back_without_one():
    """A stack with an LLM judge among its features (the shipped one) built to verify
    a string, with no LLM: refused with a clear error, or set aside for its fallback, never a crash."""
    from verirag.awf.compose import build_predictor

    stack = str(shipped_stack_path())
    with pytest.raises(InputError, match="llm_judge judges with an LLM"):
        build_predictor("stacked", None, options={"stack": stack})
    stacked = build_predictor("stacked", None, options={"stack": stack, "fallback": "verifier"})
    assert stacked.model is None and "llm_judge" in stacked.unfit
    v = stacked.verify(QUESTION, "Maren Solberg designed it.", _passages())
    assert v.ok and any(w.startswith("judged by verifier alone: the stack does not fit") for w in v.warnings)


def test_a_build_listed_as_equivalent_is_judged_by_the_stack_and_its_llm_parts(tmp_path):
    """Another llama.cpp build of the same model file changes the model's fingerprint, and with it the
    identity of every part that reads the LLM (llm_judge): the stack takes both as its own only where
    an equivalence was recorded (`stack_repoint --equivalent-model`), never another model's."""
    import json
    import types

    from verirag.awf.compose import build_predictor
    from verirag_lab.train.stack_repoint import equivalent_model

    saved = json.loads(shipped_stack_path().read_text())
    other = saved["fingerprints"]["model"].split("|")[0] + "|n_batch=512|engine=ik"
    evidence = {
        "answers": 300,
        "other-default": {"estimate": 0.0, "low": -0.03},
        "alike": 271,
        "verdict_differs_alike": 4,
    }
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(equivalent_model(saved, other, evidence)))
    # what building the parts reads of an LLM (no judging here)
    llm = types.SimpleNamespace(fingerprint=other, model_id="qwen2.5-1.5b", require=lambda *what: None)
    before = build_predictor("stacked", llm, options={"fallback": "verifier"})  # the shipped stack
    assert before.model is None and "fitted for model" in before.unfit
    stacked = build_predictor("stacked", llm, options={"stack": str(path), "fallback": "verifier"})
    assert stacked.model is not None, stacked.unfit
    judge = stacked.parts["llm_judge"]
    assert judge.digest != saved["settings"]["sources"]["llm_judge"]["digest"]  # built on the other build
    third = types.SimpleNamespace(**{**vars(llm), "fingerprint": other.replace("512", "256")})
    assert build_predictor("stacked", third, options={"stack": str(path), "fallback": "verifier"}).model is None


def test_impute_judges_a_given_answer_by_the_stack_its_logprobs_at_their_training_means(warm_shipped):
    """`stacked(impute=true)`: an answer without log-probabilities is judged by the stack, not the
    fallback, each missing signal at its training mean (z = 0) and named; off, the stack's identity is
    the one runs and thresholds were keyed by before the option existed."""
    from verirag.awf.compose import build_predictor
    from verirag.metrics.faithfulness import k_precision

    plain = build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK, "fallback": "verifier"})
    imputing = build_predictor("stacked", None, options={"stack": NO_JUDGE_STACK, "impute": True})
    assert "impute" not in plain.identity()["options"] and imputing.digest != plain.digest
    answer = "Maren Solberg designed it."
    v = imputing.verify(QUESTION, answer, _passages())
    assert v.ok and not any("judged by verifier alone" in w for w in v.warnings)
    assert {w.split(" ")[0] for w in v.warnings if "imputed (the training mean)" in w} == {
        "logprob_min",
        "logprob_mean",
        "logprob_sum",
    }
    model = imputing.model
    verifier = imputing.parts["verifier"].verify(QUESTION, answer, _passages()).score
    values = {"verifier": verifier, "k_precision": k_precision(answer, PASSAGES)}
    # by hand: the standardised features, the missing ones at 0
    import numpy as np

    z = np.array(
        [(values[f] - m) / s if f in values else 0.0 for f, m, s in zip(model.features, model.mean_, model.scale_)]
    )
    assert v.score == pytest.approx(1 / (1 + np.exp(-(z @ model.coef_ + model.intercept_))))
    with pytest.raises(InputError, match="logprob_min"):
        model.score(values)  # the stack itself, asked without imputation, still refuses
    assert model.score(values, impute=True) == pytest.approx(v.score)
