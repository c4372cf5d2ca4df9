"""Vanilla (AwF, section 4): answer the question from the retrieved passages, concisely."""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer, AnswerGenerator
from verirag.awf.passages import prompt_passages
from verirag.awf.registry import register
from verirag.prompts import DEFAULT_LAYOUT, check_layout, load_prompt
from verirag.types import Passage


@register("generator", "vanilla")
class VanillaGenerator(AnswerGenerator):
    def __init__(self, llm, *, max_tokens: int = 96, layout: str = DEFAULT_LAYOUT):
        super().__init__(llm, max_tokens=max_tokens)
        self.layout = check_layout(layout)
        self.prompt = load_prompt("vanilla", layout)

    @staticmethod
    def prompt_messages(
        question: str, passages: Sequence[Passage], layout: str = DEFAULT_LAYOUT
    ) -> list[dict[str, str]]:
        prompt = load_prompt("vanilla", layout)
        return prompt.messages(question=question, passages=prompt_passages(prompt, passages))

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        return self.prompt_messages(question, passages, self.layout)

    def answer(self, question: str, passages: Sequence[Passage]) -> Answer:
        messages = self.messages(question, passages)
        return self._finish(self.generate(messages), messages)
