"""Pre-Answering Prediction (AwF, section 4.2.2): a query-performance predictor used as v.

Before (and independently of) the answer, the LLM is asked whether the passages, all together,
contain the answer to the question, with the NoMIRACL instruction (Thakur et al., 2024):
reply "Yes, answer is present" or "I don't know". The score is read from the distribution of
the first reply token, never from parsed text:

    score = P(yes branch) / (P(yes branch) + P(no branch))

where the yes branch is marked by the first token "Yes" and the no branch by "I" (of "I don't
know"); a bare "No" is counted in the no branch too (small models often answer it). Token
spellings are compared case- and space-insensitively (`yes_tokens` / `no_tokens` of the prompt
YAML). When neither branch's first token is among the tokens the backend reports, the score is
NaN and the reason is recorded.

The score does not depend on the answer (`answer_independent`): in a trace it is computed once
per example, model and options, and shared by every composition.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from verirag.awf.passages import prompt_passages
from verirag.awf.predictors._yes_no import branch_probability
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, failed_request
from verirag.awf.registry import register
from verirag.errors import VeriragError
from verirag.llm.base import LLM, NEXT_TOKEN
from verirag.prompts import DEFAULT_LAYOUT, check_layout, load_prompt
from verirag.types import Passage


@register("predictor", "pre_answering")
class PreAnsweringPredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = (NEXT_TOKEN,)
    answer_independent = True  # one request per example, shared by every generator

    def __init__(self, llm: LLM, *, top_k: int = 20, layout: str = DEFAULT_LAYOUT):
        llm.require(*self.needs)
        self.llm = llm
        self.top_k = top_k
        self.layout = check_layout(layout)
        self.prompt = load_prompt("pre_answering", layout)
        self.yes_tokens = tuple(self.prompt.extra.get("yes_tokens", ("yes",)))
        self.no_tokens = tuple(self.prompt.extra.get("no_tokens", ("i", "no")))
        self.name = f"pre_answering[{llm.model_id}]"

    def messages(self, question: str, passages: Sequence[Passage]) -> list[dict[str, str]]:
        text = prompt_passages(self.prompt, passages)
        return self.prompt.messages(question=question.strip(), passages=text)

    def verify(self, question: str, answer: str = "", passages: Sequence[Passage] = ()) -> Verification:
        """`answer` is ignored: the decision is taken before answering."""
        if not passages:
            return Verification(score=math.nan, error="no passages: nothing to predict answerability from")
        try:
            lps = self.llm.next_token_logprobs(
                self.messages(question, passages), top_k=self.top_k, candidates=("Yes", "I", "No")
            )
        except VeriragError as e:  # recorded (e.g. prompt too long); an outage is carried, not scored
            return failed_request("pre-answering request", e, len(passages))
        score, _raw, error = branch_probability(lps, self.yes_tokens, self.no_tokens)
        return Verification(score=score, per_passage=[None] * len(passages), error=error)
