"""Verify many given answers at once: the same core as `Pipeline.verify`, the predictor run over all of
them in one call.

    results = pipeline.verify_many([VerifyItem(question, answer, passages), ...])

Each item is checked as `verify` checks it (`Pipeline.given_state`); the predictor then scores every
valid item in one `verify_batch` call (the trained verifier reads the (sentence, chunk) pairs of all
the answers together, sorted by length, in dynamically padded batches: `TrainedVerifier.support_many`;
other predictors score one answer after another); each item then goes through the answer core's
`VerifyGiven` (with its score already computed) and `AnswerRules`, as `verify` runs them. So a
result is `verify`'s result for the same item, up to float rounding of the scores (< 1e-5), and
only its `timings["verify"]` differs: it is the item's share of the batch's seconds (the batch's
time divided by its scored items), not a time of its own.

Results are in input order; an item that is bad input gets its InputError in its place (its
neighbours are verified); an outage (BackendError) raises, as in `verify`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from verirag.awf.core import AnswerCore, AnswerRules, VerifyGiven, verify_result
from verirag.awf.unverified import Verifiability
from verirag.errors import InputError, VeriragError
from verirag.types import Passage, VerifyResult

# Answers a caller verifies in one batched pass (`Verifier.verify_many`, `verirag verify LOG`): enough
# that their pairs fill long, evenly padded batches; few enough that progress is reported and a killed
# log run loses little (docs/results/verifier.md, "Batched verification").
VERIFY_BLOCK = 256
# A judge that scores one answer after another (an LLM judge: seconds an answer) gains nothing from a
# large block, and a block of 256 of them wrote nothing, and showed no progress, for up to an hour.
JUDGE_BLOCK = 8


def default_block(method: str) -> int:
    """The block a log run verifies answers given to `method` in: VERIFY_BLOCK when its predictor
    shares work across answers (overrides `verify_batch`: the trained verifier), else JUDGE_BLOCK.
    Decided from the registered classes, without loading a model."""
    from verirag.awf import registry
    from verirag.awf.defaults import given_answer_method
    from verirag.awf.predictors.base import FaithfulnessPredictor
    from verirag.awf.spec import MethodSpec, split_name

    unified, _, predictor = split_name(MethodSpec.parse(given_answer_method(method)).name)
    if unified:
        return JUDGE_BLOCK
    cls = registry.get("predictor", predictor)
    return VERIFY_BLOCK if cls.verify_batch is not FaithfulnessPredictor.verify_batch else JUDGE_BLOCK


@dataclass(frozen=True)
class VerifyItem:
    """One answer to verify: what `Pipeline.verify` takes (threshold None: the pipeline's)."""

    question: str
    answer: str
    passages: Sequence[Passage]
    history: Sequence[Any] | None = None
    threshold: Any = None


def verify_batch(
    pipeline, items: Sequence[VerifyItem], *, on_stage: Callable[[str], None] | None = None
) -> list[VerifyResult | VeriragError]:
    """Results of `items` with `pipeline`'s predictor (module doc); `on_stage(name)` before each
    phase (a service's cancel check)."""
    say = on_stage or (lambda _s: None)
    predictor = pipeline.answer_verifier()  # InputError for a method that cannot verify: the whole batch
    method_name = pipeline._answer_verifier[0]
    out: list[VerifyResult | VeriragError | None] = [None] * len(items)
    states, thresholds, where = [], [], []
    for i, item in enumerate(items):
        threshold = pipeline.config.threshold if item.threshold is None else item.threshold
        try:
            states.append(pipeline.given_state(item.question, item.answer, item.passages, threshold, item.history))
        except InputError as e:
            out[i] = e
            continue
        thresholds.append(threshold)
        where.append(i)
    say("verify")
    t0 = time.perf_counter()
    verifications = predictor.verify_batch([(s.in_context(), s.answer, s.passages.passages) for s in states])
    share = (time.perf_counter() - t0) / max(len(states), 1)
    say("rules")
    verifiable = Verifiability(english_only=predictor.english_only)
    for i, state, threshold, v in zip(where, states, thresholds, verifications):
        core = AnswerCore([VerifyGiven(predictor, method_name, given=(v, share)), AnswerRules(), verifiable])
        out[i] = verify_result(core.run(state), threshold)
    return out  # type: ignore[return-value]  # every place is filled
