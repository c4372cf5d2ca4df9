"""Reading an LLM judge's verdict (pure functions over its output): the judges themselves, which
call an LLM, are `verirag.evaluation.judges` (Adlakha et al.'s GPT4-Eval / LLMCritic).

Two ways to read a verdict:
- mode="generate" (default, any backend): generate a few tokens and parse yes / no
  (`parse_yes_no`); score = 1.0 / 0.0.
- mode="logprobs" (backends with next-token logprobs): score = P(yes) / (P(yes) + P(no)) from the
  first reply token; verdict = score >= 0.5.

Every call keeps its raw output (the generated text, or the yes/no probabilities). A verdict
that cannot be read is recorded as `verdict=None` with a `reason`, never dropped and never
counted as "no"; `score_or_nan` makes such records NaN for aggregation.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["JudgeVerdict", "parse_yes_no", "score_or_nan", "yes_probability"]


@dataclass
class JudgeVerdict:
    """One judgement.

    verdict: True / False, or None when it could not be read (see `reason`).
    score: 1.0 / 0.0 (generate mode) or P(yes) (logprobs mode); None when unreadable.
    raw: the judge's raw output per call (text, or {"p_yes", "p_no"}), in call order.
    reason: how the verdict was read, or why it could not be.
    calls: per-reference verdicts (correctness judge asks once per reference answer).
    """

    verdict: bool | None
    score: float | None
    raw: list[Any] = field(default_factory=list)
    reason: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)

    @property
    def parsed(self) -> bool:
        return self.verdict is not None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def score_or_nan(v: JudgeVerdict) -> float:
    """The verdict's score, NaN when unreadable (so that means and correlations skip it)."""
    return float("nan") if v.score is None else float(v.score)


# --------------------------------------------------------------------------- parsing
_PREFIX = re.compile(
    r"^\s*(?:comparegpt(?: response)?|response|answer|verdict|final answer|output|"
    r"assistant)\s*[:\-]\s*",
    re.I,
)
_FIRST_WORD = {
    "yes": True,
    "y": True,
    "true": True,
    "correct": True,
    "supported": True,
    "faithful": True,
    "no": False,
    "n": False,
    "false": False,
    "incorrect": False,
    "unsupported": False,
    "unfaithful": False,
    "wrong": False,
}
_YES = re.compile(r"\byes\b", re.I)
_NO = re.compile(r"\bno\b", re.I)


def parse_yes_no(text: str | None) -> tuple[bool | None, str]:
    """Read a yes/no verdict from a judge's reply; returns (verdict or None, reason).

    Rules, in order: strip markup (`*`, quotes, brackets) and a leading label such as
    "CompareGPT response:" or "Answer:"; the first word decides if it is yes / no (or
    true / false, correct / incorrect, supported / unsupported); "not correct" / "not supported"
    at the start mean no; otherwise the reply is read only if exactly one of the words
    "yes" / "no" occurs in it. Anything else (empty, both words, neither) is unreadable.
    """
    if text is None or not text.strip():
        return None, "unparseable: empty output"
    t = text.strip()
    for _ in range(3):
        t = _PREFIX.sub("", t)
        t = t.lstrip(" \t\n*_`\"'([{<#>").strip()
    low = t.lower()
    if re.match(r"^not\s+(?:correct|supported|faithful|true)\b", low):
        return False, "parsed: leading 'not ...'"
    m = re.match(r"^([a-z]+)", low)
    if m and m.group(1) in _FIRST_WORD:
        return _FIRST_WORD[m.group(1)], f"parsed: first word {m.group(1)!r}"
    has_yes, has_no = bool(_YES.search(low)), bool(_NO.search(low))
    if has_yes and not has_no:
        return True, "parsed: 'yes' in reply"
    if has_no and not has_yes:
        return False, "parsed: 'no' in reply"
    if has_yes and has_no:
        return None, "unparseable: both 'yes' and 'no' in reply"
    return None, "unparseable: no yes/no verdict in reply"


def yes_no_mass(logprobs: dict[str, float], words: dict[str, Sequence[str]] | None = None) -> tuple[float, float]:
    """(P(yes), P(no)): probability mass of the next-token candidates spelling each word,
    compared case- and space-insensitively: P(w) = sum_{t: norm(t) in spellings(w)} exp(logprob_t)."""
    words = words or {"yes": ("yes",), "no": ("no",)}
    yes = {w.strip().lower() for w in words.get("yes", ("yes",))}
    no = {w.strip().lower() for w in words.get("no", ("no",))}
    norm = {tok: tok.strip().lower() for tok in logprobs}
    p_yes = sum(math.exp(lp) for tok, lp in logprobs.items() if norm[tok] in yes)
    p_no = sum(math.exp(lp) for tok, lp in logprobs.items() if norm[tok] in no)
    return p_yes, p_no


def yes_probability(
    logprobs: dict[str, float], words: dict[str, Sequence[str]] | None = None
) -> tuple[float, dict[str, float], str | None]:
    """(P(yes) / (P(yes) + P(no)), {"p_yes", "p_no"}, error), the masses from `yes_no_mass`.
    NaN and an error naming what was seen when neither word is among the candidates."""
    p_yes, p_no = yes_no_mass(logprobs, words)
    raw = {"p_yes": p_yes, "p_no": p_no}
    if p_yes + p_no <= 0.0:
        words = words or {"yes": ("yes",), "no": ("no",)}
        seen = ", ".join(sorted(logprobs)[:10]) or "nothing"
        return (
            math.nan,
            raw,
            (
                f"neither {'/'.join(words['yes'])} nor {'/'.join(words['no'])} among "
                f"the next-token candidates (saw: {seen})"
            ),
        )
    return p_yes / (p_yes + p_no), raw, None
