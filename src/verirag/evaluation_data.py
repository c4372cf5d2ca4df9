"""This project's evaluation data, known to the core so that nothing the core fits is tuned on it.

instruct_qa_human (human labels on four LLMs' answers to NQ, HotpotQA and TopiOCQA questions) is the
evaluation data: its HotpotQA and TopiOCQA rows are the dev set, its NQ rows the final test. A
threshold fitted on them would be tuned on the test set, so `verirag calibrate` refuses them, for an
eval run and for a verified answer log alike: by dataset name (an eval run's records name theirs) and
by question (a copy under another name: any question of at least MIN_IDENTIFYING_WORDS words that is
an instruct_qa_human question, where $VERIRAG_DATA_DIR holds the folder). The lab's training guard
(`verirag_lab.train.guard`) reads the same names, files and question keys.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path

from verirag.errors import InputError

EVALUATION_DATASETS = ("instruct_qa",)  # a dataset whose name holds one of these is evaluation data
INSTRUCT_QA_HUMAN = "instruct_qa_human"  # its folder under the data directory
INSTRUCT_QA_HUMAN_FILES = {"396": "correctness_nq_corrected_396.jsonl", "1200": "correctness_human_eval_1200.jsonl"}
# a question this long that is an instruct_qa_human question is a copy of it; a follow-up as short as
# "why?" or "when was he born?", which the dev set also asks, names no dev question by itself
MIN_IDENTIFYING_WORDS = 5


def question_key(text: str) -> str:
    """Lowercase, every punctuation mark and space removed: "Who wrote  'X'?" -> "whowrotex"."""
    return re.sub(r"[\W_]+", "", text.lower())


def is_evaluation_dataset(name: str) -> bool:
    return any(x in name for x in EVALUATION_DATASETS)


def evaluation_question_keys(data_root: str | Path) -> frozenset[str]:
    """`question_key` of every question in both instruct_qa_human files under `data_root`. Their
    absence is an error, not an empty set: without them nothing keeps the evaluation questions out."""
    folder = Path(data_root) / INSTRUCT_QA_HUMAN
    missing = [folder / name for name in INSTRUCT_QA_HUMAN_FILES.values() if not (folder / name).is_file()]
    if missing:
        raise InputError(
            f"instruct_qa_human not found ({', '.join(map(str, missing))}): "
            "without it nothing keeps the evaluation questions out"
        )
    return _keys(str(folder.resolve()))


@functools.lru_cache(maxsize=2)  # the files do not change within a process
def _keys(folder: str) -> frozenset[str]:
    keys: set[str] = set()
    for name in INSTRUCT_QA_HUMAN_FILES.values():
        path = Path(folder) / name
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    keys.add(question_key(str(json.loads(line)["question"])))
                except (ValueError, KeyError, TypeError) as e:
                    raise InputError(f"{path}:{n}: no question could be read ({e})") from None
    return frozenset(keys)


def held_question_keys() -> frozenset[str]:
    """The evaluation question keys of $VERIRAG_DATA_DIR where it holds instruct_qa_human; elsewhere
    (a user's machine without the benchmark folder) none: there is no benchmark question to refuse."""
    from verirag.settings import settings

    root = settings().data_dir
    if root is None or not (Path(root) / INSTRUCT_QA_HUMAN).is_dir():
        return frozenset()
    return evaluation_question_keys(root)


def evaluation_refusal(datasets: Iterable[str] = (), questions: Iterable[str] = ()) -> str | None:
    """Why records of these dataset names and questions are evaluation data, or None."""
    held = sorted({d for d in datasets if is_evaluation_dataset(d)})
    if held:
        return f"{', '.join(held)} is evaluation data"
    keys = None
    for q in questions:
        if len(q.split()) < MIN_IDENTIFYING_WORDS:
            continue
        keys = held_question_keys() if keys is None else keys
        if question_key(q) in keys:
            return f"evaluation data (an instruct_qa_human question: {q[:80]!r})"
    return None
