"""Trivial (AwF, section 4.2.2): predicts v = 1 for every answer.

Composed with a generator it is the generator alone ("vanilla" means "vanilla+trivial"): its
AwF-Recall is 1 and its precision the generator's faithfulness rate, the baseline every other
predictor must beat.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.predictors.base import FaithfulnessPredictor, Verification
from verirag.awf.registry import register
from verirag.types import Passage


@register("predictor", "trivial")
class TrivialPredictor(FaithfulnessPredictor):
    needs: tuple[str, ...] = ()

    def __init__(self, llm=None):
        if llm is not None:
            llm.require(*self.needs)
        self.name = "trivial"

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        return Verification(score=1.0, per_passage=[None] * len(passages))
