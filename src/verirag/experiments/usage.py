"""Backend usage per record: a thin LLM proxy that counts requests and tokens.

Tokens are counted whether or not the request cache answered, so "tokens per question" is the
method's cost, not this run's; `cache_hits` says how much of it this run did not pay.
Requests for next-token logprobs and continuation scores count as calls; their prompt tokens
are estimated with the backend's tokenizer only for generations (the dominant cost), so treat
`prompt_tokens` as a lower bound for scoring-based predictors.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass

from verirag.llm.base import LLM


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0



_NO_USAGE = Usage()  # where requests made outside `tracking` are counted (and ignored)


class MeteredLLM(LLM):
    """Forwards every request to `inner` and adds its cost to the Usage that the calling thread
    is tracking, so examples answered in parallel threads are metered separately."""

    def __init__(self, inner: LLM):
        self.inner = inner
        self._local = threading.local()
        self.backend, self.model_id = inner.backend, inner.model_id
        self.fingerprint, self.capabilities = inner.fingerprint, inner.capabilities
        self.context_window = inner.context_window

    @property
    def usage(self) -> Usage:
        return getattr(self._local, "usage", None) or _NO_USAGE

    @contextmanager
    def tracking(self, usage: Usage):
        """Count this thread's requests into `usage` inside the block."""
        prev = getattr(self._local, "usage", None)
        self._local.usage = usage
        try:
            yield usage
        finally:
            self._local.usage = prev

    def generate(self, prompt, **kw):
        g = self.inner.generate(prompt, **kw)
        self.usage.calls += 1
        self.usage.cache_hits += int(g.cached)
        self.usage.prompt_tokens += g.prompt_tokens
        self.usage.completion_tokens += g.completion_tokens
        return g

    def score(self, prompt, continuation):
        s = self.inner.score(prompt, continuation)
        self.usage.calls += 1
        self.usage.cache_hits += int(s.cached)
        return s

    def next_token_logprobs(self, prompt, **kw):
        self.usage.calls += 1
        return self.inner.next_token_logprobs(prompt, **kw)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def describe(self):
        return self.inner.describe()

    def close(self):  # the runner owns the model's lifetime, not the proxy
        pass
