"""`hotpotqa_support`: more multi-hop training questions, HotpotQA's with their supporting facts only.

The shared HotpotQA file leaves 99 training questions once the evaluation sets are held out (issue
47, item 1), too few to teach multi-hop support. Public snapshots hold HotpotQA questions with their
answer, type and supporting sentences but not the other paragraphs, e.g. LightChen233/ECM's
`data/hotpotqa/train.jsonl` (500 training questions, sentences only) and `data/hotpotqa/test.json`
(1,000 dev questions, each sentence as "Title | sentence"). This source reads such files from a
folder (`$VERIRAG_HOTPOTQA_SUPPORT`, else `hotpotqa_support/` in the data folder), by path, never
copied:

    {"question", "answer", "type", "evidence": ["Title | sentence" or "sentence", ...]}

Files of HotpotQA, 2WikiMultihopQA and MuSiQue in their own formats may sit beside them: their
supporting sentences are read the same way (`support_rows`). `scripts/make_support_folder.sh` makes
the folder from the public snapshots used here.

- passages: a question's sentences of one title form one paragraph; untitled sentences are a
  paragraph each (title ""), so recipes that need a title skip them;
- distractors: other questions' supporting paragraphs, the most similar by BM25 first, as NQ's;
- evidence: every supporting paragraph (a multi-hop answer needs both hops), as HotpotQA's;
- a question id is a hash of its text (the files carry none), a passage key a hash of its title and
  text (`passage_key`): neither depends on which files the folder holds or their order, so a
  labels record made from one copy of the snapshot resolves on another that holds its question
  (until 2026-12-01 a passage key counted the passages read before it, and a folder with one more
  file shifted them; `scripts/migrate_support_keys.py` rewrote the records made that way).

Left out, whatever the command line says: questions of the shared HotpotQA file (they are
labelled there, and some are evaluation questions), and any question one of whose supporting
sentences is part of a held-out HotpotQA question's evidence paragraph (a held-out document); such
paragraphs are never distractors either. instruct_qa_human's questions are dropped by labelling
(`exclusion`) and refused by the training guard, as for every source.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from verirag.errors import InputError
from verirag.retrieval.sentences import split_sentences
from verirag_lab.datasets._io import read_records
from verirag_lab.datasets.hotpotqa import hotpotqa_files, read_hotpotqa_path
from verirag_lab.train.verifier_labels.exclusion import question_key
from verirag_lab.train.verifier_labels.heldout_index import group_reason, normalised
from verirag_lab.train.verifier_labels.support_rows import TITLE_SEPARATOR, row_format, support_row

NAME = "hotpotqa_support"
FOLDER_ENV = "VERIRAG_HOTPOTQA_SUPPORT"


def support_folder(data_root: Path) -> Path:
    return Path(os.environ.get(FOLDER_ENV) or Path(data_root) / NAME)


def read_rows(folder: Path) -> list[dict | None]:
    """Every record of the folder's files (JSON arrays or JSON lines) as a support row (`support_rows`;
    None: it names no supporting sentence): the support-format rows first, then the others, each in
    file-name order. A question found twice keeps its first row, so records made from the support
    files alone read the same passages when other formats' files are added beside them."""
    if not folder.is_dir():
        raise InputError(
            f"{NAME}: no folder {folder}; set ${FOLDER_ENV} to a folder of HotpotQA files with supporting "
            "sentences (module doc)"
        )
    rows = [record for f in hotpotqa_files(folder) for _, record in read_records(f)]
    if not rows:
        raise InputError(f"{NAME}: no records in {folder}")
    native = [row for row in rows if row_format(row) == "support"]
    return native + [support_row(row) for row in rows if row_format(row) != "support"]


def paragraphs(evidence: list[str]) -> list[tuple[str, list[str]]]:
    """(title, sentences) per supporting paragraph: titled sentences gathered by title, in first-seen
    order; each untitled sentence its own paragraph."""
    out: list[tuple[str, list[str]]] = []
    index: dict[str, int] = {}
    for item in evidence:
        title, sep, sentence = str(item).partition(TITLE_SEPARATOR)
        title, sentence = (title.strip(), sentence.strip()) if sep else ("", str(item).strip())
        if not sentence:
            continue
        if title and title in index:
            out[index[title]][1].append(sentence)
            continue
        if title:
            index[title] = len(out)
        out.append((title, [sentence]))
    return out


def question_id(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:12]


def passage_key(title: str, body: str) -> str:
    """A supporting paragraph's key: a hash of what it says (module doc)."""
    return "p" + hashlib.sha256(f"{title}\n{body}".encode()).hexdigest()[:15]


def shared_hotpotqa(hotpotqa_folder: Path) -> tuple[set[str], str]:
    """(the shared file's question keys, its held-out questions' evidence paragraphs, normalised and
    joined by newlines: a sentence found in that text is a held-out document's)."""
    if not hotpotqa_folder.exists():
        raise InputError(
            f"{NAME} needs the shared HotpotQA file ({hotpotqa_folder}) to leave out its questions and "
            "its held-out questions' paragraphs"
        )
    keys, held = set(), []
    for r in read_hotpotqa_path(hotpotqa_folder):
        keys.add(question_key(r.question))
        if group_reason(f"hotpotqa:{r.id}") is not None:
            held += [normalised(text) for title, text in r.paragraphs if title in r.gold_titles and text]
    return keys, "\n".join(held)


def load_hotpotqa_support(data_root: Path):
    from verirag_lab.train.verifier_labels.sources import Question, Source, data_path

    rows = read_rows(support_folder(data_root))
    shared_keys, held_text = shared_hotpotqa(data_path(data_root, "hotpotqa"))
    questions, passages = {}, {}
    evidence_of, evidence_ids, banned, unusable = {}, {}, set(), 0
    for row in rows:
        if row is None:
            unusable += 1
            continue
        text, answer = str(row.get("question", "")).strip(), str(row.get("answer", "")).strip()
        paras = paragraphs(list(row.get("evidence") or []))
        qid = question_id(text)
        gold, held = [], False
        for title, sentences in paras:
            body = " ".join(sentences)
            key = passage_key(title, body)
            passages.setdefault(key, (title, body))
            gold.append(key)
            # sentence by sentence: a MuSiQue paragraph comes as one "sentence"
            if any(normalised(x) in held_text for s in sentences for x in split_sentences(s)):
                banned.add(gold[-1])
                held = True
        if not text or not answer or len(gold) < 2 or held or question_key(text) in shared_keys or qid in questions:
            unusable += 1
            continue
        # support_rows gives the answer and its aliases (MuSiQue's), deduplicated; ECM's rows the answer alone
        answers = tuple(a for a in (str(x).strip() for x in row.get("answers") or [answer]) if a)
        questions[qid] = Question(NAME, qid, text, answers, tuple(gold), kind=str(row.get("type", "")))
        for k in gold:
            evidence_of.setdefault(k, []).append(text)
            evidence_ids.setdefault(k, []).append(qid)
    return Source(
        NAME, questions, passages, unusable=unusable, evidence_of=evidence_of, evidence_ids=evidence_ids, banned=banned
    )
