"""CachedLLM: any backend behind the persistent request cache.

Only deterministic requests are cached (temperature 0, or a fixed seed, which every call has):
the key includes the seed and temperature, so a sampled call with another seed is a new call.
A failed generation (finish_reason "error") is never cached, so the next run tries again; an
entry that does not read back as its result is ignored with a warning and the request made again.
Everything but the cached requests (generate, score, next_token, lookback, hidden_state) is forwarded unchanged (LLMWrapper).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from verirag.llm.base import LLM, GenerateOptions, HiddenState, NextTokenLogprobs
from verirag.llm.cache import RequestCache, request_key
from verirag.llm.lookback import LookbackRatios
from verirag.llm.wrapper import LLMWrapper
from verirag.types import ContinuationScore, Generation, Prompt


class CachedLLM(LLMWrapper):
    """Wraps a backend; looks every request up in `cache` before paying for it."""

    def __init__(self, inner: LLM, cache: RequestCache):
        super().__init__(inner)
        self.cache = cache

    def _through_cache(
        self,
        op: str,
        prompt: Prompt,
        params: dict,
        compute: Callable[[], Any],
        load: Callable[[Any], Any],
        dump: Callable[[Any], Any] = lambda out: out.to_dict(),
    ) -> Any:
        """The cached answer to this request (marked `cached`), else `compute()`, stored."""
        key = request_key(backend=self.inner.backend, model=self.inner.fingerprint, op=op, prompt=prompt, params=params)
        hit = self.cache.get(key)
        if hit is not None:
            try:
                out = load(hit)
            except (AttributeError, KeyError, TypeError, ValueError) as e:  # written by another version, or damaged
                self.cache.ignore_bad_entry(f"a {op} result: {type(e).__name__}: {e}")
            else:
                out.cached = True
                return out
        out = compute()
        if getattr(out, "finish_reason", None) != "error":  # a failed generation is tried again
            self.cache.put(key, dump(out), op=op)
        return out

    generate = LLM.generate  # the one signature (not the wrapper's forwarder); `_generate` caches

    def _generate(self, prompt: Prompt, options: GenerateOptions) -> Generation:
        params = options.as_kwargs()
        return self._through_cache(
            "generate", prompt, params, lambda: self.inner.generate(prompt, **params), Generation.from_dict
        )

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        return self._through_cache(
            "score",
            prompt,
            {"continuation": continuation},
            lambda: self.inner.score(prompt, continuation),
            ContinuationScore.from_dict,
        )

    def next_token_logprobs(
        self, prompt: Prompt, *, top_k: int = 20, candidates: Sequence[str] = ()
    ) -> NextTokenLogprobs:
        return self._through_cache(
            "next_token",
            prompt,
            {"top_k": top_k, "candidates": list(candidates)},
            lambda: NextTokenLogprobs(self.inner.next_token_logprobs(prompt, top_k=top_k, candidates=candidates)),
            lambda hit: NextTokenLogprobs({k: float(v) for k, v in hit.items()}),
            dict,
        )

    def lookback_ratios(self, prompt: Prompt, continuation: str, segments: Sequence[str]) -> LookbackRatios:
        return self._through_cache(
            "lookback",
            prompt,
            {"continuation": continuation, "segments": list(segments)},
            lambda: self.inner.lookback_ratios(prompt, continuation, segments),
            LookbackRatios.from_dict,
        )

    def hidden_state(self, text: str) -> list[float]:
        return self._through_cache(
            "hidden_state",
            text,
            {},
            lambda: HiddenState(self.inner.hidden_state(text)),
            lambda hit: HiddenState(float(x) for x in hit),
            list,
        )

    def describe(self):
        return {**self.inner.describe(), "cache": str(self.cache.path)}
