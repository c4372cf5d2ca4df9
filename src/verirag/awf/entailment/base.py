"""The entailment interface shared by NLI classifiers and LLM judges."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from verirag.awf.component import Component


@dataclass
class Judgement:
    """P(entailment) for one (premise, hypothesis) pair.

    `prob` is NaN when the backend could not produce a score; `error` then says why, so the
    caller records the failure instead of averaging it away.
    """

    prob: float
    error: str | None = None
    raw: dict | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and not math.isnan(self.prob)


class EntailmentModel(Component, ABC):
    kind = "entailment"
    name = ""

    @abstractmethod
    def max_premise_words(self, hypothesis: str) -> int:
        """Longest premise (in words) that fits beside `hypothesis`; longer ones are chunked."""

    @abstractmethod
    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[Judgement]:
        """One Judgement per (premise, hypothesis) pair, in order."""
