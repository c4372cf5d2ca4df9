"""What to do with an answer once its faithfulness score is known (AwF, section 6)."""
from __future__ import annotations

import math

ANSWERED = "answered"
ABSTAINED = "abstained"
FALLBACK = "fallback"

# Below the threshold: "abstain" says so; "no-rag" answers again without the passages
# (the retrieved ones are likely irrelevant and would only distract the model).
FALLBACKS = ("abstain", "no-rag")

ABSTENTION_TEXT = "I don't know: the retrieved passages do not support an answer."


def decide(score: float, threshold: float, fallback: str = "abstain") -> str:
    """The action for `score`: answered when score >= threshold, else the fallback's action.

    A NaN score (the verifier failed) never counts as supported.
    """
    if fallback not in FALLBACKS:
        raise ValueError(f"unknown fallback {fallback!r}; choose one of {', '.join(FALLBACKS)}")
    if not math.isnan(score) and score >= threshold:
        return ANSWERED
    return FALLBACK if fallback == "no-rag" else ABSTAINED
