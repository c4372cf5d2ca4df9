"""HotpotQA in its official format: a JSON array of records (or the same records as JSON lines).

    {"_id", "question", "answer", "type", "level",
     "context": [[title, [sentence, ...]], ...],          # 10 paragraphs in the distractor setting
     "supporting_facts": [[title, sentence_index], ...]}

Two ways to turn a record into examples:

- mode="twins" (default), the AwF paper's treatment of BioASQ: each question twice, once with
  distractor paragraphs only (unanswerable) and once with one distractor replaced by a gold
  paragraph (answerable). Both copies share `group` = the question id, so cross-validation can
  keep them in one fold. Ids are "<qid>:unanswerable" and "<qid>:answerable".
- mode="distractor": one example with all context paragraphs, relevance 1 for the
  supporting-fact paragraphs.

Twins give answerability labels that do not depend on any retriever. Two caveats, recorded per
example in `meta`: HotpotQA questions are multi-hop, so a single gold paragraph does not always
answer the question alone (the gold paragraph that contains the answer string is preferred, see
`_pick_gold`); and a distractor may mention the answer string (`answer_in_distractors`).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.types import Example, Passage

from ._io import read_records, require
from ._retrieved import contains_answer
from ._sampling import subsample

log = logging.getLogger(__name__)

MODES = ("twins", "distractor")
# Answers that any paragraph "contains" as a string: useless for picking or checking paragraphs.
_YES_NO = {"yes", "no"}


@dataclass
class HotpotRecord:
    """One HotpotQA question with its context paragraphs as (title, text) in file order."""

    id: str
    question: str
    answer: str
    paragraphs: list[tuple[str, str]]
    gold_titles: list[str]  # supporting-fact titles, in order of first mention
    meta: dict[str, Any] = field(default_factory=dict)


def paragraph_text(sentences: Any) -> str:
    """HotpotQA sentences keep their leading space, so they are joined with nothing."""
    if isinstance(sentences, str):
        return sentences.strip()
    return "".join(s for s in sentences if isinstance(s, str)).strip()


def passage_id(title: str) -> str:
    return f"hotpotqa:{title}"


def parse_record(rec: Any, where: str) -> HotpotRecord:
    """A HotpotRecord from one raw record; `InputError` naming `where` if a field is malformed.

    Supporting facts may be [title, index] (official) or [title, indices, sentences, ...] (as in
    some re-distributions): only the title is used.
    """
    if not isinstance(rec, dict):
        raise InputError(f"{where}: expected a JSON object, got {type(rec).__name__}")
    qid = str(rec["_id"] if "_id" in rec else require(rec, "id", where))
    context = require(rec, "context", where)
    facts = require(rec, "supporting_facts", where)
    if not isinstance(context, list) or not isinstance(facts, list):
        raise InputError(f"{where}: `context` and `supporting_facts` must be lists")
    paragraphs = []
    for item in context:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
            raise InputError(f"{where}: each context entry must be [title, sentences], got {item!r:.80}")
        paragraphs.append((item[0], paragraph_text(item[1])))
    gold: list[str] = []
    for fact in facts:
        if not (isinstance(fact, list) and fact and isinstance(fact[0], str)):
            raise InputError(f"{where}: each supporting fact must start with a title, got {fact!r:.80}")
        if fact[0] not in gold:
            gold.append(fact[0])
    question = require(rec, "question", where)
    if not isinstance(question, str) or not question.strip():
        raise InputError(f"{where}: `question` must be a non-empty string")
    answer = rec.get("answer", "")
    return HotpotRecord(
        id=qid,
        question=question,
        answer=str(answer or ""),
        paragraphs=paragraphs,
        gold_titles=gold,
        meta={k: rec[k] for k in ("type", "level") if k in rec},
    )


def read_hotpotqa(path: str | Path) -> list[HotpotRecord]:
    """Every record of one HotpotQA file (JSON array or JSON lines)."""
    return [parse_record(rec, f"{path}, record {pos}") for pos, rec in read_records(path)]


def texts_by_title(records: list[HotpotRecord]) -> dict[str, str]:
    """Paragraph text of every title seen in any record's context (first occurrence wins).

    In HotpotQA a title always stands for the same paragraph (the article's lead), so a gold
    paragraph missing from its own question's context can be taken from another question's.
    """
    texts: dict[str, str] = {}
    for r in records:
        for title, text in r.paragraphs:
            if text:
                texts.setdefault(title, text)
    return texts


def _answer_in(text: str, answer: str) -> int:
    if not answer.strip() or answer.strip().lower() in _YES_NO:
        return 0
    return contains_answer(text, [answer])


def _pick_gold(rec: HotpotRecord, texts: dict[str, str]) -> tuple[str, str] | None:
    """The gold paragraph for the answerable twin: the first supporting-fact paragraph that
    contains the answer (for a bridge question, the second hop), else the first one with text."""
    own = dict(rec.paragraphs)
    available = [(t, own.get(t) or texts.get(t, "")) for t in rec.gold_titles]
    available = [(t, x) for t, x in available if x]
    if not available:
        return None
    with_answer = [(t, x) for t, x in available if _answer_in(x, rec.answer)]
    return (with_answer or available)[0]


def _passage(title: str, text: str) -> Passage:
    return Passage(id=passage_id(title), text=text, title=title, source="hotpotqa")


def twin_examples(
    rec: HotpotRecord, texts: dict[str, str], *, dataset: str, n_passages: int | None = None
) -> list[Example]:
    """[unanswerable, answerable] examples of one question, or [] when they cannot be built
    (no distractor paragraph, or no text for any gold paragraph).

    The replaced distractor's position is drawn from a generator seeded with the question id, so
    it is the same in every run and independent of subsampling.
    """
    gold_set = set(rec.gold_titles)
    distractors = [(t, x) for t, x in rec.paragraphs if t not in gold_set and x]
    if n_passages is not None:
        distractors = distractors[:n_passages]
    gold = _pick_gold(rec, texts)
    if not distractors or gold is None:
        return []
    position = random.Random(f"hotpotqa-twin:{rec.id}").randrange(len(distractors))
    with_gold = list(distractors)
    with_gold[position] = gold
    meta = dict(
        rec.meta,
        answer=rec.answer,
        gold_title=gold[0],
        gold_position=position,
        gold_contains_answer=bool(_answer_in(gold[1], rec.answer)),
        answer_in_distractors=any(_answer_in(x, rec.answer) for _, x in distractors),
    )
    refs = [rec.answer] if rec.answer else []
    unanswerable = Example(
        id=f"{rec.id}:unanswerable",
        question=rec.question,
        passages=[_passage(t, x) for t, x in distractors],
        references=refs,
        relevance=[0] * len(distractors),
        answerable=False,
        dataset=dataset,
        group=rec.id,
        meta=dict(meta, variant="unanswerable"),
    )
    answerable = Example(
        id=f"{rec.id}:answerable",
        question=rec.question,
        passages=[_passage(t, x) for t, x in with_gold],
        references=list(refs),
        relevance=[int(i == position) for i in range(len(with_gold))],
        answerable=True,
        dataset=dataset,
        group=rec.id,
        meta=dict(meta, variant="answerable"),
    )
    return [unanswerable, answerable]


def distractor_example(rec: HotpotRecord, *, dataset: str) -> Example:
    """All context paragraphs; answerable True when every supporting paragraph is present,
    False when none is, None when only some are (a multi-hop question may still be answered)."""
    gold_set = set(rec.gold_titles)
    present = gold_set & {t for t, _ in rec.paragraphs}
    answerable = True if present == gold_set else (False if not present else None)
    return Example(
        id=rec.id,
        question=rec.question,
        passages=[_passage(t, x) for t, x in rec.paragraphs],
        references=[rec.answer] if rec.answer else [],
        relevance=[int(t in gold_set) for t, _ in rec.paragraphs],
        answerable=answerable,
        dataset=dataset,
        group=rec.id,
        meta=dict(rec.meta, gold_titles=list(rec.gold_titles)),
    )


def check_n_passages(n_passages: object) -> int | None:
    if n_passages is None:
        return None
    if isinstance(n_passages, bool) or not isinstance(n_passages, int) or n_passages < 1:
        raise InputError(f"n_passages must be a positive integer or None, got {n_passages!r}")
    return n_passages


def build_examples(
    records: list[HotpotRecord], *, dataset: str, mode: str, n: int | None, seed: int, n_passages: int | None
) -> list[Example]:
    """Examples of `records` in `mode`; `n` samples questions (twins: among buildable ones)."""
    if mode not in MODES:
        raise InputError(f"unknown HotpotQA mode {mode!r}; choose one of {', '.join(MODES)}")
    n_passages = check_n_passages(n_passages)
    if mode == "distractor":
        return [distractor_example(r, dataset=dataset) for r in subsample(records, n, seed)]
    texts = texts_by_title(records)
    pairs = [p for p in (twin_examples(r, texts, dataset=dataset, n_passages=n_passages) for r in records) if p]
    if len(pairs) < len(records):
        log.info(
            "%s: %d of %d questions skipped (no distractor, or no text for a gold paragraph)",
            dataset,
            len(records) - len(pairs),
            len(records),
        )
    return [ex for pair in subsample(pairs, n, seed) for ex in pair]


def load_hotpotqa_original(
    path: str | Path, *, n: int | None = None, seed: int = 0, mode: str = "twins", n_passages: int | None = None
) -> list[Example]:
    """Examples from one official HotpotQA file (JSON array or JSON lines).

    Options: mode "twins" | "distractor"; n_passages (twins only): keep the first n_passages
    distractors (default: all, 8 for a distractor-setting question with two gold paragraphs).
    """
    if mode not in MODES:
        raise InputError(f"unknown HotpotQA mode {mode!r}; choose one of {', '.join(MODES)}")
    return build_examples(
        read_hotpotqa(path), dataset="hotpotqa_original", mode=mode, n=n, seed=seed, n_passages=n_passages
    )
