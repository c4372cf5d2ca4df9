"""InstructRAG (Wei et al., 2024; AwF section 4.2.1 and appendix A.4): the Vanilla task with
chain-of-thought and two few-shot examples per dataset family; only the final answer after the
last "Response:" is kept.

The few-shot examples live in `prompts/instructrag.yaml` under `examples.<family>`; families:
open_domain, multi_hop, biomedical, generic. When the "Response:" line is missing, the Answer
keeps the last non-empty line as its text with `meta["parse_ok"]` False; it is a direct answer
with a warning if the reply ended on its own, an error if it was cut by max_tokens or empty (or
always, with `strict_format=True`); see `verirag.awf.parsing.format_error`. `meta["raw"]` keeps
the reply.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer, AnswerGenerator
from verirag.awf.parsing import extract_response, format_error
from verirag.awf.passages import prompt_passages
from verirag.awf.registry import register
from verirag.errors import InputError
from verirag.prompts import DEFAULT_LAYOUT, PromptTemplate, check_layout, load_prompt
from verirag.types import Passage

FAMILIES = ("open_domain", "multi_hop", "biomedical", "generic")


def _as_question(q: str) -> str:
    q = q.strip()
    return q if q.endswith("?") else q + "?"


def fewshot_messages(
    prompt: PromptTemplate, family: str, question: str, passages: Sequence[Passage]
) -> list[dict[str, str]]:
    """The messages of an InstructRAG-style prompt (also used by CoT few-shot Hybrid)."""
    examples = prompt.extra["examples"][family]
    shots = "\n\n".join(
        prompt.extra["example"].format(n=n, question=_as_question(ex["question"]), rationale=ex["rationale"].strip())
        for n, ex in enumerate(examples, 1)
    )
    return prompt.messages(examples=shots, passages=prompt_passages(prompt, passages), question=_as_question(question))


def check_family(prompt: PromptTemplate, family: str) -> str:
    known = sorted(prompt.extra["examples"])
    if family not in known:
        raise InputError(f"unknown dataset family {family!r} for prompt {prompt.name!r}; known: {', '.join(known)}")
    return family


class FewShotPrompted:
    """A component prompted with its dataset family's few-shot examples in a passage layout
    (InstructRAG's generator, CoT-hybrid): what both set up and how both write their messages."""

    prompt_name = ""

    def use_fewshot(self, family: str, strict_format: bool, layout: str) -> None:
        self.layout = check_layout(layout)
        self.prompt = load_prompt(self.prompt_name, layout)
        self.family = check_family(self.prompt, family)
        self.strict_format = strict_format  # see verirag.awf.parsing.format_error

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        return fewshot_messages(self.prompt, self.family, question, passages)


@register("generator", "instructrag")
class InstructRAGGenerator(FewShotPrompted, AnswerGenerator):
    prompt_name = "instructrag"

    def __init__(
        self,
        llm,
        *,
        family: str = "open_domain",
        max_tokens: int = 256,
        strict_format: bool = False,
        layout: str = DEFAULT_LAYOUT,
    ):
        super().__init__(llm, max_tokens=max_tokens)
        self.use_fewshot(family, strict_format, layout)

    def answer(self, question: str, passages: Sequence[Passage]) -> Answer:
        messages = self.messages(question, passages)
        gen = self.generate(messages)
        raw = gen.text
        parsed = extract_response(raw)
        meta = {
            "raw": raw,
            "parse_ok": parsed.ok,
            "parse_error": parsed.reason,
            "family": self.family,
            "finish_reason": gen.finish_reason,
        }
        error, warning = format_error(parsed, gen.finish_reason, "InstructRAG", strict=self.strict_format)
        if warning:
            meta["parse_warning"] = warning
        return Answer(text=parsed.answer, generation=gen, error=error, meta=meta, prompt=messages)
