"""Test doubles of the LLM protocol (`verirag.llm.base.LLM`), shared by the tests.

A double stands in for a model only where a test is about something else (a stage's bookkeeping, a
wrapper, a prompt's layout, input handling); tests of the model path run the real SmolLM2-135M (the
`smollm` fixture).

- `ScriptedLLM`: replies from a string, a list (in order) or a function of the prompt; gives next-token
  log-probabilities from a dict or a function; scores a continuation at a fixed logprob a word; records
  every request. A capability is claimed only for what it was given, so the CapabilityError paths stay real.
- `FailingLLM`: an outage: every request raises the given error (a BackendError by default).
- `NoCallLLM`: builds prompts only; any request fails the test.
- `CountingLLM`: wraps any LLM (real or double) and counts the requests that reach it by kind; can stop a
  run after n of them, as a kill would.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from verirag.errors import BackendError
from verirag.llm.base import EXACT_NEXT_TOKEN, LLM, LOGPROBS, NEXT_TOKEN, SCORE, GenerateOptions
from verirag.llm.wrapper import LLMWrapper
from verirag.types import ContinuationScore, Generation, TokenLogprob

ALL = frozenset({LOGPROBS, NEXT_TOKEN, EXACT_NEXT_TOKEN, SCORE})


def yes_no(p_yes: float) -> dict[str, float]:
    """A judge's first-token distribution: "Yes" with probability `p_yes`, "No" with the rest."""
    return {"Yes": math.log(p_yes), "No": math.log(1 - p_yes)}


class Request(NamedTuple):
    op: str  # "generate", "next_token" or "score": the names the meter counts by
    prompt: Any
    options: dict[str, Any]


