"""What LLM requests cost: a Usage tally and the scope that requests are counted into.

Requests are counted into the innermost open scope of the calling thread only, so nested scopes
(a quantity computed while another is being computed) never count one request twice, and
examples answered in parallel threads are counted apart. Tokens are counted whether or not the
request cache answered: a cost is what the request reads and writes; `cache_hits` says how much
of it was not paid this time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of prompt_tokens, those of requests the cache answered
    cached_completion_tokens: int = 0
    requests: dict[str, int] = field(default_factory=dict)  # calls per kind: generate, score, next_token

    def add_request(self, kind: str, *, cached: bool, prompt_tokens: int, completion_tokens: int = 0) -> None:
        self.calls += 1
        self.cache_hits += int(cached)
        self.prompt_tokens += int(prompt_tokens)
        self.completion_tokens += int(completion_tokens)
        if cached:
            self.cached_prompt_tokens += int(prompt_tokens)
            self.cached_completion_tokens += int(completion_tokens)
        self.requests[kind] = self.requests.get(kind, 0) + 1

    def __iadd__(self, other: Usage) -> Usage:
        for name in (
            "calls",
            "cache_hits",
            "prompt_tokens",
            "completion_tokens",
            "cached_prompt_tokens",
            "cached_completion_tokens",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for k, v in other.requests.items():
            self.requests[k] = self.requests.get(k, 0) + v
        return self

    def to_dict(self) -> dict:
        return asdict(self)


_local = threading.local()


def current_usage() -> Usage | None:
    """The innermost open scope of this thread, or None when nothing is being counted."""
    stack = getattr(_local, "stack", None)
    return stack[-1] if stack else None


@contextmanager
def metering(usage: Usage | None = None) -> Iterator[Usage]:
    """Count this thread's metered requests into `usage` (a new Usage by default) inside the block."""
    usage = Usage() if usage is None else usage
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    stack.append(usage)
    try:
        yield usage
    finally:
        stack.pop()
