"""Shared by the predictors that read a yes/no decision from first-token probabilities."""
from __future__ import annotations

import math
from collections.abc import Sequence

from verirag.metrics.judges import yes_no_mass
from verirag.types import Passage


def numbered_passages(passages: Sequence[Passage], *, with_title: str, without_title: str) -> str:
    """Passages as "[1] ...", "[2] ..." (templates get `n`, `title`, `text`), blank-line separated."""
    parts = []
    for n, p in enumerate(passages, start=1):
        template = with_title if (p.title or "").strip() else without_title
        parts.append(template.format(n=n, title=(p.title or "").strip(), text=p.text.strip()))
    return "\n\n".join(parts)


def branch_probability(logprobs: dict[str, float], yes: Sequence[str], no: Sequence[str]
                       ) -> tuple[float, dict[str, float], str | None]:
    """(P(yes) / (P(yes) + P(no)), raw masses, error). NaN and an error when neither branch's
    first token is among the reported next-token candidates."""
    p_yes, p_no = yes_no_mass(logprobs, {"yes": tuple(yes), "no": tuple(no)})
    raw = {"p_yes": p_yes, "p_no": p_no}
    if p_yes + p_no <= 0.0:
        seen = ", ".join(sorted(logprobs)[:10]) or "nothing"
        return math.nan, raw, (f"neither branch token ({'/'.join(yes)} vs {'/'.join(no)}) among the "
                               f"next-token candidates (saw: {seen})")
    return p_yes / (p_yes + p_no), raw, None
