"""K-Precision as a faithfulness predictor: a cheap lexical baseline (Adlakha et al.).

score = |u ∩ K| / |u|, the share of the answer's normalised tokens found in the passages
(all passages joined; `verirag.metrics.faithfulness.k_precision`). No model call. An empty
answer scores NaN with an error (nothing to verify), like the other predictors.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, invalid_input
from verirag.awf.registry import register
from verirag.metrics.faithfulness import k_precision
from verirag.types import Passage


@register("predictor", "k_precision")
class KPrecisionPredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = ()
    uses_llm = False

    def __init__(self, llm=None):
        if llm is not None:
            llm.require(*self.needs)
        self.name = "k_precision"

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        bad = invalid_input(answer, passages)
        if bad is not None:
            return bad
        per = [float(k_precision(answer, [p])) for p in passages]
        best = max(range(len(per)), key=lambda i: (per[i], -i))
        return Verification(score=float(k_precision(answer, passages)), per_passage=per, best=best)
