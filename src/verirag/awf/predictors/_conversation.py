"""What predictors that read the generator's conversation share (self_check, lookback): input
checks, failure recording, the Vanilla conversation for an outside answer, and lexical attribution
of the supporting passage (the score itself names no passage)."""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer
from verirag.awf.generators.vanilla import VanillaGenerator
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, failed_request, invalid_input
from verirag.awf.predictors.k_precision import KPrecisionPredictor
from verirag.errors import VeriragError
from verirag.types import Passage


class ConversationPredictor(FaithfulnessPredictor):
    continues_generation = True
    request_name = "request"  # names what failed in the recorded error
    layout: str

    def conversation_score(self, answer: Answer, passages: Sequence[Passage]) -> tuple[float, str | None]:
        """(score, error) of an answer read in its own conversation; may raise VeriragError."""
        raise NotImplementedError

    def verify_answer(self, question: str, answer: Answer, passages: Sequence[Passage]) -> Verification:
        bad = invalid_input(answer.text, passages)
        if bad is not None:
            return bad
        if not answer.prompt:
            return self.verify(question, answer.text, passages)
        try:
            score, error = self.conversation_score(answer, passages)
        except VeriragError as e:
            return failed_request(self.request_name, e, len(passages))
        lexical = KPrecisionPredictor().verify(question, answer.text, passages)
        return Verification(score=score, per_passage=lexical.per_passage, best=lexical.best, error=error)

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        prompt = VanillaGenerator.prompt_messages(question, passages, self.layout)
        return self.verify_answer(question, Answer(text=answer, prompt=prompt), passages)
