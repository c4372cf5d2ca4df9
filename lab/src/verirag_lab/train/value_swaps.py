"""Changed-value negatives (issue 47, item 4): an answer that changes one number or date, one party
or one negation against its evidence must not pass.

`changed_copies(answer, passages, rng)` makes, per kind, one copy of a supported answer with one
thing the passages hold changed:

- number: a year, a date's year or a number of the answer that the passages hold, moved
  (`verirag_lab.train.verifier_labels.spans.perturb`: "1972" -> "1966", "seven" -> "four");
- party: a name of the answer that the passages hold (two or more capitalised words), replaced by
  another such name from the same passages (only its role is wrong: the passages still mention it);
- negation: "not" after the answer's first auxiliary verb ("was born" -> "was not born"), or its
  "not" taken away.

`benchmarks/verifier_swaps.py` measures a judge on these copies of held-out answers;
`value_swap_negatives` (`verirag train verifier --value-swaps SHARE`) adds them, labelled
unsupported, to training examples of any recipe: a seeded share of the supported examples each
gives one copy of one kind it can be changed in (the kinds in turn, so each is taught alike).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace

from verirag.errors import InputError
from verirag_lab.train.verifier_examples import SUPPORTED, UNSUPPORTED, VerifierExample

KINDS = ("number", "party", "negation")
RECIPE = "value_swap"  # the added negatives' recipe (one label: `recipe_weights` leaves it at 1)
_AUX = re.compile(r"\b(is|was|are|were|has|have|had|does|did|can|could|will|would|should|must)\b( not\b)?", re.I)


def negated(answer: str) -> str | None:
    """The answer with its first auxiliary verb negated, or its negation taken away; None when it
    has no auxiliary verb."""
    m = _AUX.search(answer)
    if m is None:
        return None
    if m.group(2):  # "was not" -> "was"
        return answer[: m.end(1)] + answer[m.end(2) :]
    return answer[: m.end(1)] + " not" + answer[m.end(1) :]


def is_party(name: str) -> bool:
    """Two or more capitalised words: a single capitalised word is as often a sentence's first
    word, a concept or a title as a name."""
    words = name.split()
    return len(words) >= 2 and all(w[:1].isupper() for w in words)


def changed_copies(answer: str, passages: Sequence[str], rng: random.Random) -> dict[str, str]:
    """Per kind, one changed copy of `answer` (kinds with nothing to change are left out)."""
    from verirag_lab.train.verifier_labels.spans import find_spans, perturb, too_close

    text = " ".join(passages)
    low = text.lower()
    out: dict[str, str] = {}
    held = [s for s in find_spans(answer) if s.text.lower() in low]
    numbers = [s for s in held if s.kind in ("year", "date", "number")]
    for span in rng.sample(numbers, len(numbers)):
        new = perturb(span, rng)
        if new and new.lower() not in low:
            out["number"] = answer[: span.start] + new + answer[span.end :]
            break
    names = [s for s in held if s.kind == "name" and is_party(s.text)]
    others = sorted({s.text for s in find_spans(text, ("name",)) if is_party(s.text)})
    for span in rng.sample(names, len(names)):
        choices = [o for o in others if not too_close(span.text, o, "name") and o.lower() not in answer.lower()]
        if choices:
            out["party"] = answer[: span.start] + rng.choice(choices) + answer[span.end :]
            break
    neg = negated(answer)
    if neg is not None:
        out["negation"] = neg
    return out


def value_swap_negatives(
    examples: Sequence[VerifierExample], share: float, seed: int = 0, kinds: Sequence[str] = KINDS
) -> list[VerifierExample]:
    """For a seeded `share` of the supported examples (with passages), one copy changed in one of
    `kinds` (module doc), labelled unsupported, in the example's question group (so validation never
    cuts a pair) and with its history. The kind is the next of `kinds` the example can be changed in,
    in turn over the examples, so no kind is taught only where it is easy; a kind named twice is
    taken twice a round (taught about twice as often where examples allow it)."""
    if not 0.0 <= share <= 1.0:
        raise InputError(f"--value-swaps must be a share in [0, 1], got {share}")
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise InputError(f"--value-swap-kinds takes some of {', '.join(KINDS)}, got {', '.join(kinds) or 'none'}")
    out: list[VerifierExample] = []
    turn = 0
    for e in examples:
        if e.label != SUPPORTED or not e.passages:
            continue
        rng = random.Random(f"{seed}:{e.source or e.group}:{e.answer}")
        if rng.random() >= share:
            continue
        copies = changed_copies(e.answer, e.passages, rng)
        at = next((i % len(kinds) for i in range(turn, turn + len(kinds)) if kinds[i % len(kinds)] in copies), None)
        if at is None:
            continue
        kind, turn = kinds[at], (at + 1) % len(kinds)
        out.append(
            replace(
                e,
                answer=copies[kind],
                label=UNSUPPORTED,
                recipe=RECIPE,
                sentence_labels=None,
                source=f"{e.source or e.group}#{RECIPE}:{kind}",
                judge=None,  # the judge read the answer before it was changed
                target=None,
                changed_from=e.answer,
            )
        )
    return out
