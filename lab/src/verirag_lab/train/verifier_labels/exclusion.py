"""Questions that labelling must never use: every question of instruct_qa_human.

instruct_qa_human (answers of other LLMs with human labels) is evaluation data: its HotpotQA and
TopiOCQA rows are the verifier's dev set, its NQ rows a final test. A training question that is
one of them (same text after `question_key`) is dropped before sampling, and the count reported.
"""

from __future__ import annotations

import re
from pathlib import Path

from verirag.errors import InputError
from verirag_lab.datasets import dataset_info, load_dataset
from verirag_lab.datasets.instruct_qa_human import FILES


def question_key(text: str) -> str:
    """Lowercase, every punctuation mark and space removed: "Who wrote  'X'?" -> "whowrotex"."""
    return re.sub(r"[\W_]+", "", text.lower())


def evaluation_questions(data_root: Path) -> set[str]:
    """`question_key` of every question in both instruct_qa_human files. Their absence is an
    error, not an empty set: without them nothing guarantees the evaluation questions stay out."""
    folder = Path(data_root) / dataset_info("instruct_qa_human").default
    missing = [name for name in FILES.values() if not (folder / name).is_file()]
    if missing:
        raise InputError(
            f"instruct_qa_human not found ({', '.join(str(folder / m) for m in missing)}): "
            f"labelling drops its questions from training and cannot run without it"
        )
    keys = set()
    for file in FILES:
        for ex in load_dataset("instruct_qa_human", folder, file=file):
            keys.add(question_key(ex.question))
    return keys
