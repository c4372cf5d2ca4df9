"""Every AwF method on the other two backends: an OpenAI-compatible server (llama-cpp-python's own,
serving SmolLM2) and HF transformers (SmolLM2 dequantised); and a backend without logprobs is
refused at construction, not halfway through a run."""

from __future__ import annotations

import pytest

# Imported fixtures: the real llama-cpp-python server and the transformers model.
from test_llm_hf import hf_cache  # noqa: F401
from test_llm_hf import llm as hf_llm  # noqa: F401
from test_llm_openai import GREEDY, _smollm2_path, llama_server, real_with_template  # noqa: F401

from verirag.awf.compose import build_method
from verirag.awf.spec import method_names
from verirag.awf.trace import Trace
from verirag.errors import CapabilityError
from verirag.llm.base import NEXT_TOKEN, SCORE
from verirag.types import Passage

PASSAGES = [
    Passage("p1", "The Varnholt bridge was painted green in 1911.", title="Varnholt"),
    Passage("p2", "Three mills stand beside the river.", title="Mills"),
]
QUESTION = "What colour is the Varnholt bridge?"


def every_method() -> list[str]:
    # llm_judge reads the answer the same way after any generator: after vanilla it is enough.
    # lookback needs a trained classifier: tests/test_awf_lookback.py runs it on transformers;
    # calibrag a trained forecaster: tests/test_calibrag.py; verifier a trained verifier:
    # tests/test_learned_verifier.py; stacked a stack fitted on an eval run: tests/test_stack_run.py.
    return [
        m
        for m in method_names()
        if (not m.endswith("+llm_judge") or m.startswith("vanilla"))
        and not m.endswith(("+lookback", "+verifier", "+stacked"))
        and m != "calibrag"
    ]


def check_contract(llm, name: str) -> None:
    m = build_method(name, llm, max_tokens=16)
    out = m.run(Trace(QUESTION, PASSAGES))
    assert isinstance(out.answer, str), name
    assert 0.0 <= out.score <= 1.0, name
    if m.hard:
        assert out.score in (0.0, 1.0), name


@pytest.mark.slow
def test_every_method_runs_on_an_openai_compatible_server(real_with_template):
    for name in every_method():
        check_contract(real_with_template, name)


@pytest.mark.slow
def test_every_method_runs_on_transformers(hf_llm):
    for name in every_method():
        check_contract(hf_llm, name)


def test_a_backend_without_logprobs_is_refused_at_construction():
    from verirag.llm.openai.backend import OpenAICompatibleLLM

    llm = OpenAICompatibleLLM("http://127.0.0.1:9/v1", model="m", max_retries=0)
    llm.capabilities = frozenset()  # what probe() finds on a server that returns no logprobs
    needing = {
        "pre_answering": NEXT_TOKEN,
        "nli": NEXT_TOKEN,
        "llm_judge": NEXT_TOKEN,
        "self_check": NEXT_TOKEN,
        "cascade": NEXT_TOKEN,  # its LLM judge (nli) decides inside the band
        "dual_generation": SCORE,
    }
    for name in method_names():
        if name.endswith(("+lookback", "+verifier", "+stacked")) or name == "calibrag":  # need trained files
            continue
        parts = name.split("+")
        need = next((needing[p] for p in parts if p in needing), None)
        if need is None:
            build_method(name, llm)  # plain generation is enough
        else:
            with pytest.raises(CapabilityError, match=need):
                build_method(name, llm)
