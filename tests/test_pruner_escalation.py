"""The escalate fallback after pruning (issue 37): an answer over pruned passages that is judged
unsupported is answered again by the larger model over the passages whole, since the pruner may
have dropped what the answer needed. The models are stand-ins that record their prompts (the test
is about which passages each prompt holds); the pruner is the shipped one."""

from __future__ import annotations

import json
import math

import pytest
from doubles import ScriptedLLM

from verirag.awf.pipeline import Pipeline, PipelineConfig
from verirag.llm.base import EXACT_NEXT_TOKEN, LOGPROBS, NEXT_TOKEN
from verirag.retrieval import Index
from verirag.types import Passage

QUESTION = "When was the lighthouse at Cape Arrow built?"
ANSWERING = "The lighthouse at Cape Arrow was built in 1874 by the harbour board."
UNRELATED = "The bakery on Arrow Street sells rye bread and apple cakes."  # retrieved, then dropped
PASSAGES = [Passage("a", f"{ANSWERING} It stands on the northern cliff.", "Cape Arrow"), Passage("b", UNRELATED)]


@pytest.fixture(scope="module")
def shipped_pruner():
    from verirag.errors import ModelNotFoundError
    from verirag.learned.pruner import ContextPruner
    from verirag.learned.shipped import shipped_pruner_dir

    try:
        return ContextPruner.load(shipped_pruner_dir())
    except ModelNotFoundError as e:
        pytest.skip(f"no shipped pruner ({e})")


def pipeline(monkeypatch, pruner, p_yes: float, *, prune: bool):
    """(pipeline, small model, larger model): the small one answers and judges its answer
    supported with probability `p_yes`; below 0.5 the larger one answers again."""
    small = ScriptedLLM(
        "in 1874",
        next_token={"Yes": math.log(p_yes), "No": math.log(1 - p_yes)},
        name="small",
        capabilities=(LOGPROBS, NEXT_TOKEN, EXACT_NEXT_TOKEN),
    )
    large = ScriptedLLM("1874", name="large")
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: {"small": small, "large": large}[spec])
    config = PipelineConfig(
        model="small", method="vanilla+nli", k=2, fallback="escalate", escalate_model="large", prune=prune
    )
    p = Pipeline(config, index=Index.build(PASSAGES, kind="bm25"))
    p._pruner = pruner  # the shipped pruner, loaded once for the module
    return p, small, large


def answer_prompts(llm: ScriptedLLM) -> list[str]:
    return [json.dumps(r.prompt) for r in llm.requests if r.op == "generate"]


def test_the_escalation_reads_what_the_pruner_dropped(monkeypatch, shipped_pruner):
    p, small, large = pipeline(monkeypatch, shipped_pruner, 0.1, prune=True)
    r = p.ask(QUESTION)
    assert r.action == "escalated" and r.answer == "1874"
    [first], [second] = answer_prompts(small), answer_prompts(large)
    dropped = [s for q in r.stages["prune"]["passages"] for i, s in enumerate(q["sentences"]) if i not in q["kept"]]
    assert UNRELATED in dropped
    for sentence in dropped:  # the first answer never read them; the escalation read them all
        assert sentence not in first and sentence in second
    assert ANSWERING in first and ANSWERING in second
    assert r.stages["prune"]["second_answer"] == {"action": "escalated", "read_whole": ["a", "b"]}
    assert [e.id for e in r.evidence] == ["a"]  # what the first answer and its verification read
    assert r.usage["requests"]["generate"] == 2  # the escalation's request is in the answer's cost


def test_a_supported_answer_over_pruned_passages_is_not_escalated(monkeypatch, shipped_pruner):
    p, _small, large = pipeline(monkeypatch, shipped_pruner, 0.9, prune=True)
    r = p.ask(QUESTION)
    assert r.action == "answered" and "second_answer" not in r.stages["prune"] and not large.requests


def test_without_pruning_the_escalation_reads_what_the_first_answer_read(monkeypatch, shipped_pruner):
    p, small, large = pipeline(monkeypatch, shipped_pruner, 0.1, prune=False)
    r = p.ask(QUESTION)
    assert r.action == "escalated" and r.stages is None
    assert answer_prompts(large) == answer_prompts(small)  # the same prompt: the same passages
    assert UNRELATED in answer_prompts(small)[0]
