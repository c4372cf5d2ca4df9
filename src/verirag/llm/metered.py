"""MeteredLLM: counts every request's cost into the caller's open `metering` scope.

Every request kind counts: a call, whether the request cache answered, the prompt tokens read
(reported by the generation, or counted with the backend's tokenizer for next-token and score
requests, whose backends report none) and the completion tokens written. A score request reads
its continuation too, so its tokens count as prompt tokens. Counts do not depend on the cache:
a warm rerun reports the same calls and tokens, each call a cache hit.
"""

from __future__ import annotations

from verirag.llm.usage import current_usage
from verirag.llm.wrapper import LLMWrapper


class MeteredLLM(LLMWrapper):
    def _count(self, kind: str, *, cached: bool, prompt_tokens, completion_tokens: int = 0) -> None:
        usage = current_usage()
        if usage is not None:
            n = prompt_tokens() if callable(prompt_tokens) else prompt_tokens
            usage.add_request(kind, cached=cached, prompt_tokens=n, completion_tokens=completion_tokens)

    def generate(self, prompt, **kw):
        g = self.inner.generate(prompt, **kw)
        self._count("generate", cached=g.cached, prompt_tokens=g.prompt_tokens, completion_tokens=g.completion_tokens)
        return g

    def score(self, prompt, continuation):
        s = self.inner.score(prompt, continuation)
        self._count("score", cached=s.cached, prompt_tokens=lambda: self.count_prompt_tokens(prompt) + len(s.tokens))
        return s

    def next_token_logprobs(self, prompt, **kw):
        out = self.inner.next_token_logprobs(prompt, **kw)
        self._count(
            "next_token",
            cached=bool(getattr(out, "cached", False)),
            prompt_tokens=lambda: self.count_prompt_tokens(prompt),
        )
        return out

    def lookback_ratios(self, prompt, continuation, segments):
        out = self.inner.lookback_ratios(prompt, continuation, segments)
        self._count("lookback", cached=out.cached, prompt_tokens=out.n_prompt + out.n_answer)
        return out

    def hidden_state(self, text):
        out = self.inner.hidden_state(text)
        self._count(
            "hidden_state", cached=bool(getattr(out, "cached", False)), prompt_tokens=lambda: self.count_tokens(text)
        )
        return out

    def close(self):  # whoever built the model owns its lifetime, not the meter
        pass
