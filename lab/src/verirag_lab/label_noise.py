"""How much a benchmark's labels let a judge show: label noise estimated from repeated answers.

When several systems give the same answer to the same question, a consistent annotator gives those
answers the same correctness label. The share of such pairs with opposite labels estimates the
labels' flip rate, and the flip rate caps the AUROC any judge can reach against them.

Assumptions (stated where the numbers are used): each label is flipped independently with one rate
`e` whatever the answer (symmetric, independent noise); then two copies of one answer disagree with
probability d = 2 e (1 - e), so

    e = (1 - sqrt(1 - 2 d)) / 2                      (d <= 1/2; d >= 1/2 means labels carry nothing)

A perfect judge (it ranks every truly correct answer above every truly incorrect one) scored against
labels flipped at rate e, with an observed correct share q: the true correct share is
pi = (q - e) / (1 - 2 e); of the answers labelled correct a = pi (1 - e) / q are truly correct, of those
labelled incorrect b = (1 - pi) (1 - e) / (1 - q) truly incorrect, and its AUROC (ties count a half) is

    ceiling = a b + (a (1 - b) + (1 - a) b) / 2
"""

from __future__ import annotations

import math


def flip_rate_from_disagreement(disagreement: float) -> float:
    """The symmetric flip rate e whose two independent draws disagree with probability `disagreement`
    (module doc); 0.5 (labels independent of the answer) from 0.5 on."""
    if not 0.0 <= disagreement <= 1.0:
        raise ValueError(f"a disagreement share lies in [0, 1], got {disagreement}")
    if disagreement >= 0.5:
        return 0.5
    return (1.0 - math.sqrt(1.0 - 2.0 * disagreement)) / 2.0


def auroc_ceiling(correct_share: float, flip_rate: float) -> float:
    """The AUROC a perfect judge reaches against labels flipped at `flip_rate` whose observed
    correct share is `correct_share` (module doc); 0.5 when the flips leave nothing to rank, and nan
    when the two are inconsistent (the observed share would need a true share outside [0, 1])."""
    q, e = float(correct_share), float(flip_rate)
    if not (0.0 < q < 1.0 and 0.0 <= e <= 0.5):
        raise ValueError(f"need 0 < correct_share < 1 and 0 <= flip_rate <= 0.5, got {q}, {e}")
    if e == 0.5:
        return 0.5
    pi = (q - e) / (1.0 - 2.0 * e)
    if not 0.0 <= pi <= 1.0:
        return math.nan
    a = pi * (1.0 - e) / q
    b = (1.0 - pi) * (1.0 - e) / (1.0 - q)
    return a * b + (a * (1.0 - b) + (1.0 - a) * b) / 2.0
