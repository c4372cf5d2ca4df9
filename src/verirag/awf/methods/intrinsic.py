"""Intrinsic Abstention (AwF section 4.1, prompt in appendix A.4): the LLM answers only if the
answer is supported by the context, and otherwise replies `__DONT_KNOW__`. v = 1 iff the reply
is not an abstention (a hard label).

The reply is memoised in the trace under the method's key, so reruns on one trace share it.
Abstention is the `__DONT_KNOW__` token and its variants (`verirag.awf.parsing.is_dont_know`);
with `broad_abstention=True` the phrase list of `verirag.metrics.abstention.is_abstention`
("the context does not provide ...", "cannot be determined", ...) counts too.
An empty reply is an error: recorded, score 0, still counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.parsing import clean_answer, is_dont_know
from verirag.awf.passages import prompt_passages
from verirag.awf.registry import register
from verirag.awf.trace import Trace
from verirag.metrics.abstention import is_abstention
from verirag.prompts import DEFAULT_LAYOUT, check_layout, load_prompt
from verirag.types import Passage


@register("method", "intrinsic")
class IntrinsicAbstention(AwFMethod):
    hard = True
    needs = ()

    def __init__(self, llm, *, max_tokens: int = 96, broad_abstention: bool = False, layout: str = DEFAULT_LAYOUT):
        self.llm = llm
        self.max_tokens = max_tokens
        self.broad_abstention = broad_abstention
        self.layout = check_layout(layout)
        self.prompt = load_prompt("intrinsic", layout)

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        return self.prompt.messages(question=question, passages=prompt_passages(self.prompt, passages))

    def _answer(self, trace: Trace) -> Answer:
        gen = self.llm.generate(self.messages(trace.question, trace.passages), max_tokens=self.max_tokens)
        raw = gen.text.strip()
        if not raw:
            return Answer(text="", generation=gen, error="the model returned an empty answer", meta={"raw": gen.text})
        return Answer(text=clean_answer(raw) or raw, generation=gen, meta={"raw": gen.text})

    def run(self, trace: Trace) -> MethodOutput:
        ans = self.compute(trace, lambda: self._answer(trace))
        raw = ans.meta.get("raw", ans.text)
        details = {"raw": raw}
        if ans.error:
            return MethodOutput(
                answer=ans.text, score=0.0, hard=True, error=ans.error, details={**details, "abstained": None}
            )
        abstained = is_dont_know(raw) or (self.broad_abstention and is_abstention(raw))
        details["abstained"] = abstained
        return MethodOutput(answer=ans.text, score=0.0 if abstained else 1.0, hard=True, details=details)
