"""Ground truth per record, as the AwF paper defines it.

- A (answerable): the passages support a reference answer. From the dataset's relevance labels
  when it has them (`Example.answerable`), else: some passage contains a reference (normalised
  substring, the instruct-qa normalisation).
- correct: the answer matches a reference under a configurable rule. An abstention never does.
- V (faithful) = correct and A: the answer is right *and* the passages support it.

Match rules (`verirag.metrics.qa`):
- recall_or_substring (default): every reference token appears in the answer (token recall 1),
  or a reference appears in the answer as a normalised substring. Token recall correlates best
  with human judgement of long answers (our metrics check: Spearman 0.65 on the 396 NQ rows).
- recall, substring, em: one of those alone.
- llm: the LLM correctness judge (verirag.evaluation.judges.CorrectnessJudge); an unreadable verdict
  counts as incorrect and is recorded in the record's details.
Examples without references (e.g. NoMIRACL before references are generated): correct = answered
(not an abstention) on an answerable example; the rule is recorded as "no_references".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from verirag.metrics.abstention import is_abstention
from verirag.metrics.qa import exact_match, substring_match, token_recall
from verirag.types import Example


@dataclass
class Truth:
    answerable: int
    correct: int
    faithful: int
    abstained: int
    details: dict[str, Any]


def passages_support_reference(example: Example) -> bool:
    refs = [r for r in example.references if r.strip()]
    return bool(refs) and any(substring_match(p.text, refs) >= 1.0 for p in example.passages)


def answerable(example: Example) -> int:
    if example.answerable is not None:
        return int(bool(example.answerable))
    if example.relevance is not None and any(r is not None for r in example.relevance):
        return int(any(r == 1 for r in example.relevance))
    return int(passages_support_reference(example))


def matches(answer: str, references: list[str], rule: str) -> bool:
    if rule == "recall":
        return token_recall(answer, references) >= 1.0
    if rule == "substring":
        return substring_match(answer, references) >= 1.0
    if rule == "em":
        return exact_match(answer, references) >= 1.0
    if rule == "recall_or_substring":
        return token_recall(answer, references) >= 1.0 or substring_match(answer, references) >= 1.0
    raise ValueError(f"unknown match rule {rule!r}")


class GroundTruth:
    """Labels one answer to one example. `judge` is a CorrectnessJudge for rule "llm"."""

    def __init__(self, rule: str = "recall_or_substring", judge=None):
        if rule == "llm" and judge is None:
            raise ValueError("the llm match rule needs a CorrectnessJudge")
        self.rule, self.judge = rule, judge

    def label(self, example: Example, answer: str) -> Truth:
        A = answerable(example)
        gave_up = is_abstention(answer)  # empty included
        refs = [r for r in example.references if r.strip()]
        details: dict[str, Any] = {"match_rule": self.rule if refs else "no_references"}
        if gave_up:
            correct = False
        elif not refs:
            correct = bool(A)
        elif self.rule == "llm":
            v = self.judge.judge(example.question_with_history(), refs, answer)
            details["judge"] = {"verdict": v.verdict, "score": v.score, "reason": v.reason}
            correct = bool(v.verdict)
        else:
            correct = matches(answer, refs, self.rule)
        return Truth(
            answerable=A, correct=int(correct), faithful=int(correct and A), abstained=int(gave_up), details=details
        )
