"""No Context (AwF, appendix A.4): the question alone, answered from parametric memory.

The No-RAG fallback policy answers with it when the retrieved answer is not supported.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer, AnswerGenerator
from verirag.awf.registry import register
from verirag.prompts import load_prompt
from verirag.types import Passage


@register("generator", "no_context")
class NoContextGenerator(AnswerGenerator):
    reads_passages = False  # its answer is shared by every trace of the same question

    def __init__(self, llm, *, max_tokens: int = 96):
        super().__init__(llm, max_tokens=max_tokens)
        self.prompt = load_prompt("no_context")

    def answer(self, question: str, passages: Sequence[Passage] = ()) -> Answer:
        messages = self.prompt.messages(question=question)
        return self._finish(self.generate(messages), messages)
