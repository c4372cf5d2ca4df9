"""Vanilla (AwF, section 4): answer the question from the retrieved passages, concisely."""
from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer, AnswerGenerator
from verirag.awf.passages import format_passages
from verirag.awf.registry import register
from verirag.prompts import load_prompt
from verirag.types import Passage


@register("generator", "vanilla")
class VanillaGenerator(AnswerGenerator):
    def __init__(self, llm, *, max_tokens: int = 96):
        super().__init__(llm, max_tokens=max_tokens)
        self.prompt = load_prompt("vanilla")

    @staticmethod
    def prompt_messages(question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        prompt = load_prompt("vanilla")
        text = format_passages(passages, with_title=prompt.extra["passage_with_title"],
                               without_title=prompt.extra["passage"])
        return prompt.messages(question=question, passages=text)

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        return self.prompt_messages(question, passages)

    def answer(self, question: str, passages: Sequence[Passage]) -> Answer:
        messages = self.messages(question, passages)
        return self._finish(self.llm.generate(messages, max_tokens=self.max_tokens), messages)
