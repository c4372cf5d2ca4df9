"""LLM judges of answer correctness and of faithfulness (Adlakha et al.'s GPT4-Eval / LLMCritic).

Run on any verirag LLM backend (`verirag.llm.base.LLM`); the prompts are data files
(`prompts/judge_correctness.yaml`, `prompts/judge_faithfulness.yaml`, instruct-qa's wording).

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

__all__ = ["CorrectnessJudge", "FaithfulnessJudge", "JudgeVerdict", "parse_yes_no", "score_or_nan"]


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


# --------------------------------------------------------------------------- judges
class _Judge:
    prompt_name = ""

    def __init__(
        self, llm, *, mode: str = "generate", prompt: str | None = None, max_tokens: int = 8, top_k: int = 20
    ) -> None:
        from verirag.prompts import load_prompt

        if mode not in ("generate", "logprobs"):
            raise ValueError("mode must be 'generate' or 'logprobs'")
        self.llm = llm
        self.mode = mode
        self.prompt = load_prompt(prompt or self.prompt_name)
        self.max_tokens = max_tokens
        self.top_k = top_k
        self.words = self.prompt.extra.get("verdict_tokens") or {"yes": ["Yes", "yes"], "no": ["No", "no"]}
        if mode == "logprobs" and hasattr(llm, "require"):
            llm.require("next_token")

    def _call(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """One judge call -> {"verdict", "score", "raw", "reason"}."""
        from verirag.errors import BackendError

        try:
            if self.mode == "generate":
                gen = self.llm.generate(messages, max_tokens=self.max_tokens, temperature=0.0)
                text = gen.text
                verdict, reason = parse_yes_no(text)
                return {
                    "verdict": verdict,
                    "score": None if verdict is None else float(verdict),
                    "raw": text,
                    "reason": reason,
                }
            cands = tuple(dict.fromkeys(w.strip() for ws in self.words.values() for w in ws))
            lps = self.llm.next_token_logprobs(messages, top_k=self.top_k, candidates=cands)
            score, raw, error = yes_probability(lps, self.words)
            if error:
                return {"verdict": None, "score": None, "raw": raw, "reason": f"unparseable: {error}"}
            return {"verdict": score >= 0.5, "score": score, "raw": raw, "reason": "parsed: logprobs"}
        except BackendError as e:
            return {"verdict": None, "score": None, "raw": None, "reason": f"error: {e}"}


class CorrectnessJudge(_Judge):
    """Is the response a correct answer to the question, given the reference answers?

    The judge is asked once per reference (instruct-qa's LLMEval) and the result is the maximum:
    correct if any call says yes (calls stop at the first yes); incorrect if every call says no;
    unreadable (None) if no call says yes and at least one could not be read.
    """

    prompt_name = "judge_correctness"

    def judge(self, question: str | Sequence[str], references: str | Sequence[str], response: str) -> JudgeVerdict:
        q = question if isinstance(question, str) else "\n".join(question)
        refs = [references] if isinstance(references, str) else list(references)
        if not refs:
            raise ValueError("at least one reference answer is needed")
        calls = []
        for ref in refs:
            c = self._call(self.prompt.messages(question=q, reference=ref, response=response))
            c["reference"] = ref
            calls.append(c)
            if c["verdict"] is True and self.mode == "generate":
                break
        return _combine(calls)

    def judge_batch(self, questions, references, responses) -> list[JudgeVerdict]:
        return [self.judge(q, r, a) for q, r, a in zip(questions, references, responses)]


class FaithfulnessJudge(_Judge):
    """Is everything in the response present in, or inferable from, the passages?"""

    prompt_name = "judge_faithfulness"

    def judge(self, passages, response: str, question: str | Sequence[str] = "") -> JudgeVerdict:
        from verirag.metrics.faithfulness import evidence_text

        q = question if isinstance(question, str) else "\n".join(question)
        c = self._call(self.prompt.messages(question=q, evidence=evidence_text(passages), response=response))
        return _combine([c])

    def judge_batch(self, passages_list, responses, questions=None) -> list[JudgeVerdict]:
        questions = questions if questions is not None else [""] * len(responses)
        return [self.judge(p, a, q) for p, a, q in zip(passages_list, responses, questions)]


def _combine(calls: list[dict[str, Any]]) -> JudgeVerdict:
    raw = [c["raw"] for c in calls]
    scored = [c for c in calls if c["score"] is not None]
    if any(c["verdict"] is True for c in calls):
        best = max(scored, key=lambda c: c["score"])
        return JudgeVerdict(True, best["score"], raw, best["reason"], calls)
    if len(scored) == len(calls):
        best = max(scored, key=lambda c: c["score"])
        return JudgeVerdict(False, best["score"], raw, best["reason"], calls)
    bad = next(c for c in calls if c["score"] is None)
    return JudgeVerdict(None, None, raw, bad["reason"], calls)
