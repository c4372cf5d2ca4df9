"""`topiocqa`: TopiOCQA conversational QA (McGill-NLP/topiocqa), one example per turn.

Records (a JSON array, or JSON lines) carry Conversation_no, Turn_no, Question, Answer, Topic,
and in the full release Gold_passage {id, title, text} and Additional_answers. The history of a
turn is its `Context` field (earlier questions and answers, alternating) or, when absent, the
earlier turns of the same conversation; it is written "User: ..." / "Agent: ...".

Passages: the gold passage when the record has one, else none (the early dev release in
../shared/data has none, so those examples suit closed-book or retrieve-yourself settings).
TopiOCQA marks turns the topic cannot answer with the answer "UNANSWERABLE": they get no
reference and answerable False; other turns are answerable True only when the gold passage is
present (unknown otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.types import Example, Passage

from ._io import read_records, require
from ._sampling import subsample
from .instruct_qa_human import speaker_turns

UNANSWERABLE = "UNANSWERABLE"


def _answers(rec: dict[str, Any]) -> list[str]:
    """The main answer and any additional annotators' answers, without duplicates."""
    out: list[str] = []
    extra = rec.get("Additional_answers") or []
    for a in [rec.get("Answer")] + [x.get("Answer") if isinstance(x, dict) else x for x in extra]:
        if isinstance(a, str) and a.strip() and a.strip() != UNANSWERABLE and a not in out:
            out.append(a)
    return out


def _gold_passage(rec: dict[str, Any], example_id: str) -> list[Passage]:
    gold = rec.get("Gold_passage")
    if not isinstance(gold, dict) or not str(gold.get("text") or "").strip():
        return []
    return [
        Passage(
            id=str(gold.get("id") or f"{example_id}:gold"),
            text=str(gold["text"]),
            title=str(gold.get("title") or ""),
            source="topiocqa",
        )
    ]


def load_topiocqa(path: str | Path, *, n: int | None = None, seed: int = 0) -> list[Example]:
    """One example per conversation turn of a TopiOCQA file; `n` samples turns."""
    records = read_records(path)
    turns: dict[tuple[Any, Any], dict[str, Any]] = {}
    for pos, rec in records:
        where = f"{path}, record {pos}"
        key = (require(rec, "Conversation_no", where), require(rec, "Turn_no", where))
        if isinstance(key[1], bool) or not isinstance(key[1], int):
            raise InputError(f"{where}: Turn_no must be an integer, got {key[1]!r}")
        require(rec, "Question", where)
        turns[key] = rec
    examples = []
    for (conv, turn), rec in turns.items():
        if isinstance(rec.get("Context"), list):
            history = [str(t) for t in rec["Context"]]
        else:
            earlier = [turns[(conv, t)] for t in range(1, int(turn)) if (conv, t) in turns]
            history = [str(x) for r in earlier for x in (r["Question"], r.get("Answer", ""))]
        example_id = f"{conv}:{turn}"
        passages = _gold_passage(rec, example_id)
        unanswerable = str(rec.get("Answer", "")).strip() == UNANSWERABLE
        answerable = False if unanswerable else (True if passages else None)
        examples.append(
            Example(
                id=example_id,
                question=str(rec["Question"]),
                passages=passages,
                references=_answers(rec),
                history=speaker_turns(history),
                relevance=[int(not unanswerable)] * len(passages) if passages else None,
                answerable=answerable,
                dataset="topiocqa",
                group=str(conv),
                meta={k: rec[k] for k in ("Topic", "Topic_section", "is_nq", "Rationale") if k in rec},
            )
        )
    if not examples:
        raise InputError(f"{path} holds no TopiOCQA turns")
    return subsample(examples, n, seed)
