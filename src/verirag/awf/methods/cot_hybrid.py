"""CoT few-shot Hybrid (AwF section 4.1, prompt structure in appendix A.4): the InstructRAG prompt
with the option to abstain; the LLM reasons about the documents and ends with "Response: <answer>"
or "Response: __DONT_KNOW__". v = 1 iff the final response is not an abstention (a hard label).

In each dataset family's two few-shot examples (`prompts/cot_hybrid.yaml`) one rationale answers
and one abstains. The reply is memoised in the trace under the method's key.
A reply without a "Response:" line has `details["parse_ok"]` False. If it ended on its own, its last
line is a direct answer (v = 1 unless it abstains; `parse_warning` says so); if it was cut by
max_tokens or is empty, or with `strict_format=True`, it is an error with score 0
(`verirag.awf.parsing.format_error`). Either way the item is counted.
"""

from __future__ import annotations

from verirag.awf.generators.base import Answer
from verirag.awf.generators.instructrag import FewShotPrompted
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.parsing import extract_response, format_error, is_dont_know
from verirag.awf.registry import register
from verirag.awf.trace import Trace
from verirag.prompts import DEFAULT_LAYOUT


@register("method", "cot_hybrid")
class CoTHybrid(FewShotPrompted, AwFMethod):
    prompt_name = "cot_hybrid"
    hard = True
    needs = ()

    def __init__(
        self,
        llm,
        *,
        family: str = "open_domain",
        max_tokens: int = 256,
        strict_format: bool = False,
        layout: str = DEFAULT_LAYOUT,
    ):
        self.llm = llm
        self.max_tokens = max_tokens
        self.use_fewshot(family, strict_format, layout)

    def _answer(self, trace: Trace) -> Answer:
        gen = self.llm.generate(self.messages(trace.question, trace.passages), max_tokens=self.max_tokens)
        parsed = extract_response(gen.text)
        meta = {
            "raw": gen.text,
            "parse_ok": parsed.ok,
            "parse_error": parsed.reason,
            "family": self.family,
            "finish_reason": gen.finish_reason,
        }
        error, warning = format_error(parsed, gen.finish_reason, "CoT few-shot Hybrid", strict=self.strict_format)
        if warning:
            meta["parse_warning"] = warning
        return Answer(text=parsed.answer, generation=gen, error=error, meta=meta)

    def run(self, trace: Trace) -> MethodOutput:
        ans = self.compute(trace, lambda: self._answer(trace))
        details = {
            "raw": ans.meta.get("raw", ans.text),
            "parse_ok": ans.meta.get("parse_ok", False),
            "parse_error": ans.meta.get("parse_error"),
            "parse_warning": ans.meta.get("parse_warning"),
        }
        if ans.error:
            details["abstained"] = is_dont_know(ans.text)
            return MethodOutput(answer=ans.text, score=0.0, hard=True, error=ans.error, details=details)
        abstained = is_dont_know(ans.text)
        details["abstained"] = abstained
        return MethodOutput(answer=ans.text, score=0.0 if abstained else 1.0, hard=True, details=details)
