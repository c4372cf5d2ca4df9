"""`instruct_qa_human`: model responses with human correctness labels (Adlakha et al.).

Each row is one instruction-following model's response to a question of NQ, HotpotQA or
TopiOCQA, given the gold passages; humans labelled it correct, incorrect or refuse-to-answer.
It is the set for checking that verirag's correctness metrics agree with people, so the
response and labels go into meta:

    meta = {response, human_correctness, label_correct, model, dataset, ...}

Two files: "396" (default; NQ rows whose labels were re-checked) and "1200" (all rows; some
labels there do not fit the response they are paired with). Examples answering the same
question share `group` ("<dataset>:<id>"), ids are "<dataset>:<id>:<model>".

History turns alternate user and agent, oldest first, and are written "User: ..." /
"Agent: ..." as in the instruct-qa prompts.
"""

from __future__ import annotations

from pathlib import Path

from verirag.errors import InputError
from verirag.evaluation_data import INSTRUCT_QA_HUMAN_FILES
from verirag.types import Example, Passage

from ._io import iter_jsonl, require, string_list
from ._sampling import subsample

FILES = INSTRUCT_QA_HUMAN_FILES  # the core knows them too: `verirag calibrate` refuses their questions
_META_FIELDS = (
    "response",
    "human_correctness",
    "label_correct",
    "model",
    "dataset",
    "human_correctness_original",
    "reference_corrected_by_ispas",
    "note",
)


def speaker_turns(history: list[str]) -> list[str]:
    """Alternating user / agent turns as "User: ..." / "Agent: ..."."""
    return [f"{'User' if i % 2 == 0 else 'Agent'}: {t}" for i, t in enumerate(history)]


def resolve_file(path: str | Path, file: str) -> Path:
    p = Path(path).expanduser()
    if p.is_file():
        return p
    if file not in FILES:
        raise InputError(f"unknown instruct_qa_human file {file!r}; choose one of {', '.join(FILES)}")
    if not (p / FILES[file]).is_file():
        raise InputError(f"instruct_qa_human file not found: expected {p / FILES[file]}")
    return p / FILES[file]


def load_instruct_qa_human(
    path: str | Path, *, n: int | None = None, seed: int = 0, file: str = "396"
) -> list[Example]:
    """Rows of the chosen file (`path`: the folder holding it, or a file of the same format)."""
    if str(file) not in FILES:
        raise InputError(f"unknown instruct_qa_human file {file!r}; choose one of {', '.join(FILES)}")
    source = resolve_file(path, str(file))
    examples = []
    for lineno, rec in iter_jsonl(source):
        where = f"{source}, line {lineno}"
        gold = require(rec, "gold_passages", where)
        if not isinstance(gold, list):
            raise InputError(f"{where}: gold_passages must be a list of {{title, text}}")
        dataset, qid, model = rec.get("dataset", ""), require(rec, "id", where), rec.get("model", "")
        passages = [
            Passage(
                id=f"{dataset}:{qid}:gold{i}",
                text=str(require(g, "text", where)),
                title=str(g.get("title") or ""),
                source=str(dataset),
            )
            for i, g in enumerate(gold)
        ]
        history = rec.get("history") or []
        examples.append(
            Example(
                id=f"{dataset}:{qid}:{model}",
                question=str(require(rec, "question", where)),
                passages=passages,
                references=string_list(rec.get("references"), where),
                history=speaker_turns([str(t) for t in history]),
                dataset="instruct_qa_human",
                group=f"{dataset}:{qid}",
                meta={k: rec[k] for k in _META_FIELDS if k in rec},
            )
        )
    return subsample(examples, n, seed)
