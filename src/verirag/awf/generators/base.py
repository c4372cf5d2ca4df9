"""What every answer generator returns and accepts."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from verirag.awf.component import Component
from verirag.llm.base import LLM, LOGPROBS
from verirag.types import Generation, Passage


@dataclass
class Answer:
    """A generated answer. `error` is set (and `text` may be empty) when generation failed;
    the raw generation is kept so that failures can be inspected, never silently dropped.
    `prompt` is the conversation the generator sent (a self-check continues it)."""

    text: str
    generation: Generation | None = None
    error: str | None = None
    meta: dict = field(default_factory=dict)
    prompt: list[dict[str, str]] | None = None


class AnswerGenerator(Component, ABC):
    kind = "generator"

    def __init__(self, llm: LLM, *, max_tokens: int = 96):
        self.llm = llm
        self.max_tokens = max_tokens

    def generate(self, messages: list[dict[str, str]]) -> Generation:
        """The model's reply to `messages`, with its token log-probabilities wherever the backend
        gives them in the same request (the answer's signals, `verirag.awf.signals`: one
        log-softmax per generated token, no extra request). Only where they are assured: an
        endpoint that claims them and does not deliver must not cost the answer."""
        logprobs = LOGPROBS in getattr(self.llm, "capabilities", ()) and bool(
            getattr(self.llm, "logprobs_assured", False)
        )
        return self.llm.generate(messages, max_tokens=self.max_tokens, logprobs=logprobs)

    @abstractmethod
    def answer(self, question: str, passages: Sequence[Passage]) -> Answer:
        """Answer `question` from `passages` (ignored by generators that do not use them)."""

    def _finish(self, gen: Generation, prompt: list[dict[str, str]] | None = None) -> Answer:
        text = gen.text.strip()
        if not text:
            return Answer(text="", generation=gen, error="the model returned an empty answer", prompt=prompt)
        return Answer(text=text, generation=gen, prompt=prompt)
