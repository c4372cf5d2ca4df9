"""What the verifier's training refuses beyond instruct_qa_human: the held-out split (`heldout`).

An example is held out by its group (a held-out or own-answer question, a man page, an Info
manual), by what its record reads (a passage that is a held-out question's evidence, an answer or
a turn drawn from a held-out question) or, for resolved examples whose group may say anything,
by its text: a held-out question's text (after `question_key`), a held-out question's evidence
passage or a held-out document's paragraph (whitespace and case aside). `HeldOutIndex.build`
reads those texts from the data folder and the installed documentation once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag_lab.train.verifier_labels.exclusion import question_key
from verirag_lab.train.verifier_labels.heldout import (
    FINAL_PACKAGES,
    HELDOUT_PACKAGES,
    doc_split,
    hash_split,
    own_answer_groups,
)

HELD_QUESTION = "held-out question"
OWN_QUESTION = "own-answer evaluation question"
HELD_DOCUMENT = "held-out document (man page)"
FINAL_DOCUMENT = "final-test document (Info manual)"
HELD_EVIDENCE = "a held-out question's evidence"
HELD_DRAWN = "answer or turn drawn from a held-out question"
QA_DATASETS = ("nq", "hotpotqa", "hotpotqa_support", "nomiracl")  # labelling's question datasets (docs is by document)
REQUIRED = ("nq", "hotpotqa")  # the label sets' datasets: without them no held-out text is known


def group_reason(group: str) -> str | None:
    """Why the question group "<dataset>:<id>" (docs: "docs:<package>:<path>") is held out, or None.
    Groups of other datasets (a user's own) are not labelling's and never held out here."""
    dataset, _, ident = group.partition(":")
    if dataset == "docs":
        return {"heldout": HELD_DOCUMENT, "final": FINAL_DOCUMENT}.get(doc_split(ident))
    if dataset not in QA_DATASETS:
        return None
    if group in own_answer_groups():
        return OWN_QUESTION
    return HELD_QUESTION if hash_split(dataset, ident) == "heldout" else None


def record_group(record: dict[str, Any]) -> str:
    """The question group of a labels record (a docs record's group is its whole document)."""
    example = str(record["example"])
    if record["dataset"] == "docs":
        return f"docs:{example.rsplit('#', 1)[0]}"
    return f"{record['dataset']}:{example}"


def spec_refs(spec: Any) -> Iterator[tuple[str, str, str]]:
    """("question" | "passage", dataset, id or key) of every reference inside a text spec (or a
    list of them, or a record's passage_edits), see `records.render`."""
    if isinstance(spec, list):
        for part in spec:
            yield from spec_refs(part)
    elif isinstance(spec, dict):
        for name, kind in (("answer_from", "question"), ("question_of", "question")):
            if isinstance(spec.get(name), list) and len(spec[name]) >= 2:
                yield kind, str(spec[name][0]), str(spec[name][1])
        for name in ("passage_span", "title_of"):
            if isinstance(spec.get(name), list) and len(spec[name]) >= 2:
                yield "passage", str(spec[name][0]), str(spec[name][1])
        for value in spec.values():
            if isinstance(value, (dict, list)):
                yield from spec_refs(value)


def normalised(text: str) -> str:
    return " ".join(text.lower().split())


@dataclass
class HeldOutIndex:
    """Held-out question texts, evidence keys and passage texts (module doc)."""

    questions: dict[str, str] = field(default_factory=dict)  # question_key -> reason
    evidence: dict[str, set[str]] = field(default_factory=dict)  # dataset -> evidence passage keys
    texts: dict[str, str] = field(default_factory=dict)  # normalised passage text -> reason
    notes: list[str] = field(default_factory=list)  # what could only be recognised by group

    def record_refusal(self, record: dict[str, Any]) -> str | None:
        """Why a labels record may not be trained on (its group, then what it reads), or None."""
        why = group_reason(record_group(record))
        if why is not None:
            return why
        dataset = str(record["dataset"])
        refs = [("passage", dataset, str(k)) for k in record.get("passages") or []]
        for name in ("answer", "question", "history", "passage_edits"):
            refs += spec_refs(record.get(name))
        for kind, ds, ident in refs:
            if kind == "passage":
                if ident in self.evidence.get(ds, ()):
                    return HELD_EVIDENCE
                if ds == "docs" and doc_split(ident) != "train":
                    return group_reason(f"docs:{ident.rsplit('#', 1)[0]}")
            elif group_reason(f"{ds}:{ident}") is not None:
                return HELD_DRAWN
        return None

    def text_refusal(self, questions: Iterable[str], passages: Iterable[str]) -> str | None:
        """Why an example asking `questions` (its question, its history's turns) over `passages`
        ("title\\ntext" or text) is held out by its text, or None."""
        for q in questions:
            why = self.questions.get(question_key(q.removeprefix("User: ")))
            if why is not None:
                return why
        for p in passages:
            for text in (p, p.split("\n", 1)[-1]):
                why = self.texts.get(normalised(text))
                if why is not None:
                    return why
        return None

    @classmethod
    def build(cls, data_root: str | Path, doc_root: str | Path | None = None) -> HeldOutIndex:
        """The index of the data folder's questions (nq and hotpotqa required, nomiracl where
        present) and of the installed man pages and Info manuals (`doc_corpus`)."""
        from verirag_lab.train.verifier_labels.doc_corpus import load_doc_source
        from verirag_lab.train.verifier_labels.sources import data_path, load_sources

        root = Path(data_root)
        missing = [d for d in REQUIRED if not data_path(root, d).exists()]
        if missing:
            raise InputError(
                f"{', '.join(missing)} not found under {root}: the verifier's training refuses their held-out "
                "questions by text and cannot run without them"
            )
        index = cls()
        present = [d for d in QA_DATASETS if data_path(root, d).exists()]
        for name, source in load_sources(root, present).items():
            # what the loader holds out as a document (hotpotqa_support: its paragraphs that hold a
            # held-out HotpotQA question's evidence), refused by key wherever a record names it
            index.evidence.setdefault(name, set()).update(source.banned)
            for q in source.questions.values():
                why = group_reason(q.group)
                if why is None:
                    continue
                index.questions.setdefault(question_key(q.text), why)
                for key in q.gold:
                    index.evidence.setdefault(name, set()).add(key)
                    index.texts.setdefault(normalised(source.passages[key][1]), HELD_EVIDENCE)
        try:
            docs = load_doc_source(doc_root, tuple(sorted(HELDOUT_PACKAGES | FINAL_PACKAGES)))
        except InputError:
            index.notes.append("no man page or Info manual installed: documents are recognised by their group only")
        else:
            for key, (_, text) in docs.passages.items():
                index.texts.setdefault(normalised(text), group_reason(f"docs:{key.rsplit('#', 1)[0]}") or HELD_DOCUMENT)
        return index
