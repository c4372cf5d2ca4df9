"""The output contract every AwF method honours: M(q, P) = (answer, score)."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from verirag.awf.component import Component
from verirag.awf.trace import Trace
from verirag.errors import VeriragError, is_outage
from verirag.types import CascadeDecision


@dataclass
class MethodOutput:
    """An answer and its faithfulness score.

    `score` is in [0, 1]; for hard-label methods (`hard=True`) it is exactly 0.0 or 1.0.
    `error` says why a part failed (e.g. unparseable output); such outputs still count in every
    denominator: their score is 0.0 and `answer` keeps whatever text there was. `failure` is the
    exception when a request failed; a BackendError there is an outage (`outage`), which the
    pipeline raises instead of acting on the score. `details` holds method-specific intermediate
    values (raw text, per-passage scores, perplexities, ...) for the records; what the answer path
    reads is typed: `per_passage` (each passage's support, None where not judged), `best` (the
    index of the supporting passage), `sentences` (a sentence-level verifier's judgements), the
    predictor's `warnings` and the method's own `timings` split.
    """

    answer: str
    score: float
    hard: bool = False
    error: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    failure: VeriragError | None = None
    per_passage: list[float | None] | None = None
    best: int | None = None
    sentences: list[dict[str, Any]] | None = None
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # a composed method's generate / verify split
    cascade: CascadeDecision | None = None  # a cascade predictor's routing (verirag.types.CascadeDecision)

    @property
    def outage(self) -> bool:
        return is_outage(self.failure)

    def __post_init__(self):
        if math.isnan(self.score):
            self.score = 0.0
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score {self.score} outside [0, 1]")
        if self.hard and self.score not in (0.0, 1.0):
            raise ValueError(f"a hard-label method gave score {self.score}")


class AwFMethod(Component, ABC):
    """A method registered by name. `needs` lists the LLM capabilities it requires; the
    constructor checks them (llm.require) so a backend that lacks one fails at once."""

    kind = "method"
    hard = False
    needs: tuple[str, ...] = ()

    @abstractmethod
    def run(self, trace: Trace) -> MethodOutput:
        """Answer and score the example in `trace`, reusing what the trace already holds."""
