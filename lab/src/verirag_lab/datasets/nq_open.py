"""`nq_open`: NQ-open (google-research-datasets/natural-questions, nq_open/) questions.

Each line is {"question": ..., "answer": [...]}; the EfficientQA files share the format (their
test file may lack answers, which leaves references empty). The files have no passages, so the
examples have none either, unless a `retriever` (any object with `search_many(queries, k)`, e.g.
`verirag.retrieval.Index` or `BM25Retriever` over your corpus) is given: then each question gets
its top-k passages, labelled as in `nq` (a passage is relevant when it contains an answer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.types import Example

from ._io import iter_jsonl, require, string_list
from ._retrieved import attach_retrieved, check_k
from ._sampling import subsample


def load_nq_open(
    path: str | Path, *, n: int | None = None, seed: int = 0, retriever: Any = None, k: int = 5
) -> list[Example]:
    """Questions of an NQ-open JSON-lines file; ids are line numbers. Options: retriever, k."""
    k = check_k(k)
    examples = []
    for lineno, rec in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        question = require(rec, "question", where)
        if not isinstance(question, str) or not question.strip():
            raise InputError(f"{where}: `question` must be a non-empty string")
        examples.append(
            Example(
                id=str(lineno),
                question=question,
                references=string_list(rec.get("answer"), f"{where}, answer"),
                dataset="nq_open",
                group=str(lineno),
            )
        )
    examples = subsample(examples, n, seed)
    if retriever is not None:
        attach_retrieved(examples, retriever, k)
    return examples