class ScriptedLLM(LLM):
    """A stand-in model that answers from a script.

    reply: what `generate` returns: a string (every time), an Exception (raised every time), a
        Generation (returned as given), a list of those (one per request, in order; running out fails
        the test; `replies` holds what is left), or a function of the prompt returning one of those.
    next_token: what `next_token_logprobs` returns: a dict, an Exception or a function of the prompt.
        Given, the double claims NEXT_TOKEN and EXACT_NEXT_TOKEN.
    score: the logprob of each word of a scored continuation: a float, an Exception or a function of
        (prompt, continuation). Given, the double claims SCORE.
    logprob: with it, a generation asked for logprobs gets one token a word at this logprob (with the
        word itself as the top alternatives); the double claims LOGPROBS.
    capabilities: overrides the claimed capabilities.
    prompt_tokens, completion_tokens: the usage each generation reports (and the prompt's count).
    delay: seconds each request takes; `max_in_flight` records the most requests served at once.
    """

    def __init__(
        self,
        reply: Any = "25 minutes",
        *,
        next_token: Any = None,
        score: Any = None,
        logprob: float | None = None,
        name: str = "scripted",
        fingerprint: str | None = None,
        backend: str = "scripted",
        capabilities: Sequence[str] | None = None,
        context_window: int = 4096,
        finish_reason: str = "stop",
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        delay: float = 0.0,
    ):
        self.reply = reply
        self.replies = list(reply) if isinstance(reply, (list, tuple)) else None
        self.next_token, self.score_per_word, self.logprob = next_token, score, logprob
        self.backend, self.model_id = backend, name
        self.fingerprint = name if fingerprint is None else fingerprint
        claimed = {LOGPROBS} if logprob is not None else set()
        claimed |= {NEXT_TOKEN, EXACT_NEXT_TOKEN} if next_token is not None else set()
        claimed |= {SCORE} if score is not None else set()
        self.capabilities = frozenset(claimed if capabilities is None else capabilities)
        self.context_window = context_window
        self.finish_reason = finish_reason
        self.prompt_tokens, self.completion_tokens = prompt_tokens, completion_tokens
        self.delay = delay
        self.requests: list[Request] = []
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------ what was asked
    @property
    def prompts(self) -> list[Any]:
        return [r.prompt for r in self.requests]

    @property
    def ops(self) -> list[str]:
        return [r.op for r in self.requests]

    def _serve(self, op: str, prompt: Any, options: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(Request(op, prompt, options))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
        finally:
            with self._lock:
                self.in_flight -= 1

    # ------------------------------------------------------------------------------ the protocol
    def _generate(self, prompt, options: GenerateOptions) -> Generation:
        logprobs, top_logprobs = options.logprobs, options.top_logprobs
        self._serve("generate", prompt, {**options.as_kwargs(), "stop": list(options.stop) or None})
        out = self._next_reply(prompt)
        if isinstance(out, BaseException):
            raise out
        if isinstance(out, Generation):
            return dataclasses.replace(out)
        tokens = []
        if logprobs and self.logprob is not None:
            top = top_logprobs > 0
            tokens = [TokenLogprob(w, self.logprob, [(w, self.logprob)] if top else []) for w in out.split()]
        return Generation(
            text=out,
            tokens=tokens,
            finish_reason=self.finish_reason,
            model=self.model_id,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )

    def _next_reply(self, prompt):
        if self.replies is not None:
            with self._lock:
                assert self.replies, f"{self.model_id}: more generate requests than scripted replies"
                return self.replies.pop(0)
        return self.reply(prompt) if callable(self.reply) else self.reply

    def next_token_logprobs(self, prompt, *, top_k=20, candidates=()) -> dict[str, float]:
        if self.next_token is None:
            return super().next_token_logprobs(prompt, top_k=top_k, candidates=candidates)
        self._serve("next_token", prompt, {"top_k": top_k, "candidates": tuple(candidates)})
        out = self.next_token(prompt) if callable(self.next_token) else self.next_token
        if isinstance(out, BaseException):
            raise out
        return dict(out)

    def score(self, prompt, continuation: str) -> ContinuationScore:
        if self.score_per_word is None:
            return super().score(prompt, continuation)
        self._serve("score", prompt, {"continuation": continuation})
        lp = self.score_per_word
        lp = lp(prompt, continuation) if callable(lp) else lp
        if isinstance(lp, BaseException):
            raise lp
        return ContinuationScore(tokens=[TokenLogprob(w, lp) for w in continuation.split()])

    def count_prompt_tokens(self, prompt) -> int:
        return self.prompt_tokens or super().count_prompt_tokens(prompt)


class FailingLLM(ScriptedLLM):
    """An outage: every request (generate, next-token, score) raises `error`."""

    def __init__(self, error: BaseException | None = None, *, name: str = "failing", **kw: Any):
        error = error if error is not None else BackendError("the server is down")
        kw.setdefault("capabilities", ALL)
        super().__init__(error, next_token=error, score=error, name=name, **kw)


class NoCallLLM(ScriptedLLM):
    """Builds prompts only: a test about layout or identity, where any request to a model is a bug."""

    def __init__(self, *, name: str = "none", **kw: Any):
        kw.setdefault("capabilities", ALL)
        kw.setdefault("backend", "none")
        super().__init__(self._fail, next_token=self._fail, score=self._fail, name=name, **kw)

    @staticmethod
    def _fail(*args: Any) -> None:
        raise AssertionError("no request to the model expected")


class CountingLLM(LLMWrapper):
    """Counts the requests that reach `inner` by kind (`calls`, a Counter) and in all (`total`).
    With `interrupt_after`, the request after that many raises KeyboardInterrupt, which is what a
    killed run looks like from inside."""

    def __init__(self, inner: LLM, interrupt_after: int | None = None):
        super().__init__(inner)
        self.calls: Counter[str] = Counter()
        self.interrupt_after = interrupt_after

    @property
    def total(self) -> int:
        return sum(self.calls.values())

    def _count(self, op: str) -> None:
        self.calls[op] += 1
        if self.interrupt_after is not None and self.total > self.interrupt_after:
            raise KeyboardInterrupt

    def generate(self, *args: Any, **kw: Any) -> Generation:
        self._count("generate")
        return self.inner.generate(*args, **kw)

    def next_token_logprobs(self, *args: Any, **kw: Any) -> Mapping[str, float]:
        self._count("next_token")
        return self.inner.next_token_logprobs(*args, **kw)

    def score(self, *args: Any, **kw: Any) -> ContinuationScore:
        self._count("score")
        return self.inner.score(*args, **kw)

    def close(self) -> None:
        pass  # the counted model may be the session's shared SmolLM2: its owner closes it


__all__ = ["ALL", "CountingLLM", "FailingLLM", "NoCallLLM", "Request", "ScriptedLLM", "yes_no"]
