"""CachedLLM: any backend behind the persistent request cache.

Only deterministic requests are cached (temperature 0, or a fixed seed, which every call has):
the key includes the seed and temperature, so a sampled call with another seed is a new call.
A failed generation (finish_reason "error") is never cached, so the next run tries again.
Everything but the cached requests (generate, score, next_token, lookback, hidden_state) is forwarded unchanged (LLMWrapper).
"""
from __future__ import annotations

from collections.abc import Sequence

from verirag.llm.base import DEFAULT_SEED, LLM, HiddenState, NextTokenLogprobs
from verirag.llm.cache import RequestCache, request_key
from verirag.llm.lookback import LookbackRatios
from verirag.llm.wrapper import LLMWrapper
from verirag.types import ContinuationScore, Generation, Prompt


class CachedLLM(LLMWrapper):
    """Wraps a backend; looks every request up in `cache` before paying for it."""

    def __init__(self, inner: LLM, cache: RequestCache):
        super().__init__(inner)
        self.cache = cache

    def _key(self, op: str, prompt: Prompt, **params) -> str:
        return request_key(backend=self.inner.backend, model=self.inner.fingerprint, op=op,
                           prompt=prompt, params=params)

    def generate(self, prompt: Prompt, *, max_tokens: int = 256, temperature: float = 0.0,
                 seed: int = DEFAULT_SEED, stop: Sequence[str] | None = None,
                 logprobs: bool = False, top_logprobs: int = 0) -> Generation:
        params = dict(max_tokens=max_tokens, temperature=temperature, seed=seed,
                      stop=list(stop or []), logprobs=logprobs, top_logprobs=top_logprobs)
        key = self._key("generate", prompt, **params)
        hit = self.cache.get(key)
        if hit is not None:
            gen = Generation.from_dict(hit)
            gen.cached = True
            return gen
        gen = self.inner.generate(prompt, **params)
        if gen.finish_reason != "error":
            self.cache.put(key, gen.to_dict(), op="generate")
        return gen

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        key = self._key("score", prompt, continuation=continuation)
        hit = self.cache.get(key)
        if hit is not None:
            sc = ContinuationScore.from_dict(hit)
            sc.cached = True
            return sc
        sc = self.inner.score(prompt, continuation)
        self.cache.put(key, sc.to_dict(), op="score")
        return sc

    def next_token_logprobs(self, prompt: Prompt, *, top_k: int = 20,
                            candidates: Sequence[str] = ()) -> NextTokenLogprobs:
        key = self._key("next_token", prompt, top_k=top_k, candidates=list(candidates))
        hit = self.cache.get(key)
        if hit is not None:
            out = NextTokenLogprobs({k: float(v) for k, v in hit.items()})
            out.cached = True
            return out
        out = NextTokenLogprobs(self.inner.next_token_logprobs(prompt, top_k=top_k, candidates=candidates))
        self.cache.put(key, dict(out), op="next_token")
        return out

    def lookback_ratios(self, prompt: Prompt, continuation: str, segments: Sequence[str]) -> LookbackRatios:
        key = self._key("lookback", prompt, continuation=continuation, segments=list(segments))
        hit = self.cache.get(key)
        if hit is not None:
            out = LookbackRatios.from_dict(hit)
            out.cached = True
            return out
        out = self.inner.lookback_ratios(prompt, continuation, segments)
        self.cache.put(key, out.to_dict(), op="lookback")
        return out

    def hidden_state(self, text: str) -> list[float]:
        key = self._key("hidden_state", text)
        hit = self.cache.get(key)
        if hit is not None:
            out = HiddenState(float(x) for x in hit)
            out.cached = True
            return out
        out = HiddenState(self.inner.hidden_state(text))
        self.cache.put(key, list(out), op="hidden_state")
        return out

    def describe(self):
        return {**self.inner.describe(), "cache": str(self.cache.path)}
