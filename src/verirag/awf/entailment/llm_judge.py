"""Entailment judged by an LLM: score = P(Yes) / (P(Yes) + P(No)) from the first reply token.

This is the offline default (no NLI model can be downloaded here). Reading the probabilities
of the first token instead of parsing text gives a continuous score that can be thresholded,
and never fails to parse; when neither Yes nor No is among the tokens the backend reports
(endpoints that expose only the top 20), the pair gets no score and the reason is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.entailment.base import EntailmentModel, Judgement
from verirag.awf.registry import register
from verirag.errors import InputError
from verirag.llm.base import LLM, NEXT_TOKEN
from verirag.metrics.judges import yes_probability
from verirag.prompts import load_prompt

# Share of the context window a premise may take, in words per token (English BPE ~0.75 w/t).
_WORDS_PER_TOKEN = 0.7
_ANSWER_MARGIN = 8


@register("entailment", "llm")
class LLMJudgeEntailment(EntailmentModel):
    def __init__(self, llm: LLM):
        if llm is None:
            raise InputError("the LLM entailment judge needs an LLM, and none was given (name a model or a judge)")
        llm.require(NEXT_TOKEN)
        self.llm = llm
        self.prompt = load_prompt("entailment_judge")
        self.name = f"llm-judge:{llm.model_id}"

    def max_premise_words(self, hypothesis: str) -> int:
        overhead = self.llm.count_tokens(self.prompt.system + self.prompt.user + hypothesis) + 32
        budget_tokens = self.llm.context_window - overhead - _ANSWER_MARGIN
        return max(32, int(budget_tokens * _WORDS_PER_TOKEN))

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        out = []
        for premise, hypothesis in pairs:
            msgs = self.prompt.messages(premise=premise, hypothesis=hypothesis)
            lps = self.llm.next_token_logprobs(msgs, top_k=20, candidates=("Yes", "No"))
            prob, raw, error = yes_probability(lps)
            out.append(Judgement(prob=prob, raw=raw, error=error))
        return out
