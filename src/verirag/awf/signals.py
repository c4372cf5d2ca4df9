"""What the pipeline knows about its own answer at no model cost: the signals a stacked verifier
combines with the predictors' scores (issue 27, item 5).

- `logprob_min`, `logprob_mean`, `logprob_sum`: the generated reply's token log-probabilities
  (the least likely token, the mean, and the greedy sequence's log-likelihood), read from the
  generation itself: generators ask for them whenever the backend has LOGPROBS
  (`verirag.awf.generators.base.AnswerGenerator.generate`), so they cost one log-softmax per token.
  They cover the whole reply the model wrote (a structured generator's reasoning too).
- `k_precision`: the share of the answer's normalised tokens found in the passages
  (`verirag.metrics.faithfulness.k_precision`, the `k_precision` predictor's score).
- `retrieval_top`, `retrieval_mean`: the retriever's scores of the passages the answer was made
  from (the best, the mean), where a retriever chose them (the trace's `retrieval_scores`).

A signal that cannot be computed is absent from `values` and named in `missing` with the reason
(no logprobs from this backend, an empty answer, passages that no retriever scored), so a reader
can tell a missing value from a value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from verirag.metrics.faithfulness import k_precision
from verirag.types import Generation, Passage

LOGPROB_SIGNALS = ("logprob_min", "logprob_mean", "logprob_sum")
RETRIEVAL_SIGNALS = ("retrieval_top", "retrieval_mean")
SIGNALS = (*LOGPROB_SIGNALS, "k_precision", *RETRIEVAL_SIGNALS)


@dataclass
class AnswerSignals:
    values: dict[str, float] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # signal -> why it has no value

    def to_dict(self) -> dict[str, dict]:
        return {"values": dict(self.values), "missing": dict(self.missing)}


def answer_signals(
    answer: str, generation: Generation | None, passages: Sequence[Passage], retrieval_scores: Sequence[float] | None
) -> AnswerSignals:
    """The signals of one answer (see the module docstring)."""
    out = AnswerSignals()
    logprobs = [t.logprob for t in generation.tokens] if generation is not None else []
    if not answer.strip():
        why = "the answer is empty"
        out.missing.update(dict.fromkeys((*LOGPROB_SIGNALS, "k_precision"), why))
    else:
        if logprobs and all(math.isfinite(x) for x in logprobs):
            total = float(sum(logprobs))
            out.values.update(logprob_min=float(min(logprobs)), logprob_mean=total / len(logprobs), logprob_sum=total)
        else:
            why = (
                "the answer did not come from a generation of this process"
                if generation is None
                else "the backend gave no token log-probabilities for the answer"
                if not logprobs
                else "the backend gave a non-finite token log-probability"
            )
            out.missing.update(dict.fromkeys(LOGPROB_SIGNALS, why))
        if passages:
            out.values["k_precision"] = float(k_precision(answer, passages))
        else:
            out.missing["k_precision"] = "no passages"
    scores = [float(s) for s in retrieval_scores or ()]
    if scores and len(scores) == len(passages) and all(math.isfinite(s) for s in scores):
        out.values.update(retrieval_top=max(scores), retrieval_mean=sum(scores) / len(scores))
    else:
        why = (
            "no retriever scored the passages: they came with the question"
            if not scores
            else f"{len(scores)} retrieval scores for {len(passages)} passages"
            if len(scores) != len(passages)
            else "a retrieval score is not finite"
        )
        out.missing.update(dict.fromkeys(RETRIEVAL_SIGNALS, why))
    return out
