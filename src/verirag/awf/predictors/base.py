"""What every faithfulness predictor returns."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

from verirag.awf.component import Component
from verirag.errors import VeriragError
from verirag.types import CascadeDecision, Passage


@dataclass
class Verification:
    """The faithfulness score of one answer, with the support of each passage.

    `per_passage[i]` is the support score of passage i (None where it could not be judged, or was
    not read: nli over the evidence),
    `best` the index of the most supportive passage; `sentences` (predictors that judge the answer
    sentence by sentence) holds {text, score, supporting_passage (an id)} per answer sentence. `score` is NaN and `error` set when no
    passage could be judged at all; `failure` is the exception when a request failed (an outage
    when it is a BackendError: `verirag.errors.is_outage`); `warnings` lists partial failures.
    """

    score: float
    per_passage: list[float | None] = field(default_factory=list)
    best: int | None = None
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    failure: VeriragError | None = None
    sentences: list[dict] | None = None
    cascade: CascadeDecision | None = None  # a cascade's routing: which judge decided, scores, cost

    @property
    def ok(self) -> bool:
        return self.error is None and not math.isnan(self.score)


def invalid_input(answer: str, passages: Sequence[Passage]) -> Verification | None:
    """The recorded failure for inputs no predictor can score (no passages, empty answer)."""
    if not passages:
        return Verification(score=math.nan, error="no passages to verify the answer against")
    if not answer.strip():
        return Verification(score=math.nan, per_passage=[None] * len(passages), error="empty answer: nothing to verify")
    return None


def failed_request(what: str, error: VeriragError, n_passages: int) -> Verification:
    """The recorded failure of a predictor's request: no score, the message, the exception."""
    return Verification(
        score=math.nan,
        per_passage=[None] * n_passages,
        error=f"{what} failed: {type(error).__name__}: {error}",
        failure=error,
    )


class FaithfulnessPredictor(Component, ABC):
    """`answer_independent`: the score does not read the answer (computed once per example and
    shared by every generator); `uses_entailment`: judged by an entailment model (`--judge`);
    `continues_generation`: it reads the generator's conversation, not only the answer's text
    (self_check), so its value is keyed by the generation it continues; `uses_llm`: it calls the
    LLM it is built with (False: verifying a given answer loads no LLM at all); `english_only`: it
    was trained on English only, so an answer or passages in another language are `unverified`
    (`verirag.awf.unverified`; an LLM judge reads other languages)."""

    kind = "predictor"
    name = ""
    answer_independent = False
    uses_entailment = False
    continues_generation = False
    uses_llm = True
    english_only = False

    @abstractmethod
    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        """Score how well `passages` support `answer` to `question`."""

    def verify_batch(self, items: Sequence[tuple[str, str, Sequence[Passage]]]) -> list[Verification]:
        """`verify` of each (question, answer, passages), in order. A predictor that can share work
        across answers (the trained verifier: one batched pass over all their pairs) overrides it,
        with each result equal to `verify`'s."""
        return [self.verify(q, a, p) for q, a, p in items]

    def verify_answer(self, question: str, answer, passages: Sequence[Passage]) -> Verification:
        """Score a generator's Answer; predictors that read only its text use `verify`."""
        return self.verify(question, answer.text, passages)

    def verify_in(self, trace, answer) -> Verification:
        """Score a generator's Answer in its example's trace (`verirag.awf.trace.Trace`);
        predictors that read no more than the question and the passages use `verify_answer`."""
        return self.verify_answer(trace.question, answer, trace.passages)
