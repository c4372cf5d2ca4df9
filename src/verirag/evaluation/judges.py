"""LLM judges of answer correctness and of faithfulness (Adlakha et al.'s GPT4-Eval / LLMCritic).

Run on any verirag LLM backend (`verirag.llm.base.LLM`); the prompts are data files
(`prompts/judge_correctness.yaml`, `prompts/judge_faithfulness.yaml`, instruct-qa's wording). How a
verdict is read (generated yes / no, or P(yes) from the first reply token), and that an unreadable
one is kept with its reason and never counted as "no", is `verirag.metrics.judges`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verirag.errors import BackendError
from verirag.metrics.judges import JudgeVerdict, parse_yes_no, yes_probability
from verirag.prompts import load_prompt


class _Judge:
    prompt_name = ""

    def __init__(
        self, llm, *, mode: str = "generate", prompt: str | None = None, max_tokens: int = 8, top_k: int = 20
    ) -> None:
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
