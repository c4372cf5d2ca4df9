"""LLM judge (RAGAS-like faithfulness): is the answer fully supported by the passages?

One request per answer: the LLM reads all passages together with the question and the answer,
and replies Yes or No (prompt `prompts/llm_judge.yaml`). The score is
P(Yes) / (P(Yes) + P(No)) from the first reply token (case- and space-insensitive spellings),
NaN with an error when neither is among the tokens the backend reports. Unlike `nli` it gives no
per-passage support (all passages are judged at once), so `per_passage` is all None.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.passages import prompt_passages
from verirag.awf.predictors._yes_no import branch_probability
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, failed_request, invalid_input
from verirag.awf.registry import register
from verirag.errors import VeriragError
from verirag.llm.base import LLM, NEXT_TOKEN
from verirag.prompts import DEFAULT_LAYOUT, check_layout, load_prompt
from verirag.types import Passage


@register("predictor", "llm_judge")
class LLMJudgePredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = (NEXT_TOKEN,)

    def __init__(self, llm: LLM, *, top_k: int = 20, layout: str = DEFAULT_LAYOUT):
        llm.require(*self.needs)
        self.llm = llm
        self.top_k = top_k
        self.layout = check_layout(layout)
        self.prompt = load_prompt("llm_judge", layout)
        self.name = f"llm_judge[{llm.model_id}]"

    def messages(self, question: str, answer: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        text = prompt_passages(self.prompt, passages)
        return self.prompt.messages(question=question.strip(), answer=answer.strip(), passages=text)

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        bad = invalid_input(answer, passages)
        if bad is not None:
            return bad
        try:
            lps = self.llm.next_token_logprobs(
                self.messages(question, answer, passages), top_k=self.top_k, candidates=("Yes", "No")
            )
        except VeriragError as e:
            return failed_request("judge request", e, len(passages))
        score, _raw, error = branch_probability(lps, ("yes",), ("no",))
        return Verification(score=score, per_passage=[None] * len(passages), error=error)
