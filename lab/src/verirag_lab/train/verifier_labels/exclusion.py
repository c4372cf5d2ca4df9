"""Questions that labelling must never use: every question of instruct_qa_human.

instruct_qa_human (answers of other LLMs with human labels) is evaluation data: its HotpotQA and
TopiOCQA rows are the verifier's dev set, its NQ rows a final test. A training question that is
one of them (same text after `question_key`) is dropped before sampling, and the count reported.
"""

from __future__ import annotations

from pathlib import Path

# the one definition, the core's: `verirag calibrate` refuses the same questions
from verirag.evaluation_data import evaluation_question_keys, question_key

__all__ = ["evaluation_questions", "question_key"]


def evaluation_questions(data_root: Path) -> set[str]:
    """`question_key` of every question in both instruct_qa_human files. Their absence is an
    error, not an empty set: without them nothing guarantees the evaluation questions stay out."""
    return set(evaluation_question_keys(data_root))
