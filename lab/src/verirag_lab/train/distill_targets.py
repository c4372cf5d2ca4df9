"""What the distilled answers teach (issue 47, item 1): the `distill` recipe's answers carry two
verdicts, the gold grade (`label`: right against the gold answers, with the evidence among the
passages) and the LLM judge's score (`judge`: nli over the verifier's evidence, P(supported)).
`verirag train verifier --distill-target` chooses which the verifier learns from:

- `gold`: the gold grade, as every other recipe's label (the default);
- `judge`: the judge's verdict at 0.5, as a hard label (the answers it could not score are dropped);
- `agree`: only the answers where the judge's verdict and the gold grade agree, with that label
  (the answers it could not score are dropped);
- `soft`: the judge's score as the training target (binary cross-entropy against a probability),
  the gold grade kept as the label that validation ranks against and that `balance` weighs by.

Only examples with a judge score or of the `distill` recipe change; every other recipe's pass as they
are. What was dropped is counted (`distill_target_counts`), never lost silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from verirag.errors import InputError
from verirag_lab.train.verifier_examples import VerifierExample

TARGETS = ("gold", "judge", "agree", "soft")
RECIPE = "distill"
JUDGE_THRESHOLD = 0.5  # the judge's P(supported) read as its verdict


def check_mode(mode: str) -> str:
    """`mode` when it is one of TARGETS, else an InputError naming the option."""
    if mode not in TARGETS:
        raise InputError(f"--distill-target must be one of {', '.join(TARGETS)}, got {mode!r}")
    return mode


def distill_targets(
    examples: Sequence[VerifierExample], mode: str = "gold"
) -> tuple[list[VerifierExample], dict[str, Any]]:
    """The examples as `mode` teaches them (module doc), and the counts of what it did."""
    check_mode(mode)
    out: list[VerifierExample] = []
    counts = {"mode": mode, "distilled": 0, "kept": 0, "no_judge_score": 0, "disagree": 0, "relabelled": 0}
    for e in examples:
        if e.recipe != RECIPE and e.judge is None:
            out.append(e)
            continue
        counts["distilled"] += 1
        if mode == "gold":
            out.append(e)
        elif e.judge is None:
            counts["no_judge_score"] += 1  # nothing to learn from this judge: dropped, counted
            continue
        elif not 0.0 <= e.judge <= 1.0:
            raise InputError(f"example {e.source or e.group}: a judge score must be in [0, 1], got {e.judge!r}")
        else:
            verdict = int(e.judge >= JUDGE_THRESHOLD)
            if mode == "judge":
                counts["relabelled"] += verdict != e.label
                out.append(replace(e, label=verdict, sentence_labels=None))
            elif mode == "agree":
                if verdict != e.label:
                    counts["disagree"] += 1
                    continue
                out.append(e)
            else:  # soft
                out.append(replace(e, target=float(e.judge), sentence_labels=None))
        counts["kept"] += 1
    return out, counts
