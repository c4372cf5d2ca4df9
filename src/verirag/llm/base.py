"""The one LLM interface every backend implements.

Three operations cover every method verirag implements:
- `generate`: chat or completion generation, optionally with per-token logprobs and top-k alternatives;
- `score`: log P(continuation | prompt) by teacher forcing (perplexity comparisons);
- `next_token_logprobs`: the distribution of the first reply token (yes/no judges read it).
Backends that cannot do one of them say so in `capabilities`, and raise CapabilityError when asked.
Generation is deterministic by default: temperature 0 and a fixed seed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from verirag.errors import CapabilityError, InputError
from verirag.types import ContinuationScore, Generation, Prompt

# Capability names.
LOGPROBS = "logprobs"  # per-token logprobs (+ top-k) on generate
SCORE = "score"  # score(prompt, continuation)
NEXT_TOKEN = "next_token"  # next_token_logprobs
EXACT_NEXT_TOKEN = "exact_next_token"  # any candidate token can be looked up, not only the top-k
ATTENTIONS = "attentions"  # attention weights (HF transformers only)
HIDDEN_STATE = "hidden_state"  # a text's mean-pooled last-layer hidden state (probe features)

DEFAULT_SEED = 0


@dataclass(frozen=True)
class GenerateOptions:
    """The options of one `LLM.generate` call, checked (what a backend's `_generate` reads)."""

    max_tokens: int = 256
    temperature: float = 0.0
    seed: int = DEFAULT_SEED
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `generate` (stop as a list: the request cache's key reads it so)."""
        return {**asdict(self), "stop": list(self.stop)}


class NextTokenLogprobs(dict):
    """token text -> log-probability of the first reply token; `cached` tells whether the
    request cache answered (a plain dict from a backend reads as not cached)."""

    cached: bool = False


class HiddenState(list):
    """A hidden-state vector (floats); `cached` tells whether the request cache answered."""

    cached: bool = False


class LLM(ABC):
    """Abstract LLM backend.

    Attributes set by each backend:
        backend: short backend name ("llama_cpp", "openai", "hf").
        model_id: what the user named (preset, path or endpoint model name).
        fingerprint: identifies the weights for the request cache (a file sha256, or endpoint+model).
        capabilities: the capability names above that this instance supports.
        context_window: maximum tokens of prompt + completion.
        logprobs_assured: a generation asked for its token logprobs always gets them, at no extra
            cost (a local engine). A remote endpoint may claim LOGPROBS and still not deliver them
            (then the request fails), so a caller for whom they are optional (the answer's
            signals) asks only where they are assured.
    """

    backend: str = "abstract"
    model_id: str = ""
    fingerprint: str = ""
    capabilities: frozenset[str] = frozenset()
    context_window: int = 4096
    logprobs_assured: bool = False

    def generate(
        self,
        prompt: Prompt,
        *,
        max_tokens: int = 256,
        temperature: float = 0.0,
        seed: int = DEFAULT_SEED,
        stop: Sequence[str] | None = None,
        logprobs: bool = False,
        top_logprobs: int = 0,
    ) -> Generation:
        """Generate a reply. With `logprobs`, `Generation.tokens` holds each token's logprob
        and its `top_logprobs` most likely alternatives. One signature for every backend: the
        options are checked here, once, and handed to the backend's `_generate`."""
        if max_tokens < 1:
            raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
        options = GenerateOptions(max_tokens, temperature, seed, tuple(stop or ()), logprobs, top_logprobs)
        return self._generate(prompt, options)

    @abstractmethod
    def _generate(self, prompt: Prompt, options: GenerateOptions) -> Generation:
        """The backend's generation with checked options (what `generate` hands over)."""

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        """log P(continuation | prompt), token by token. For chat prompts the continuation is
        the beginning of the assistant's reply."""
        raise CapabilityError(f"backend {self.backend!r} cannot score a fixed continuation")

    def next_token_logprobs(
        self, prompt: Prompt, *, top_k: int = 20, candidates: Sequence[str] = ()
    ) -> dict[str, float]:
        """Log-probabilities of the first token of the reply.

        Returns the `top_k` most likely tokens and, where the backend can look them up
        (EXACT_NEXT_TOKEN), the first token of each candidate string, keyed by token text.
        """
        raise CapabilityError(f"backend {self.backend!r} cannot give next-token logprobs")

    def lookback_ratios(self, prompt: Prompt, continuation: str, segments: Sequence[str]):
        """Lookback ratios (`verirag.llm.lookback`) of `continuation` as the reply to `prompt`,
        with `segments` the passages' texts in the order they occur in the prompt."""
        raise CapabilityError(
            f"backend {self.backend!r} gives no attention weights; lookback ratios "
            "need the HF transformers backend (a model spec hf:...)"
        )

    def hidden_state(self, text: str) -> list[float]:
        """The mean over `text`'s tokens (read as plain text, no chat template) of the model's
        last-layer hidden state: features of the model itself for a probe."""
        raise CapabilityError(
            f"backend {self.backend!r} gives no hidden states; use the local llama.cpp or the HF transformers backend"
        )

    def count_tokens(self, text: str) -> int:
        """Number of tokens of `text`; backends without a tokenizer estimate it."""
        return max(1, int(len(text.split()) * 1.4))

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        """Tokens the model reads for `prompt` (chat template included where the backend renders
        one); counts the cost of requests that report none (next-token, score), cached or not."""
        if isinstance(prompt, str):
            return self.count_tokens(prompt)
        return sum(self.count_tokens(m.get("content", "")) + 4 for m in prompt)  # ~4 template tokens a message

    def require(self, *capabilities: str) -> None:
        """Raise CapabilityError at construction time of a method that needs what is missing."""
        missing = [c for c in capabilities if c not in self.capabilities]
        if missing:
            raise CapabilityError(
                f"{self.backend} model {self.model_id!r} lacks {', '.join(missing)}; "
                f"it supports: {', '.join(sorted(self.capabilities)) or 'plain generation only'}"
            )

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": self.model_id,
            "fingerprint": self.fingerprint,
            "capabilities": sorted(self.capabilities),
            "context_window": self.context_window,
        }

    def close(self) -> None:
        """Release weights or connections."""
