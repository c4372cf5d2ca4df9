"""The "shared" prompt layout: every prompt that reads the passages starts with the same tokens."""

from __future__ import annotations

import pytest
from doubles import NoCallLLM  # builds prompts only: these tests are about layout, not a model's reply

from verirag.awf.compose import build_method
from verirag.awf.generators.instructrag import InstructRAGGenerator
from verirag.awf.generators.vanilla import VanillaGenerator
from verirag.awf.methods.cot_hybrid import CoTHybrid
from verirag.awf.methods.dual_generation import DualGeneration
from verirag.awf.methods.intrinsic import IntrinsicAbstention
from verirag.awf.predictors.llm_judge import LLMJudgePredictor
from verirag.awf.predictors.pre_answering import PreAnsweringPredictor
from verirag.awf.spec import MethodSpec
from verirag.errors import InputError
from verirag.prompts import LAYOUTS, load_prompt
from verirag.types import Passage

PASSAGES = [
    Passage("a", "Paris is the capital of France.", title="Paris"),
    Passage("b", "The Seine flows through {Paris}."),
    Passage("c", "France is in Europe.", title="France"),
]


def all_shared_prompts(question="Where is Paris?"):
    llm = NoCallLLM()
    return {
        "vanilla": VanillaGenerator(llm, layout="shared").messages(question, PASSAGES),
        "intrinsic": IntrinsicAbstention(llm, layout="shared").messages(question, PASSAGES),
        "instructrag": InstructRAGGenerator(llm, layout="shared").messages(question, PASSAGES),
        "instructrag_mh": InstructRAGGenerator(llm, layout="shared", family="multi_hop").messages(question, PASSAGES),
        "cot_hybrid": CoTHybrid(llm, layout="shared").messages(question, PASSAGES),
        "pre_answering": PreAnsweringPredictor(llm, layout="shared").messages(question, PASSAGES),
        "llm_judge": LLMJudgePredictor(llm, layout="shared").messages(question, "Paris is in France.", PASSAGES),
        "dual_generation": DualGeneration(llm, layout="shared").generator.messages(question, PASSAGES),
    }


def test_every_shared_prompt_starts_with_the_same_system_message_and_passages():
    prompts = all_shared_prompts()
    system = load_prompt("vanilla", "shared").system
    head = (
        "Documents:\nDocument 1: Paris. Paris is the capital of France.\n\n"
        "Document 2: The Seine flows through {Paris}.\n\nDocument 3: France. France is in Europe.\n\n"
    )
    for name, msgs in prompts.items():
        assert [m["role"] for m in msgs] == ["system", "user"], name
        assert msgs[0]["content"] == system, name
        assert msgs[1]["content"].startswith(head), name
        assert "Where is Paris?" in msgs[1]["content"][len(head) :], name


def test_shared_layout_is_the_default_and_the_paper_layout_differs():
    from verirag.prompts import DEFAULT_LAYOUT

    assert DEFAULT_LAYOUT == "shared"
    llm = NoCallLLM()
    default = VanillaGenerator(llm).messages("Where is Paris?", PASSAGES)
    assert default == VanillaGenerator(llm, layout="shared").messages("Where is Paris?", PASSAGES)
    paper = VanillaGenerator(llm, layout="paper").messages("Where is Paris?", PASSAGES)
    assert paper != default and paper[0]["content"] == load_prompt("vanilla").system
    # every component that takes a layout defaults to the same one
    import inspect

    from verirag.awf import registry

    defaults = {
        (kind, name): param.default
        for kind in ("generator", "predictor", "method")
        for name in registry.names(kind)
        if (param := inspect.signature(registry.get(kind, name).__init__).parameters.get("layout")) is not None
    }
    assert len(defaults) >= 5, defaults  # at least the components of all_shared_prompts take one
    assert set(defaults.values()) == {DEFAULT_LAYOUT}, defaults


def test_shared_templates_keep_the_papers_examples_and_reply_tokens():
    for name in ("instructrag", "cot_hybrid"):
        assert load_prompt(name, "shared").extra["examples"] == load_prompt(name).extra["examples"]
    assert (
        load_prompt("pre_answering", "shared").extra["yes_tokens"] == load_prompt("pre_answering").extra["yes_tokens"]
    )
    # prompts that read no passages (or a single premise) have no shared version
    for name in ("no_context", "self_check", "entailment_judge"):
        assert load_prompt(name, "shared") == load_prompt(name)


def test_unknown_layout_is_a_clear_error():
    assert LAYOUTS == ("paper", "shared")
    with pytest.raises(InputError, match="unknown prompt layout 'side'"):
        load_prompt("vanilla", "side")
    with pytest.raises(InputError, match="unknown prompt layout"):
        VanillaGenerator(NoCallLLM(), layout="side")


def test_layout_option_reaches_both_parts_of_a_composed_method():
    spec = MethodSpec("vanilla+llm_judge", {"layout": "shared"})
    assert spec.routed() == {"generator": {"layout": "shared"}, "predictor": {"layout": "shared"}}
    method = build_method(spec, NoCallLLM())
    assert method.generator.layout == method.predictor.layout == "shared"
    # the option is part of the method's identity (records and trace keys differ by layout); the
    # default written out is the same identity as the default left out
    assert method.digest == build_method("vanilla+llm_judge", NoCallLLM()).digest
    assert method.digest != build_method("vanilla+llm_judge", NoCallLLM(), layout="paper").digest
    # a predictor that does not take it leaves it to the generator
    assert MethodSpec("vanilla+k_precision", {"layout": "shared"}).routed() == {"generator": {"layout": "shared"}}
    assert MethodSpec("intrinsic", {"layout": "shared"}).with_defaults({"family": "multi_hop"}).options == {
        "layout": "shared"
    }


def test_shared_prompts_share_their_tokens_through_the_passages(smollm):
    """On a real tokenizer and chat template, the token prefix shared by all methods' prompts
    covers the system message and every passage (at most a token or two at the seam differs)."""
    prompts = all_shared_prompts()
    tokens = {name: smollm._tokenize_prompt(m) for name, m in prompts.items()}
    head = smollm._tokenize_prompt([prompts["vanilla"][0], {"role": "user", "content": "Documents:\n"}])
    passages_tokens = smollm.count_tokens(
        "\n\n".join(
            [
                "Document 1: Paris. Paris is the capital of France.",
                "Document 2: The Seine flows through {Paris}.",
                "Document 3: France. France is in Europe.",
            ]
        )
    )
    first = tokens["vanilla"]
    for name, t in tokens.items():
        common = next((i for i, (x, y) in enumerate(zip(first, t)) if x != y), min(len(first), len(t)))
        assert common >= len(head) - 3 + passages_tokens - 2, name
    paper = [
        smollm._tokenize_prompt(m)
        for m in (
            VanillaGenerator(NoCallLLM(), layout="paper").messages("Where is Paris?", PASSAGES),
            LLMJudgePredictor(NoCallLLM(), layout="paper").messages("Where is Paris?", "Paris is in France.", PASSAGES),
        )
    ]
    common_paper = next(i for i, (x, y) in enumerate(zip(*paper)) if x != y)
    assert common_paper < passages_tokens  # the paper's layout shares little: why "shared" exists
