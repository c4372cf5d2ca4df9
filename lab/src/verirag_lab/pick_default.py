"""The rule that picks the verify default (issue 36, item 5): research code, kept in the lab. The
product holds only its outcome, `verirag.awf.defaults.DEFAULT_METHOD`; `benchmarks/cascade.py`
applies the rule to measured scores and says which method it picks and why."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from verirag.awf.defaults import JUDGED_METHOD

# A candidate is level with the reference when the lower bound of its paired AUROC interval minus the
# reference's is above -LEVEL_MARGIN, and cheap when its mean seconds per answer are at most
# CHEAP_SHARE of the reference's.
REFERENCE = JUDGED_METHOD
LEVEL_MARGIN = 0.03
CHEAP_SHARE = 1 / 5


@dataclass(frozen=True)
class Measured:
    """One candidate on one evaluation set: its AUROC, its mean seconds per answer, and the lower
    bound of the paired 95% interval of its AUROC minus the reference's (None for the reference);
    for the answer default, also minus the judge's it is held level with (None where not measured)."""

    method: str
    dataset: str
    auroc: float
    seconds: float
    minus_reference_low: float | None = None
    minus_judge_low: float | None = None


def pick_verify_default(measured: Sequence[Measured], reference: str = REFERENCE) -> tuple[str, dict[str, str]]:
    """The verify default by the stated rule, and why each candidate was or was not taken.

    Every candidate must be measured on every evaluation set the reference is (the dev datasets, the
    own-answer runs, the held-out kind of document). A candidate other than the reference qualifies
    when on EVERY set it is level with the reference (paired lower bound above -LEVEL_MARGIN) and
    cheap (at most CHEAP_SHARE of the reference's seconds); the reference always qualifies. Of the
    qualifiers, the one with the best AUROC per second (mean AUROC over the sets / mean seconds) wins.
    """
    sets = {m.dataset for m in measured if m.method == reference}
    if not sets:
        raise ValueError(f"the reference {reference} is measured on no evaluation set")
    ref = {m.dataset: m for m in measured if m.method == reference}
    by_method: dict[str, dict[str, Measured]] = {}
    for m in measured:
        by_method.setdefault(m.method, {})[m.dataset] = m
    why: dict[str, str] = {}
    score: dict[str, float] = {}
    for method, rows in by_method.items():
        missing = sorted(sets - set(rows))
        if missing:
            why[method] = f"not measured on {', '.join(missing)}"
            continue
        if method != reference:
            behind = [d for d in sorted(sets) if _low(rows[d]) <= -LEVEL_MARGIN]
            dear = [d for d in sorted(sets) if rows[d].seconds > CHEAP_SHARE * ref[d].seconds]
            if behind or dear:
                why[method] = "; ".join(
                    ([f"not level with {reference} on {', '.join(behind)}"] if behind else [])
                    + ([f"over {CHEAP_SHARE:.0%} of its seconds on {', '.join(dear)}"] if dear else [])
                )
                continue
        auroc = sum(rows[d].auroc for d in sets) / len(sets)
        seconds = sum(rows[d].seconds for d in sets) / len(sets)
        score[method] = auroc / max(seconds, 1e-9)
        why[method] = f"qualifies: mean AUROC {auroc:.3f} at {seconds:.3g} s, {score[method]:.3g} AUROC/s"
    best = max(score, key=lambda k: (score[k], k == reference))
    return best, why


def _low(m: Measured) -> float:
    return -1.0 if m.minus_reference_low is None else m.minus_reference_low


