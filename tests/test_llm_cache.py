"""The persistent request cache: keys, persistence, concurrent writers, and CachedLLM accounting."""

from __future__ import annotations

import multiprocessing as mp

from doubles import ScriptedLLM

from verirag.llm.cache import RequestCache, request_key
from verirag.llm.cached import CachedLLM


def test_key_is_stable_and_sensitive():
    a = request_key(backend="x", model="m", op="generate", prompt="hi", params={"t": 0, "s": 1})
    b = request_key(backend="x", model="m", op="generate", params={"s": 1, "t": 0}, prompt="hi")
    c = request_key(backend="x", model="m2", op="generate", prompt="hi", params={"t": 0, "s": 1})
    d = request_key(backend="x", model="m", op="generate", prompt="hi", params={"t": 0, "s": 2})
    assert a == b and len({a, c, d}) == 3


def test_persists_across_instances(tmp_path):
    path = tmp_path / "c.sqlite"
    c1 = RequestCache(path)
    c1.put("k", {"text": "é"})
    c1.close()
    c2 = RequestCache(path)
    assert c2.get("k") == {"text": "é"} and c2.get("missing") is None
    assert (c2.hits, c2.misses) == (1, 1)


def _writer(path: str, start: int, n: int) -> None:
    cache = RequestCache(path)
    for i in range(start, start + n):
        cache.put(f"k{i}", {"i": i})


def test_concurrent_processes_do_not_corrupt(tmp_path):
    path = str(tmp_path / "c.sqlite")
    RequestCache(path)
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, j * 200, 200)) for j in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    cache = RequestCache(path)
    assert len(cache) == 600
    assert all(cache.get(f"k{i}") == {"i": i} for i in range(0, 600, 37))


def backend() -> ScriptedLLM:
    """A stand-in backend: these tests are about the cache wrapper, not about a model."""
    return ScriptedLLM(
        lambda prompt: f"reply to {prompt}",
        logprob=-0.5,
        score=-1.0,
        next_token={"Yes": -0.1, "No": -2.3},
        name="counting-v1",
        backend="counting",
    )


def test_cached_llm_pays_each_request_once(tmp_path):
    inner = backend()
    llm = CachedLLM(inner, RequestCache(tmp_path / "c.sqlite"))
    g1 = llm.generate("q", logprobs=True, top_logprobs=1)
    g2 = llm.generate("q", logprobs=True, top_logprobs=1)
    assert len(inner.requests) == 1 and not g1.cached and g2.cached
    assert g2.text == g1.text and g2.tokens == g1.tokens
    llm.generate("q", seed=7)  # another seed is another request
    assert len(inner.requests) == 2
    assert llm.score("p", "c").total_logprob == llm.score("p", "c").total_logprob == -1.0
    assert llm.next_token_logprobs("p") == llm.next_token_logprobs("p")
    assert len(inner.requests) == 4
    # A new process (new wrapper, same file) resumes from the cache.
    inner2 = backend()
    CachedLLM(inner2, RequestCache(tmp_path / "c.sqlite")).generate("q", logprobs=True, top_logprobs=1)
    assert len(inner2.requests) == 0


def test_failed_generations_are_not_cached(tmp_path):
    inner = ScriptedLLM("", finish_reason="error")
    llm = CachedLLM(inner, RequestCache(tmp_path / "c.sqlite"))
    llm.generate("q")
    llm.generate("q")
    assert len(inner.requests) == 2


def test_the_shared_cache_follows_the_cache_directory(tmp_path, monkeypatch):
    """A process that changes $VERIRAG_CACHE_DIR writes to the new cache, not to the first one it
    opened (in the full suite a test's temporary cache once caught every later test's requests)."""
    from verirag.llm.factory import shared_cache

    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "first"))
    first = shared_cache()
    assert first.path == tmp_path / "first" / "requests.sqlite" and shared_cache() is first
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "second"))
    assert shared_cache().path == tmp_path / "second" / "requests.sqlite"
