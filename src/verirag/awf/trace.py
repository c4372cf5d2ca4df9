"""The per-example trace: every quantity a method needs is computed at most once.

Methods and predictors do not call each other's LLM requests directly; they ask the trace for a
named quantity ("answer:vanilla", "answer:no_context", "entailment:vanilla", ...). The first
request computes it, later requests (from any predictor) reuse it. So running eight predictors
over one generator's answer costs one generation plus each predictor's own scoring.

Predictors declare what they need in `needs` (capability names of `verirag.llm.base`, such as
NEXT_TOKEN or SCORE), and the method checks them against the backend at construction time.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from verirag.types import Passage


@dataclass
class Trace:
    """The work done for one (question, passages) pair, keyed by quantity name."""

    question: str
    passages: Sequence[Passage]
    values: dict[str, Any] = field(default_factory=dict)
    computed: list[str] = field(default_factory=list)  # in order, for inspection and tests

    def get(self, key: str, compute: Callable[[], Any]) -> Any:
        """The value of `key`, computing it with `compute()` only the first time."""
        if key not in self.values:
            self.values[key] = compute()
            self.computed.append(key)
        return self.values[key]

    def answer(self, generator) -> Any:
        """The Answer of `generator` (an AnswerGenerator) for this example, generated once."""
        return self.get(f"answer:{generator.registry_name}",
                        lambda: generator.answer(self.question, self.passages))
