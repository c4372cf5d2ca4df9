"""The one guard every learned part's training data passes: evaluation data is never trained on.

These are evaluation data here, whatever a command line says:

- every question of instruct_qa_human (its HotpotQA and TopiOCQA rows are the dev set, its NQ rows
  the final test), compared by `question_key`;
- the licence texts of /usr/share/common-licenses (the held-out kind of document), recognised by any
  shared run of `SHINGLE` words with one of those files, or by a licence grant's wording;
- for the trained verifier (`for_verifier`), the held-out split of its labels
  (`verifier_labels.heldout`): held-out and own-answer questions, man pages, the Info manuals kept
  for the final table, a held-out question's evidence or answers (`heldout_index.HeldOutIndex`).

- for the parts a user may also fit on data of their own (CalibRAG's forecaster, the conformal trust
  filter, the lookback classifier), `for_training`: the instruct_qa_human questions of the benchmark
  folder where $VERIRAG_DATA_DIR names one that holds them, and the licence texts always;
- for a verifier trained from another (`--init-from`), the verifier it starts from: its whole line
  must have been trained under this guard (`LINEAGE_KEY` in its provenance, `start_refusal`), since
  what a network learned from evaluation questions stays in the weights a warm start copies.

`TrainingGuard.refusal(question, texts)` names why an example is refused (None: allowed);
`TrainingGuard.keep(...)` filters a list and counts what it dropped, so a training command reports
the count instead of silently shrinking its data.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from verirag.evaluation_data import evaluation_refusal  # the core's: no threshold is fitted on them either
from verirag_lab.train.verifier_labels.exclusion import evaluation_questions, question_key
from verirag_lab.train.verifier_labels.heldout_index import HeldOutIndex, group_reason
from verirag_lab.train.verifier_labels.records import is_example

LICENCE_DIR = Path("/usr/share/common-licenses")
SHINGLE = 8  # words: long enough that ordinary prose never shares one with a licence by chance
LICENCE_WORDING = re.compile(
    r"GNU (?:Lesser |Library |Affero )?General Public Licen[cs]e|WITHOUT ANY WARRANTY|Permission is hereby granted|"
    r"Licensed under the|Creative Commons|Free Software Foundation|Permission is granted to copy|"
    r"THE SOFTWARE IS PROVIDED \"AS IS\"|Redistribution and use in source and binary forms",
    re.IGNORECASE,
)
T = TypeVar("T")
# a trained verifier's provenance key: True when it and every verifier it started from were trained
# under this guard (missing: trained before it, or from such a verifier)
LINEAGE_KEY = "guarded_lineage"


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def _shingles(words: Sequence[str]) -> Iterable[tuple[str, ...]]:
    return (tuple(words[i : i + SHINGLE]) for i in range(max(0, len(words) - SHINGLE + 1)))


@functools.lru_cache(maxsize=4)  # every guard of a process reads the same files
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
    heldout: HeldOutIndex | None = None  # the verifier's held-out split (None: the two kinds above only)
    refused: dict[str, int] = field(default_factory=dict)
    _licence_seen: dict[str, bool] = field(default_factory=dict, repr=False)  # passages recur across examples

    @classmethod
    def for_data(cls, data_root: str | Path, licence_dir: Path = LICENCE_DIR) -> TrainingGuard:
        """The guard of the data folder's instruct_qa_human (its absence is an error: without it
        nothing keeps the evaluation questions out) and of the machine's licence texts."""
        return cls(frozenset(evaluation_questions(Path(data_root))), licence_shingles(licence_dir))

    @classmethod
    def for_verifier(
        cls, data_root: str | Path, doc_root: str | Path | None = None, licence_dir: Path = LICENCE_DIR
    ) -> TrainingGuard:
        """`for_data`'s guard, also refusing the verifier's held-out split (module doc)."""
        guard = cls.for_data(data_root, licence_dir)
        guard.heldout = HeldOutIndex.build(data_root, doc_root)
        return guard

    @classmethod
    def for_training(cls, licence_dir: Path = LICENCE_DIR) -> TrainingGuard:
        """`for_data`'s guard of $VERIRAG_DATA_DIR where it holds instruct_qa_human; elsewhere (a
        user's own examples, no benchmark folder) the licence texts' alone: there is then no
        benchmark question to refuse."""
        from verirag.settings import settings
        from verirag_lab.datasets.registry import dataset_info

        root = settings().data_dir
        held = root is not None and (Path(root) / (dataset_info("instruct_qa_human").default or "")).is_dir()
        return cls.for_data(root, licence_dir) if held else cls(frozenset(), licence_shingles(licence_dir))

    def is_licence_text(self, text: str) -> bool:
        if text not in self._licence_seen:
            self._licence_seen[text] = bool(LICENCE_WORDING.search(text)) or (
                bool(self.licences) and any(s in self.licences for s in _shingles(_words(text)))
            )
        return self._licence_seen[text]

    def refusal(self, question: str, texts: Iterable[str] = ()) -> str | None:
        """Why an example of `question` reading `texts` may not be trained on, or None."""
        if question_key(question) in self.questions:
            return "instruct_qa_human question"
        texts = list(texts)
        if any(self.is_licence_text(t) for t in texts):
            return "licence text"
        return self.heldout.text_refusal([question], texts) if self.heldout is not None else None

    def example_refusal(self, example) -> str | None:
        """Why a `VerifierExample` may not be trained on (its group, question, history, passages), or None."""
        if self.heldout is not None and (why := group_reason(example.group)) is not None:
            return why
        why = self.refusal(example.question, example.passages)
        if why is None and self.heldout is not None:
            why = self.heldout.text_refusal(example.history, ())
        return why

    def record_refusal(self, record: dict) -> str | None:
        """Why a compact labels record may not be trained on, by what it names (before it is resolved)."""
        if self.heldout is None or not is_example(record):
            return None
        return self.heldout.record_refusal(record)

    def keep_by(self, items: Iterable[T], reason: Callable[[T], str | None]) -> list[T]:
        """The `items` whose `reason` is None; each refusal counted by reason in `refused`."""
        out = []
        for item in items:
            why = reason(item)
            if why is None:
                out.append(item)
            else:
                self.refused[why] = self.refused.get(why, 0) + 1
        return out

    def keep(self, items: Iterable[T], question: Callable[[T], str], texts: Callable[[T], Iterable[str]]) -> list[T]:
        """The allowed `items`; each refusal counted by reason in `refused`."""
        return self.keep_by(items, lambda item: self.refusal(question(item), texts(item)))

    def check_by(self, items: Iterable[T], reason: Callable[[T], str | None], name: Callable[[T], str]) -> None:
        """Raise `InputError` if any of `items` is refused: the last check before fitting."""
        from verirag.errors import InputError

        for item in items:
            why = reason(item)
            if why is not None:
                raise InputError(f"refusing to train on evaluation data ({why}): {name(item)[:80]!r}")

    def check(self, items: Iterable[T], question: Callable[[T], str], texts: Callable[[T], Iterable[str]]) -> None:
        """Raise `InputError` if any of `items` is refused: the last check before fitting."""
        self.check_by(items, lambda item: self.refusal(question(item), texts(item)), question)


