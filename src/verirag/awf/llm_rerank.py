"""LLM-rerank, CalibRAG's reranking baseline (after Sun et al., 2023): each retrieved document is
scored by the LLM's P(Yes) / (P(Yes) + P(No)) that it contains the answer (prompt `llm_rerank`),
one first-token request per document, and the documents are sorted by it. A document whose reply
gives neither token scores NaN and sorts last, with the count in `failures`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from verirag.awf.calibrag import document_text
from verirag.awf.predictors._yes_no import branch_probability
from verirag.errors import VeriragError
from verirag.llm.base import LLM, NEXT_TOKEN
from verirag.prompts import load_prompt
from verirag.types import ScoredPassage


class LLMRerank:
    def __init__(self, llm: LLM, *, top_k: int = 20):
        llm.require(NEXT_TOKEN)
        self.llm, self.top_k = llm, top_k
        self.prompt = load_prompt("llm_rerank")
        self.failures = 0

    def relevance(self, question: str, hit: ScoredPassage) -> float:
        title, text = document_text(hit.passage)
        if not text:
            return math.nan
        messages = self.prompt.messages(question=question, title=title or "untitled", text=text)
        try:
            lps = self.llm.next_token_logprobs(messages, top_k=self.top_k, candidates=("Yes", "No"))
        except VeriragError:
            return math.nan
        score, _raw, error = branch_probability(lps, ("yes",), ("no",))
        return math.nan if error else float(score)

    def rerank(self, question: str, hits: Sequence[ScoredPassage]) -> list[tuple[ScoredPassage, float]]:
        scored = [(h, self.relevance(question, h)) for h in hits]
        self.failures += sum(math.isnan(s) for _, s in scored)
        return sorted(scored, key=lambda hs: (math.isnan(hs[1]), -(0.0 if math.isnan(hs[1]) else hs[1]), hs[0].rank))
