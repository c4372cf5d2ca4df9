"""Abstention: recognising "I don't know" answers, and the abstention rates P_IR and P_G.

Adlakha et al. (section 5.3) instruct the model to reply "I don't know" when the passages do not
answer the question and report the share of responses that *contain* "I don't know" or an
observed synonymous expression: P_IR over responses given irrelevant passages (higher is
better), P_G over responses given the gold passage (lower is better). AwF's Intrinsic Abstention
uses the token `__DONT_KNOW__` ("DONT KNOW").

`is_abstention` is a containment test with a list of regular expressions (`ABSTENTION_PATTERNS`)
over the lowercased text with typographic apostrophes made plain; callers may add their own.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np

__all__ = ["ABSTENTION_PATTERNS", "abstention_mask", "is_abstention", "p_g", "p_ir"]

_SUBJECT = r"(?:passages?|context|contexts|documents?|texts?|information|evidence|sources?|articles?)"
_VERB = r"(?:provide|contain|mention|include|specify|say|state|give|indicate|answer|have|offer|discuss)"

#: Regular expressions (searched, case-insensitive, in the lowercased response).
ABSTENTION_PATTERNS: tuple[str, ...] = (
    r"__dont_know__",
    r"\bdont[ _]know\b",
    r"\b(?:i|we) (?:really |simply |just )?(?:don'?t|do not|dont) know\b",
    r"\bi have no idea\b",
    r"\bno answer\b",
    r"\bunanswerable\b",
    r"\b(?:cannot|can'?t|can not|could not|couldn'?t|unable to|not able to|not possible to|"
    r"impossible to) (?:be )?(?:answer|determine|determined|answered|infer|inferred|say|tell|"
    r"provide an answer|find (?:the|an|any) answer)\b",
    r"\b(?:no|not enough|insufficient|not sufficient|no relevant|no specific) "
    r"(?:information|details|data|evidence|context)\b",
    rf"\b{_SUBJECT} (?:provided |given |above )?(?:does|do|did) not {_VERB}\b",
    rf"\b{_SUBJECT} (?:provided |given |above )?(?:doesn'?t|don'?t|didn'?t) {_VERB}\b",
    rf"\bnot (?:mentioned|provided|specified|stated|given|found|included|addressed|available) "
    rf"in (?:the |any of the )?(?:given |provided |above )?{_SUBJECT}\b",
    r"\bthere is no (?:mention|answer|information)\b",
    r"\bi (?:could not|couldn'?t|cannot|can'?t|was unable to) find\b",
    r"\b(?:i'?m sorry|i am sorry|i apologi[sz]e),? but\b",
    # a whole response of one uninformative word or two ("Unknown."): nothing is stated. "None" and
    # "nobody" stay answers (how many ...? none); so does "unknown" inside a sentence.
    r"^(?:unknown|not known|unclear|uncertain|n/?a|not (?:stated|mentioned|specified|given|available|provided)"
    r"|cannot say|can'?t say)[.!]?$",
)

_COMPILED = re.compile("|".join(f"(?:{p})" for p in ABSTENTION_PATTERNS))


def _prep(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").replace("\u2018", "'").lower().split())


def is_abstention(text: str | None, *, extra_patterns: Iterable[str] = ()) -> bool:
    """True if the response declines to answer ("I don't know", `__DONT_KNOW__`, "the passages
    do not provide information", "cannot be determined", "no answer", ...).

    An empty or missing response counts as an abstention (nothing was answered).
    """
    if text is None or not text.strip():
        return True
    t = _prep(text)
    if _COMPILED.search(t):
        return True
    return any(re.search(p, t) for p in extra_patterns)


def abstention_mask(texts: Sequence[str | None], **kw) -> np.ndarray:
    """Boolean array: `is_abstention` of each response."""
    return np.fromiter((is_abstention(t, **kw) for t in texts), dtype=bool, count=len(texts))


def _rate(texts: Sequence[str | None], subset: Sequence[bool] | np.ndarray | None, **kw) -> float:
    mask = abstention_mask(texts, **kw)
    if subset is not None:
        subset = np.asarray(subset, dtype=bool)
        if subset.shape != mask.shape:
            raise ValueError("subset mask and responses differ in length")
        mask = mask[subset]
    return float(mask.mean()) if mask.size else float("nan")


def p_ir(responses: Sequence[str | None], irrelevant: Sequence[bool] | np.ndarray | None = None, **kw) -> float:
    """P_IR = (1/|I|) sum_{i in I} 1[abstains(u_i)], I = items whose passages are irrelevant
    (all items when `irrelevant` is None). Higher is better. NaN when I is empty."""
    return _rate(responses, irrelevant, **kw)


def p_g(responses: Sequence[str | None], gold_present: Sequence[bool] | np.ndarray | None = None, **kw) -> float:
    """P_G = (1/|G|) sum_{i in G} 1[abstains(u_i)], G = items whose passages include the gold
    passage (all items when `gold_present` is None). Lower is better. NaN when G is empty."""
    return _rate(responses, gold_present, **kw)
