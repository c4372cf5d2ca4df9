"""Shared by the predictors that read a yes/no decision from first-token probabilities."""

from __future__ import annotations

from collections.abc import Sequence

from verirag.metrics.judges import yes_probability


def branch_probability(
    logprobs: dict[str, float], yes: Sequence[str], no: Sequence[str]
) -> tuple[float, dict[str, float], str | None]:
    """(P(yes) / (P(yes) + P(no)), raw masses, error) over the branch tokens (`yes_probability`)."""
    return yes_probability(logprobs, {"yes": tuple(yes), "no": tuple(no)})
