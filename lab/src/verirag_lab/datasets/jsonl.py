"""`jsonl`: your own benchmark as JSON lines, one question per line.

    {"id"?: str, "question": str,
     "passages"?: [str | {"id"?, "title"?, "text"}],
     "references"? | "answers"?: str | [str],
     "history"?: [str], "answerable"?: bool, "relevance"?: [0 | 1 | null],
     "group"?: str, "meta"?: {...}}

Missing ids become the line number; passage ids default to "<example id>:<index>". When
`answerable` is absent it is derived from `relevance` (True if any passage is relevant, False if
all are labelled 0, else unknown). A malformed line raises `InputError` naming its line number.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.types import Example, Passage

from ._io import iter_jsonl, string_list
from ._sampling import subsample


def _passages(value: Any, example_id: str, where: str) -> list[Passage]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError(f"{where}: `passages` must be a list of strings or {{title, text}} objects")
    out = []
    for i, p in enumerate(value):
        if isinstance(p, str):
            out.append(Passage(id=f"{example_id}:{i}", text=p))
        elif isinstance(p, dict) and isinstance(p.get("text"), str):
            out.append(
                Passage(
                    id=str(p.get("id") or f"{example_id}:{i}"),
                    text=p["text"],
                    title=str(p.get("title") or ""),
                    source=str(p.get("source") or ""),
                )
            )
        else:
            raise InputError(f"{where}: passage {i} must be a string or an object with a `text` string")
    return out


def _relevance(value: Any, n_passages: int, where: str) -> list[int | None] | None:
    if value is None:
        return None
    if (
        not isinstance(value, list)
        or len(value) != n_passages
        or not all(v is None or (v in (0, 1) and not isinstance(v, float)) for v in value)
    ):
        raise InputError(f"{where}: `relevance` must list 0, 1 or null for each of the {n_passages} passages")
    return [None if v is None else int(v) for v in value]


def _answerable(value: Any, relevance: list[int | None] | None, where: str) -> bool | None:
    if value is not None:
        if not isinstance(value, bool):
            raise InputError(f"{where}: `answerable` must be true, false or null")
        return value
    if not relevance:
        return None
    if any(r == 1 for r in relevance):
        return True
    return False if all(r == 0 for r in relevance) else None


def parse_line(rec: Any, lineno: int, where: str) -> Example:
    if not isinstance(rec, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    question = rec.get("question")
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: `question` must be a non-empty string")
    example_id = str(rec["id"]) if rec.get("id") not in (None, "") else str(lineno)
    passages = _passages(rec.get("passages"), example_id, where)
    relevance = _relevance(rec.get("relevance"), len(passages), where)
    refs = rec["references"] if "references" in rec else rec.get("answers")
    history = rec.get("history") or []
    if not isinstance(history, list) or not all(isinstance(h, str) for h in history):
        raise InputError(f"{where}: `history` must be a list of strings")
    meta = rec.get("meta") or {}
    if not isinstance(meta, dict):
        raise InputError(f"{where}: `meta` must be an object")
    if rec.get("source") not in (None, "", []):  # where the reference comes from (calibrate-retrieval)
        meta = {**meta, "source": string_list(rec["source"], f"{where}, source")}
    return Example(
        id=example_id,
        question=question,
        passages=passages,
        references=string_list(refs, f"{where}, references"),
        history=list(history),
        relevance=relevance,
        answerable=_answerable(rec.get("answerable"), relevance, where),
        dataset="jsonl",
        group=str(rec.get("group") or example_id),
        meta=dict(meta),
    )


def load_jsonl(path: str | Path, *, n: int | None = None, seed: int = 0) -> list[Example]:
    """Every line of a JSON-lines benchmark file (format in the module docstring)."""
    examples = [parse_line(rec, lineno, f"{path}, line {lineno}") for lineno, rec in iter_jsonl(path)]
    seen: set[str] = set()
    for ex in examples:
        if ex.id in seen:
            raise InputError(f"{path}: example id {ex.id!r} occurs more than once")
        seen.add(ex.id)
    return subsample(examples, n, seed)
