"""The benchmark questions labelling reads, and their passages by key, from the data folder.

A record names its passages by key, never by text: NQ by the row of the lost-in-the-middle oracle
file whose gold passage it is (the `nq` loader's ids), HotpotQA by "<question id>:<index>" of the
place its title's paragraph first appears in the files (in HotpotQA a title always stands for the
same paragraph, see `hotpotqa_original.texts_by_title`; a gold paragraph missing from its own
question's context is found there), NoMIRACL by docid. Every source offers the same few things: its questions, a passage by key, whether a set of
passages holds the evidence for a question's gold answer, and distractors (passages that do not
hold a gold answer).

- nq: the 2,655 NQ-open questions of lost_in_the_middle_nq, each with its gold Wikipedia passage
  (questions whose gold passage does not contain a gold answer are not used). Distractors are
  other questions' gold passages, the most similar by BM25 first (hard negatives; others in a
  fixed order when BM25 finds too few), none holding a gold answer. Evidence: some given passage contains a gold answer (normalised substring, the
  `nq` loader's relevance).
- hotpotqa: the HotpotQA questions of hotpotqa_amor_subset whose supporting paragraphs all have
  text. Distractors: the question's own non-supporting paragraphs that do not contain the answer.
  Evidence: every supporting paragraph is given (a multi-hop answer needs both hops).
- hotpotqa_support: HotpotQA questions with their supporting sentences only, from a folder outside
  the data folder (`hotpotqa_support` module: what it reads and leaves out). Distractors: other
  questions' paragraphs, by BM25 as NQ's. Evidence: every supporting paragraph, as HotpotQA's.
- docs: paragraphs of Debian documentation packages installed on this machine (`doc_corpus`), one
  "question" per paragraph (a fixed question naming the document); no gold answers.
- nomiracl: NoMIRACL's non_relevant queries (10 passages, none relevant, no gold answers): any
  answer from them is unsupported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.metrics.qa import substring_match
from verirag.types import Passage
from verirag_lab.datasets import dataset_info
from verirag_lab.datasets.hotpotqa import read_hotpotqa_path
from verirag_lab.datasets.nomiracl import read_subset
from verirag_lab.datasets.nq import find_oracle_file, read_oracle

DATASETS = ("nq", "hotpotqa", "hotpotqa_support", "nomiracl", "docs")
MULTI_HOP = ("hotpotqa", "hotpotqa_support")  # evidence is every supporting paragraph
RETRIEVED_DISTRACTORS = ("nq", "hotpotqa_support")  # distractors: other questions' evidence, by BM25
DISTRACTOR_CANDIDATES = 40  # BM25 hits looked at per NQ question to find k clean distractors


@dataclass(frozen=True)
class Question:
    dataset: str
    id: str
    text: str
    answers: tuple[str, ...]  # gold answers (empty: none known)
    gold: tuple[str, ...]  # passage keys that hold the evidence, in order
    answer_index: int = 0  # the gold answer swaps start from (one its evidence contains)
    kind: str = ""  # HotpotQA's question type ("bridge" or "comparison"); "" elsewhere

    @property
    def group(self) -> str:
        """What validation holds out whole: the question; for docs, the whole document."""
        if self.dataset == "docs":
            return f"docs:{self.id.rsplit('#', 1)[0]}"
        return f"{self.dataset}:{self.id}"


def question_hash(text: str) -> str:
    """8 hex digits of the question text: a record checks it still names the same question."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def holds_answer(text: str, answers: Sequence[str]) -> bool:
    refs = [a for a in answers if a.strip()]
    return bool(refs) and substring_match(text, refs) >= 1.0


@dataclass
class Source:
    """One dataset's questions (file order) and passages by key."""

    name: str
    questions: dict[str, Question]
    passages: dict[str, tuple[str, str]]  # key -> (title, text)
    own_distractors: dict[str, list[str]] = field(default_factory=dict)
    unusable: int = 0  # questions left out, see module doc
    evidence_of: dict[str, list[str]] = field(default_factory=dict)  # passage key -> questions it is evidence for
    evidence_ids: dict[str, list[str]] = field(default_factory=dict)  # passage key -> those questions' ids
    banned: set[str] = field(default_factory=set)  # evidence of excluded questions: never a distractor
    _bm25: Any = field(default=None, repr=False)  # NQ distractor search, built on first use
    _keys: list[str] = field(default_factory=list, repr=False)

    def question(self, qid: str) -> Question:
        if qid not in self.questions:
            raise InputError(f"{self.name}: no question with id {qid!r} in the data (was the data changed?)")
        return self.questions[qid]

    def passage(self, key: str) -> Passage:
        if key not in self.passages:
            raise InputError(f"{self.name}: no passage with key {key!r} in the data (was the data changed?)")
        title, text = self.passages[key]
        return Passage(id=key, text=text, title=title, source=self.name)

    def has_evidence(self, q: Question, keys: Sequence[str]) -> bool:
        """Whether the passages `keys` hold the evidence for a gold answer of `q`."""
        if self.name in MULTI_HOP:
            return bool(q.gold) and set(q.gold) <= set(keys)
        return any(holds_answer(self.passages[k][1], q.answers) for k in keys)

    def distractors(self, q: Question, k: int) -> list[str]:
        """Up to `k` passage keys that hold no gold answer of `q` (retrieved ones: most similar first)."""
        if self.name in RETRIEVED_DISTRACTORS:
            return self._retrieved_distractors(q, k)
        return [key for key in self.own_distractors.get(q.id, []) if key not in self.banned][:k]

    def _retrieved_distractors(self, q: Question, k: int) -> list[str]:
        retriever = self._retriever()
        gold_texts = {self.passages[key][1] for key in q.gold}
        hits, _ = retriever.search_hits(q.text, DISTRACTOR_CANDIDATES)
        # BM25's hits first; when they run short, other passages in an order fixed by the question
        rest = sorted(self._keys, key=lambda key: hashlib.sha256(f"{q.id}|{key}".encode()).digest())
        keys: list[str] = []
        for key in [self._keys[int(i)] for i in hits] + rest:
            text = self.passages[key][1]
            if (
                key in keys
                or key in q.gold
                or key in self.banned
                or text in gold_texts
                or holds_answer(text, q.answers)
            ):
                continue
            keys.append(key)
            if len(keys) == k:
                break
        return keys

    def _retriever(self):
        if self._bm25 is None:
            from verirag.retrieval import (
                BM25Retriever,  # built once, only when distractors are needed
            )

            self._keys = list(self.passages)
            self._bm25 = BM25Retriever.build([self.passage(key) for key in self._keys])
        return self._bm25


