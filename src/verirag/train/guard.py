"""The one guard every learned part's training data passes: evaluation data is never trained on.

Two kinds of text are evaluation data here, whatever a command line says:

- every question of instruct_qa_human (its HotpotQA and TopiOCQA rows are the dev set, its NQ rows
  the final test), compared by `question_key`;
- the licence texts of /usr/share/common-licenses (the held-out kind of document), recognised by any
  shared run of `SHINGLE` words with one of those files, or by a licence grant's wording.

`TrainingGuard.refusal(question, texts)` names why an example is refused (None: allowed);
`TrainingGuard.keep(...)` filters a list and counts what it dropped, so a training command reports
the count instead of silently shrinking its data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from verirag.train.verifier_labels.exclusion import evaluation_questions, question_key

LICENCE_DIR = Path("/usr/share/common-licenses")
SHINGLE = 8  # words: long enough that ordinary prose never shares one with a licence by chance
LICENCE_WORDING = re.compile(
    r"GNU (?:Lesser |Library |Affero )?General Public Licen[cs]e|WITHOUT ANY WARRANTY|Permission is hereby granted|"
    r"Licensed under the|Creative Commons|Free Software Foundation|Permission is granted to copy|"
    r"THE SOFTWARE IS PROVIDED \"AS IS\"|Redistribution and use in source and binary forms",
    re.IGNORECASE,
)
T = TypeVar("T")


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _shingles(words: Sequence[str]) -> Iterable[tuple[str, ...]]:
    return (tuple(words[i : i + SHINGLE]) for i in range(max(0, len(words) - SHINGLE + 1)))


def licence_shingles(folder: Path = LICENCE_DIR) -> frozenset[tuple[str, ...]]:
    """Every `SHINGLE`-word run of the licence files under `folder` (empty where it is absent)."""
    out: set[tuple[str, ...]] = set()
    if folder.is_dir():
        for f in sorted(folder.rglob("*")):
            if f.is_file():
                out.update(_shingles(_words(f.read_text(encoding="utf-8", errors="replace"))))
    return frozenset(out)


@dataclass
class TrainingGuard:
    """Refuses training examples built from evaluation data (see the module doc)."""

    questions: frozenset[str]
    licences: frozenset[tuple[str, ...]] = frozenset()
    refused: dict[str, int] = field(default_factory=dict)

    @classmethod
    def for_data(cls, data_root: str | Path, licence_dir: Path = LICENCE_DIR) -> TrainingGuard:
        """The guard of the data folder's instruct_qa_human (its absence is an error: without it
        nothing keeps the evaluation questions out) and of the machine's licence texts."""
        return cls(frozenset(evaluation_questions(Path(data_root))), licence_shingles(licence_dir))

    def is_licence_text(self, text: str) -> bool:
        if LICENCE_WORDING.search(text):
            return True
        return bool(self.licences) and any(s in self.licences for s in _shingles(_words(text)))

    def refusal(self, question: str, texts: Iterable[str] = ()) -> str | None:
        """Why an example of `question` reading `texts` may not be trained on, or None."""
        if question_key(question) in self.questions:
            return "instruct_qa_human question"
        if any(self.is_licence_text(t) for t in texts):
            return "licence text"
        return None

    def keep(self, items: Iterable[T], question: Callable[[T], str], texts: Callable[[T], Iterable[str]]) -> list[T]:
        """The allowed `items`; each refusal counted by reason in `refused`."""
        out = []
        for item in items:
            why = self.refusal(question(item), texts(item))
            if why is None:
                out.append(item)
            else:
                self.refused[why] = self.refused.get(why, 0) + 1
        return out

    def check(self, items: Iterable[T], question: Callable[[T], str], texts: Callable[[T], Iterable[str]]) -> None:
        """Raise `InputError` if any of `items` is refused: the last check before fitting."""
        from verirag.errors import InputError

        for item in items:
            why = self.refusal(question(item), texts(item))
            if why is not None:
                raise InputError(f"refusing to train on evaluation data ({why}): {question(item)[:80]!r}")
