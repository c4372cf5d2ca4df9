"""Entailment backends: P(premise entails hypothesis). Importing registers them."""

from verirag.awf.entailment.base import EntailmentModel, Judgement
from verirag.awf.entailment.hf_nli import HFNLIEntailment
from verirag.awf.entailment.llm_judge import LLMJudgeEntailment

__all__ = ["EntailmentModel", "HFNLIEntailment", "Judgement", "LLMJudgeEntailment"]
