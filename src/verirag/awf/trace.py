"""The per-example trace: every quantity a method needs is computed at most once.

Methods and predictors do not repeat each other's LLM requests; they ask the trace for a
quantity by its key, and the first request computes it. A key is derived, never hand-written
(`quantity_key`): the component that computes it, the fingerprint of the model it ran on, the
options that change its output, and the passages (and answer) it read. So two models or two
option sets never share a value, and equal work is never done twice.

A failure is remembered like a value: asked again, the trace raises the same error without a
second backend request. Each quantity remembers its own cost (the requests made while computing
it, not those of quantities it asked for in turn), so `attribute()` can state the full cost of what
a method used, whether computed for it or found in the trace, and how much of it was shared.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from verirag.llm.usage import Usage, metering
from verirag.types import Passage


def passages_digest(passages: Sequence[Passage]) -> str:
    blob = json.dumps([[p.id, p.title, p.text] for p in passages], ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def quantity_key(
    component: str, *, model: str = "", identity: str = "", passages: Sequence[Passage] = (), **inputs: Any
) -> str:
    """ "component|model|digest": the digest covers the component's identity (options, prompts,
    model: `Component.digest`), the passages read and any other input (e.g. the answer a
    predictor judged). The readable head says what computed it."""
    body = json.dumps(
        {"model": model, "identity": identity, "passages": passages_digest(passages), "inputs": inputs},
        sort_keys=True,
        default=str,
        ensure_ascii=False,
    )
    return f"{component}|{model[:16]}|{hashlib.sha256(body.encode('utf-8')).hexdigest()[:16]}"


@dataclass
class Quantity:
    """A computed value, or the error computing it raised, with what it cost."""

    key: str
    value: Any = None
    error: BaseException | None = None
    cost: Usage = field(default_factory=Usage)
    seconds: float = 0.0


@dataclass
class Attribution:
    """What one method used of a trace (see `Trace.attribute`).

    `used` keys every quantity it read (in order); `computed` those it computed itself; `direct`
    the requests it made outside any quantity. `cost` = direct + the cost of every quantity used;
    `shared` = the cost of those it found already computed; `spent` = cost - shared."""

    trace: Trace
    used: list[str] = field(default_factory=list)
    computed: list[str] = field(default_factory=list)
    direct: Usage = field(default_factory=Usage)

    def _sum(self, keys) -> Usage:
        total = Usage()
        for k in keys:
            total += self.trace.quantities[k].cost
        return total

    @property
    def cost(self) -> Usage:
        total = self._sum(self.used)
        total += self.direct
        return total

    @property
    def shared(self) -> Usage:
        return self._sum(k for k in self.used if k not in self.computed)

    @property
    def spent(self) -> Usage:
        total = self._sum(self.computed)
        total += self.direct
        return total

    def seconds(self, prefix: str = "") -> float:
        """Compute time of the used quantities whose key starts with `prefix`."""
        return sum(self.trace.quantities[k].seconds for k in self.used if k.startswith(prefix))


@dataclass
class Trace:
    """The work done for one (question, passages) pair, keyed by derived quantity keys.
    `retrieval_scores[i]`: the retriever's score of passages[i], where a retriever chose them
    (None for passages given with the question); the answer's signals read them."""

    question: str
    passages: Sequence[Passage]
    quantities: dict[str, Quantity] = field(default_factory=dict)
    computed: list[str] = field(default_factory=list)  # in order, for inspection and tests
    on_compute: Callable[[str], None] | None = field(default=None, repr=False)  # told each stage as it starts
    retrieval_scores: Sequence[float] | None = None
    _attributions: list[Attribution] = field(default_factory=list, repr=False)

    def get(self, key: str, compute: Callable[[], Any], *, stage: str = "") -> Any:
        """The value of `key`, computing it with `compute()` only the first time; an error
        raised by `compute` is raised again on every later request, without recomputing.
        `on_compute` is told `stage` (what a user sees; the key when there is none) as it starts."""
        q = self.quantities.get(key)
        if q is None:
            q = Quantity(key)
            if self.on_compute is not None:
                self.on_compute(stage or key)
            t0 = time.perf_counter()
            with metering(q.cost):
                try:
                    q.value = compute()
                except Exception as e:
                    q.error = e
            q.seconds = time.perf_counter() - t0
            self.quantities[key] = q
            self.computed.append(key)
            for a in self._attributions:
                a.computed.append(key)
        for a in self._attributions:
            if key not in a.used:
                a.used.append(key)
        if q.error is not None:
            raise q.error
        return q.value

    @property
    def values(self) -> dict[str, Any]:
        return {k: q.value for k, q in self.quantities.items() if q.error is None}

    def answer(self, generator) -> Any:
        """The Answer of `generator` (an AnswerGenerator) for this example, generated once."""
        return generator.compute(self, lambda: generator.answer(self.question, self.passages))

    @contextmanager
    def attribute(self) -> Iterator[Attribution]:
        """Record what the block uses of this trace, and the requests it makes directly."""
        a = Attribution(self)
        self._attributions.append(a)
        try:
            with metering(a.direct):
                yield a
        finally:
            self._attributions.remove(a)