def data_path(data_root: Path, dataset: str) -> Path:
    """Where `dataset`'s files are under `data_root` (the registry's default layout; hotpotqa_support's
    folder may be elsewhere, see its module)."""
    if dataset == "hotpotqa_support":
        from verirag_lab.train.verifier_labels.hotpotqa_support import support_folder

        return support_folder(data_root)
    return Path(data_root) / dataset_info(dataset).default


def load_nq(data_root: Path) -> Source:
    rows = read_oracle(find_oracle_file(data_path(data_root, "nq")))
    passages = {str(r["row"]): r["gold"] for r in rows}
    questions, unusable = {}, 0
    for r in rows:
        key = str(r["row"])
        found = [i for i, a in enumerate(r["answers"]) if holds_answer(r["gold"][1], [a])]
        if not found:
            unusable += 1
            continue
        questions[key] = Question("nq", key, r["question"], tuple(r["answers"]), (key,), found[0])
    evidence_of = {str(r["row"]): [r["question"]] for r in rows}
    evidence_ids = {str(r["row"]): [str(r["row"])] for r in rows}
    return Source("nq", questions, passages, unusable=unusable, evidence_of=evidence_of, evidence_ids=evidence_ids)


def load_hotpotqa(data_root: Path) -> Source:
    records = read_hotpotqa_path(data_path(data_root, "hotpotqa"))
    passages, key_of = {}, {}
    for r in records:  # a title's key is where its paragraph first appears: "<question id>:<index>"
        for i, (title, text) in enumerate(r.paragraphs):
            if text and title not in key_of:
                key_of[title] = f"{r.id}:{i}"
                passages[key_of[title]] = (title, text)
    questions, distractors, unusable, evidence_of, evidence_ids = {}, {}, 0, {}, {}
    for r in records:
        for title in r.gold_titles:
            if title in key_of:
                evidence_of.setdefault(key_of[title], []).append(r.question)
                evidence_ids.setdefault(key_of[title], []).append(str(r.id))
        if not r.answer.strip() or not r.gold_titles or any(t not in key_of for t in r.gold_titles):
            unusable += 1
            continue
        yes_no = r.answer.strip().lower() in ("yes", "no")
        questions[r.id] = Question(
            "hotpotqa",
            r.id,
            r.question,
            (r.answer,),
            tuple(key_of[t] for t in r.gold_titles),
            kind=str(r.meta.get("type", "")),
        )
        distractors[r.id] = [
            key_of[t]
            for t, x in r.paragraphs
            if x and t not in r.gold_titles and (yes_no or not holds_answer(x, [r.answer]))
        ]
    return Source(
        "hotpotqa",
        questions,
        passages,
        distractors,
        unusable=unusable,
        evidence_of=evidence_of,
        evidence_ids=evidence_ids,
    )


def load_nomiracl(data_root: Path) -> Source:
    examples = read_subset(data_path(data_root, "nomiracl"), "non_relevant")
    questions, passages, distractors = {}, {}, {}
    for ex in examples:
        questions[ex.id] = Question("nomiracl", ex.id, ex.question, (), ())
        for p in ex.passages:
            passages.setdefault(p.id, (p.title, p.text))
        distractors[ex.id] = [p.id for p in ex.passages]
    return Source("nomiracl", questions, passages, distractors)


def load_docs(data_root: Path) -> Source:
    """The installed documentation corpus (`doc_corpus`; not under the data folder)."""
    from verirag_lab.train.verifier_labels.doc_corpus import load_doc_source

    return load_doc_source()


def load_hotpotqa_support(data_root: Path) -> Source:
    from verirag_lab.train.verifier_labels.hotpotqa_support import load_hotpotqa_support as load

    return load(data_root)


LOADERS = {
    "nq": load_nq,
    "hotpotqa": load_hotpotqa,
    "hotpotqa_support": load_hotpotqa_support,
    "nomiracl": load_nomiracl,
    "docs": load_docs,
}


def check_datasets(datasets: Sequence[str]) -> list[str]:
    unknown = [d for d in datasets if d not in LOADERS]
    if unknown or not datasets:
        raise InputError(
            f"unknown dataset(s) {', '.join(unknown) or '(none given)'} for verifier labels; "
            f"choose from {', '.join(DATASETS)}"
        )
    return list(dict.fromkeys(datasets))


def load_sources(data_root: Path, datasets: Sequence[str]) -> dict[str, Source]:
    """{name: Source} of `datasets` read from `data_root`; `InputError` for a missing file."""
    return {name: LOADERS[name](Path(data_root)) for name in check_datasets(datasets)}
