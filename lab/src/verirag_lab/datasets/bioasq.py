"""`bioasq`: BioASQ Task B questions (biomedical QA), the AwF paper's answerability benchmark.

    {"questions": [{"id", "body", "type", "exact_answer", "ideal_answer"?, "snippets":
      [{"text", "document", ...}], ...}]}

One example per question of the chosen `types` (default: factoid, whose exact answers suit
short-answer metrics): passages = its snippets, references = the exact answers. A factoid
`exact_answer` is a list of synonyms or a list of such lists; both are flattened. BioASQ snippets
were selected by experts as relevant, so relevance is 1 and answerable True; the AwF paper makes
unanswerable copies by swapping in other questions' snippets, which callers can do on top.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.types import Example, Passage

from ._io import read_json, require
from ._sampling import subsample

TYPES = ("factoid", "list", "yesno", "summary")


def flatten_answers(value: Any) -> list[str]:
    """Strings of a (possibly nested) exact_answer, in order, without duplicates."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            if v.strip() and v not in out:
                out.append(v)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(value)
    return out


def load_bioasq(
    path: str | Path, *, n: int | None = None, seed: int = 0, types: tuple[str, ...] | list[str] | str = ("factoid",)
) -> list[Example]:
    """Questions of a BioASQ JSON file whose type is in `types` ("all" for every type)."""
    wanted = set(TYPES) if types == "all" else {types} if isinstance(types, str) else set(types)
    unknown = wanted - set(TYPES)
    if unknown:
        raise InputError(f"unknown BioASQ question type(s) {sorted(unknown)}; choose from {', '.join(TYPES)} or 'all'")
    questions = require(read_json(path), "questions", str(path))
    if not isinstance(questions, list):
        raise InputError(f"{path}: `questions` must be a list")
    examples = []
    for i, q in enumerate(questions):
        where = f"{path}, questions[{i}]"
        if require(q, "type", where) not in wanted:
            continue
        qid = str(q.get("id") or i)
        snippets = [s for s in q.get("snippets") or [] if isinstance(s, dict) and s.get("text")]
        passages = [
            Passage(id=f"{qid}:{j}", text=str(s["text"]), source="bioasq", meta={"document": s.get("document", "")})
            for j, s in enumerate(snippets)
        ]
        refs = flatten_answers(q.get("exact_answer"))
        meta = {"type": q["type"]}
        if q.get("ideal_answer"):
            meta["ideal_answer"] = q["ideal_answer"]
        examples.append(
            Example(
                id=qid,
                question=str(require(q, "body", where)),
                passages=passages,
                references=refs,
                relevance=[1] * len(passages),
                answerable=bool(passages),
                dataset="bioasq",
                group=qid,
                meta=meta,
            )
        )
    return subsample(examples, n, seed)
