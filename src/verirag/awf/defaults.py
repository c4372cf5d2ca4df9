"""The one default: the method that answers and verifies when the user names none.

Every entry point reads it from here, through the answer spec's one `resolve()`
(`verirag.awf.answer_spec`): `Pipeline` and `Verifier` in Python, `verirag ask`, `verirag verify`,
`/v1/ask`, `/v1/verify`, the web page and both framework integrations; each reports the method it
used (`method` in every JSON result).

It is the trained verifier shipped in the package (`verirag.learned.shipped`): it judges an
answer in about 0.1 s with no LLM call, so verifying never loads a generator. On the default
model's own answers it is not shown below per-passage NLI (AUROC 0.692 vs 0.733, paired -0.041
[-0.144, 0.066]); on other LLMs' answers (the dev set) NLI leads, most of it on conversational
follow-ups (-0.046 [-0.157, 0.071] overall), and on claims about a kind of document it never
trained on the verifier leads (+0.142 [0.039, 0.240]), at about 1/200 of NLI's cost
(docs/results/cascade.md). `vanilla+nli` is one option away (`method="vanilla+nli"`, `--method`,
`--judge`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_METHOD = "vanilla+verifier"
# The method that uses an entailment judge: what `--judge` selects when no method is named, and
# what error messages suggest to a user whose method cannot verify a given answer.
JUDGED_METHOD = "vanilla+nli"


def judged_method(method: str | None, judge: str | None, default: str = DEFAULT_METHOD) -> str:
    """The method a (method, judge) choice runs, the same at every door (`ask`, `Verifier`,
    `verirag verify`, `serve`'s /v1/ask and /v1/verify): a named method stands (a judge it cannot
    use is its builder's InputError); none named, a judge selects JUDGED_METHOD, the method that
    uses one; neither, `default`."""
    if method:
        return named_by_judge(method)
    return JUDGED_METHOD if judge else default


VERIFY_GENERATOR = "vanilla"  # the generator a judge's name is read with: verifying a given answer generates nothing


def named_by_judge(method: str) -> str:
    """A method named by what judges: a predictor's name alone ("verifier", "nli(premise=evidence)",
    "cascade") is that predictor after the plain generator ("vanilla+verifier", ...). Verifying a
    given answer runs no generator, so "vanilla+verifier" and "instructrag+verifier" verify alike;
    the judge is the name that says what happens. Any other name stands."""
    from verirag.awf.registry import names

    head = method.strip().split("(", 1)[0].strip()
    if "+" not in head and head in names("predictor"):
        return f"{VERIFY_GENERATOR}+{method.strip()}"
    return method


def judge_name(method: str) -> str | None:
    """The name by what judges of a method whose generator is the plain one ("vanilla+nli" ->
    "nli"); None for another generator or a unified method."""
    generator, plus, predictor = method.partition("+")
    return predictor if plus and generator == VERIFY_GENERATOR else None


# ---- the rule that picks the verify default (issue 36, item 5) --------------------------------------
# A candidate is level with the reference when the lower bound of its paired AUROC interval minus the
# reference's is above -LEVEL_MARGIN, and cheap when its mean seconds per answer are at most
# CHEAP_SHARE of the reference's.
REFERENCE = JUDGED_METHOD
LEVEL_MARGIN = 0.03
CHEAP_SHARE = 1 / 5


@dataclass(frozen=True)
class Measured:
    """One candidate on one evaluation set: its AUROC, its mean seconds per answer, and the lower
    bound of the paired 95% interval of its AUROC minus the reference's (None for the reference)."""

    method: str
    dataset: str
    auroc: float
    seconds: float
    minus_reference_low: float | None = None


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
