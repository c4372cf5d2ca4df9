"""How many questions a paired "no loss" claim needs: the power of a non-inferiority bound.

Two arms answer the same questions (pruned and unpruned, one build and another); a question is
right in both, in neither, or in exactly one (discordant). The per-question difference is then +1,
-1 or 0, and the paired difference of accuracies has variance (discordant - difference**2) / n. A
rule such as issue 48's ("the lower bound of the paired 95% interval above -2 points") is met by a
lossless arm only when that interval is narrow enough: these say how often, and at what n.

Normal approximation, as for a paired (McNemar-type) comparison of proportions; the benchmarks'
intervals are bootstrap ones, which agree with it at these sizes (tests/test_metrics_power.py
checks both against simulation).
"""

from __future__ import annotations

import math
from statistics import NormalDist

_Z = NormalDist()


def _checked(discordant: float, margin: float, difference: float, confidence: float) -> float:
    if not 0 < discordant <= 1:
        raise ValueError(f"discordant must be a share in (0, 1], got {discordant}")
    if margin <= 0 or margin + difference <= 0:
        raise ValueError(f"the margin ({margin}) must be positive and above the true loss ({-difference})")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    variance = discordant - difference**2
    if variance <= 0:
        raise ValueError(f"a difference of {difference} cannot come from {discordant} discordant questions")
    return variance


def noninferiority_power(
    discordant: float, margin: float, n: int, *, difference: float = 0.0, confidence: float = 0.95
) -> float:
    """The probability that the lower bound of the two-sided `confidence` interval of (new - old)
    accuracy over `n` paired questions is above -`margin`, when the true difference is `difference`
    and a share `discordant` of the questions is right in exactly one arm."""
    variance = _checked(discordant, margin, difference, confidence)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    z = _Z.inv_cdf(1 - (1 - confidence) / 2)
    return _Z.cdf((margin + difference) * math.sqrt(n / variance) - z)


def noninferiority_n(
    discordant: float, margin: float, *, difference: float = 0.0, confidence: float = 0.95, power: float = 0.8
) -> int:
    """The fewest paired questions for which `noninferiority_power` reaches `power`."""
    variance = _checked(discordant, margin, difference, confidence)
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    z = _Z.inv_cdf(1 - (1 - confidence) / 2) + _Z.inv_cdf(power)
    return math.ceil(z * z * variance / (margin + difference) ** 2)
