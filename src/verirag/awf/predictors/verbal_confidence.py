"""Verbalized confidence, CalibRAG's uncertainty baselines (Jang et al., section 4, appendix E
tables 6-7): after the generator has answered, the same conversation asks how sure the model is.

- `verbal_number`: a whole number from 0 to 10 (prompt `verbal_number`), read as value / 10;
- `verbal_linguistic`: one of eleven certainty terms (prompt `verbal_linguistic`), mapped to
  numbers by `verirag.awf.calibrag.LINGUISTIC_SCALE` (the mapping is stated there).

The paper's baselines read the top-1 document: `vanilla+verbal_number` with k = 1. The paper
fine-tunes these with LoRA (Number-LoRA, Linguistic-LoRA); here they are prompted zero-shot, which
is what a CPU affords. A reply without a readable confidence is a recorded failure (score NaN ->
0 with the error), never a guess. The score names no passage: the supporting passage is
attributed lexically, as for self_check.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from verirag.awf.calibrag import Guidance, verbal_confidence
from verirag.awf.generators.base import Answer
from verirag.awf.predictors._conversation import ConversationPredictor
from verirag.awf.registry import register
from verirag.llm.base import LLM
from verirag.prompts import DEFAULT_LAYOUT, check_layout
from verirag.types import Passage


class _VerbalConfidence(ConversationPredictor):
    scale = ""
    request_name = "confidence request"

    def __init__(self, llm: LLM, *, max_tokens: int = 6, layout: str = DEFAULT_LAYOUT):
        self.llm = llm
        self.max_tokens = max_tokens
        self.layout = check_layout(layout)  # of the Vanilla conversation `verify` builds for an outside answer
        self.name = f"{self.registry_name}[{llm.model_id}]"

    def conversation_score(self, answer: Answer, passages: Sequence[Passage]) -> tuple[float, str | None]:
        gen = answer.generation
        reply: dict = {"role": "assistant", "content": gen.text if gen is not None else answer.text}
        if gen is not None and gen.token_ids:
            reply["token_ids"] = list(gen.token_ids)
        c = verbal_confidence(
            self.llm, Guidance(answer.text, [*answer.prompt, reply]), scale=self.scale, max_tokens=self.max_tokens
        )
        return (math.nan, c.error) if c.value is None else (c.value, None)


@register("predictor", "verbal_number")
class VerbalNumberPredictor(_VerbalConfidence):
    scale = "number"


@register("predictor", "verbal_linguistic")
class VerbalLinguisticPredictor(_VerbalConfidence):
    scale = "linguistic"
