"""Shared by the predictors that read a yes/no decision from first-token probabilities."""
from __future__ import annotations

from collections.abc import Sequence

from verirag.metrics.judges import yes_probability
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
    """(P(yes) / (P(yes) + P(no)), raw masses, error) over the branch tokens (`yes_probability`)."""
    return yes_probability(logprobs, {"yes": tuple(yes), "no": tuple(no)})