def pick_answer_default(
    measured: Sequence[Measured], reference: str, judge: str | None = None, judge_seconds: float | None = None
) -> tuple[str, dict[str, str]]:
    """The default judge of the default model's own answers (issue 47), by a rule of the same shape:
    `reference` is today's judge (the verifier alone), the sets are the own-answer sets (NQ, HotpotQA,
    the conversational one). A candidate qualifies when it is measured on every set, on EVERY set is
    level with the reference (paired lower bound above -LEVEL_MARGIN) and, over the sets, above it in
    the mean AUROC; the reference always qualifies. Of the qualifiers the best mean AUROC wins (the
    reference on a tie).

    With `judge` (the LLM judge the goal holds the default level with: nli), cost is weighed too: a
    candidate's `seconds` are its seconds after an answer (a share of the generation's, as the
    distillation timed them; the generation's own signals and the verifier count as free), and one
    costing more than CHEAP_SHARE of the judge's does not qualify (the judge itself among them). Each
    qualifier's standing against the judge is said set by set (`minus_judge_low`); it is reported,
    not required, since a default that must match the judge when nothing cheap does would be the judge.
    The judge's seconds are `judge_seconds`, or else its most costly measured set's.
    """
    sets = {m.dataset for m in measured if m.method == reference}
    if not sets:
        raise ValueError(f"the reference {reference} is measured on no evaluation set")
    by_method: dict[str, dict[str, Measured]] = {}
    for m in measured:
        by_method.setdefault(m.method, {})[m.dataset] = m
    mean = {k: sum(rows[d].auroc for d in sets) / len(sets) for k, rows in by_method.items() if sets <= set(rows)}
    budget = _judge_budget(by_method, judge, judge_seconds)
    why: dict[str, str] = {}
    for method, rows in by_method.items():
        if method not in mean:
            why[method] = f"not measured on {', '.join(sorted(sets - set(rows)))}"
            continue
        behind = [d for d in sorted(sets) if method != reference and _low(rows[d]) <= -LEVEL_MARGIN]
        cost = max(rows[d].seconds for d in sets)
        if behind:
            why[method] = f"not level with {reference} on {', '.join(behind)}"
        elif method != reference and mean[method] <= mean[reference]:
            why[method] = f"mean AUROC {mean[method]:.3f}, not above {reference}'s {mean[reference]:.3f}"
        elif budget is not None and method != reference and cost > budget:
            why[method] = f"{cost:.3g} of a generation after an answer, over {CHEAP_SHARE:.0%} of {judge}'s"
        else:
            why[method] = f"qualifies: mean AUROC {mean[method]:.3f} over {len(sets)} sets" + _against(rows, judge)
    qualified = [k for k, w in why.items() if w.startswith("qualifies")]
    best = max(qualified, key=lambda k: (mean[k], k == reference))
    return best, why


def _judge_budget(by_method: dict[str, dict[str, Measured]], judge: str | None, seconds: float | None) -> float | None:
    """CHEAP_SHARE of the judge's seconds after an answer; None without a judge."""
    if judge is None:
        return None
    if seconds is not None:
        return CHEAP_SHARE * seconds
    if judge not in by_method:
        raise ValueError(f"the judge {judge} is measured on no evaluation set")
    return CHEAP_SHARE * max(m.seconds for m in by_method[judge].values())


def _against(rows: dict[str, Measured], judge: str | None) -> str:
    """ "; level with nli on A; not on B (-0.071); nli not measured on C" (empty without a judge)."""
    if judge is None:
        return ""
    level = [d for d, m in sorted(rows.items()) if m.minus_judge_low is not None and m.minus_judge_low > -LEVEL_MARGIN]
    short = [
        f"{d} ({m.minus_judge_low:+.3f})"
        for d, m in sorted(rows.items())
        if m.minus_judge_low is not None and m.minus_judge_low <= -LEVEL_MARGIN
    ]
    unmeasured = [d for d, m in sorted(rows.items()) if m.minus_judge_low is None]
    parts = [f"level with {judge} on {', '.join(level)}"] if level else []
    parts += [f"not level with {judge} on {', '.join(short)}"] if short else []
    parts += [f"{judge} not measured on {', '.join(unmeasured)}"] if unmeasured else []
    return "; " + "; ".join(parts)