def refused_line(guard: TrainingGuard) -> str:
    """What `guard` refused, by reason, for a command's output."""
    return ", ".join(f"{n} {why}" for why, n in sorted(guard.refused.items())) or "nothing refused"


def start_refusal(folder: str | Path, meta_file: str = "verifier.json") -> str | None:
    """Why the saved verifier in `folder` may not be a training run's starting point, or None: it
    must record that it and its whole line were trained under this guard (`LINEAGE_KEY`)."""
    path = Path(folder) / meta_file
    try:
        provenance = json.loads(path.read_text("utf-8")).get("provenance") or {}
    except (OSError, ValueError, AttributeError) as exc:
        return f"cannot read {path} to check where it was trained: {exc}"
    if provenance.get(LINEAGE_KEY) is True:
        return None
    return (
        f"{folder} (or a verifier it started from) was trained before the evaluation-data guard, on "
        "examples of held-out and evaluation questions, and a warm start would carry what it learned "
        "from them: train from the packaged encoder (no --init-from) or from a verifier trained under "
        "the guard"
    )


def refuse_evaluation_run(run: str | Path, records: Iterable[Mapping[str, Any]], part: str) -> None:
    """Raise `InputError` if a record of the eval run `run` (dicts with `dataset` and `question`) is
    evaluation data, before `part` is fitted on it: the core's test (`verirag.evaluation_data`), by
    its dataset's name and by its question (a copy under another name, where $VERIRAG_DATA_DIR holds
    instruct_qa_human), as `verirag calibrate` refuses it."""
    from verirag.errors import InputError

    records = list(records)
    why = evaluation_refusal(
        (str(r.get("dataset", "")) for r in records), (str(r.get("question") or "") for r in records)
    )
    if why is not None:
        raise InputError(f"{run}: {why}; {part} is never fitted on it")
