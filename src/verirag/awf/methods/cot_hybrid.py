"""CoT few-shot Hybrid (AwF section 4.1, prompt structure in appendix A.4): the InstructRAG prompt
with the option to abstain; the LLM reasons about the documents and ends with "Response: <answer>"
or "Response: __DONT_KNOW__". v = 1 iff the final response is not an abstention (a hard label).

In each dataset family's two few-shot examples (`prompts/cot_hybrid.yaml`) one rationale answers
and one abstains. The reply is memoised in the trace under "answer:cot_hybrid".
A reply without a "Response:" line is a parse failure: the error is recorded, the score is 0, the
answer keeps the last non-empty line and `details["parse_ok"]` is False, so it can be counted.
"""
from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer
from verirag.awf.generators.instructrag import check_family, fewshot_messages
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.parsing import extract_response, is_dont_know
from verirag.awf.registry import register
from verirag.awf.trace import Trace
from verirag.prompts import load_prompt
from verirag.types import Passage


@register("method", "cot_hybrid")
class CoTHybrid(AwFMethod):
    hard = True
    needs = ()

    def __init__(self, llm, *, family: str = "open_domain", max_tokens: int = 256):
        self.llm = llm
        self.max_tokens = max_tokens
        self.prompt = load_prompt("cot_hybrid")
        self.family = check_family(self.prompt, family)

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        return fewshot_messages(self.prompt, self.family, question, passages)

    def _answer(self, trace: Trace) -> Answer:
        gen = self.llm.generate(self.messages(trace.question, trace.passages),
                                max_tokens=self.max_tokens)
        parsed = extract_response(gen.text)
        meta = {"raw": gen.text, "parse_ok": parsed.ok, "parse_error": parsed.reason,
                "family": self.family, "finish_reason": gen.finish_reason}
        error = None
        if not parsed.ok:
            error = f"unparseable CoT few-shot Hybrid output: {parsed.reason}"
            if gen.finish_reason == "length":
                error += " (generation hit max_tokens)"
        return Answer(text=parsed.answer, generation=gen, error=error, meta=meta)

    def run(self, trace: Trace) -> MethodOutput:
        ans = trace.get("answer:cot_hybrid", lambda: self._answer(trace))
        details = {"raw": ans.meta.get("raw", ans.text), "parse_ok": ans.meta.get("parse_ok", False),
                   "parse_error": ans.meta.get("parse_error")}
        if ans.error:
            details["abstained"] = is_dont_know(ans.text)
            return MethodOutput(answer=ans.text, score=0.0, hard=True, error=ans.error,
                                details=details)
        abstained = is_dont_know(ans.text)
        details["abstained"] = abstained
        return MethodOutput(answer=ans.text, score=0.0 if abstained else 1.0, hard=True,
                            details=details)
