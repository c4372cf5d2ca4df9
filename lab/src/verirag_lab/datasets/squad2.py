"""`squad2`: SQuAD 2.0 (rajpurkar/SQuAD-explorer), where a third of the questions cannot be
answered from their paragraph: the closest public analogue of answerability by construction.

    {"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers":
      [{"text", "answer_start"}], "is_impossible", "plausible_answers"?}]}]}]}

One example per question: passages = [its paragraph], answerable = not is_impossible,
references = the answer texts (none for an impossible question; its plausible answers, which
the paragraph does *not* support, go to meta["plausible_answers"]). Questions of one paragraph
share `group`.
"""

from __future__ import annotations

from pathlib import Path

from verirag.errors import InputError
from verirag.types import Example, Passage

from ._io import read_json, require
from ._sampling import subsample


def _texts(items: object) -> list[str]:
    out: list[str] = []
    for a in items if isinstance(items, list) else []:
        t = a.get("text") if isinstance(a, dict) else None
        if isinstance(t, str) and t.strip() and t not in out:
            out.append(t)
    return out


def load_squad2(path: str | Path, *, n: int | None = None, seed: int = 0) -> list[Example]:
    """Every question of a SQuAD 2.0 file (train or dev); `n` samples questions."""
    data = require(read_json(path), "data", str(path))
    if not isinstance(data, list):
        raise InputError(f"{path}: `data` must be a list of articles")
    examples = []
    for a, article in enumerate(data):
        title = str(article.get("title") or "") if isinstance(article, dict) else ""
        for p, para in enumerate(require(article, "paragraphs", f"{path}, data[{a}]")):
            where = f"{path}, data[{a}].paragraphs[{p}]"
            passage = Passage(id=f"{a}:{p}", text=str(require(para, "context", where)), title=title, source="squad2")
            for qa in require(para, "qas", where):
                impossible = bool(qa.get("is_impossible", False))
                meta = {"plausible_answers": _texts(qa.get("plausible_answers"))} if impossible else {}
                examples.append(
                    Example(
                        id=str(require(qa, "id", where)),
                        question=str(require(qa, "question", where)),
                        passages=[passage],
                        references=[] if impossible else _texts(qa.get("answers")),
                        relevance=[int(not impossible)],
                        answerable=not impossible,
                        dataset="squad2",
                        group=passage.id,
                        meta=meta,
                    )
                )
    return subsample(examples, n, seed)
