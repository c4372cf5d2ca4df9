"""Multi-hop QA rows of several public formats as `hotpotqa_support` rows: question, answer, type and
the supporting sentences as "Title | sentence" (`evidence`).

Public snapshots hold multi-hop questions in four shapes; each row becomes one support row, or None
when it cannot say what supports its answer:

- support rows (LightChen233/ECM's files): `evidence` already given, kept as they are;
- HotpotQA and 2WikiMultihopQA as released: `context` a list of [title, [sentences]],
  `supporting_facts` a list of [title, sentence index];
- HotpotQA as the Hugging Face `hotpot_qa` dataset stores it: `context` {title: [...], sentences:
  [[...]]}, `supporting_facts` {title: [...], sent_id: [...]};
- MuSiQue: `paragraphs` [{title, paragraph_text, is_supporting}], `answerable` (an unanswerable
  question has no support): a supporting paragraph is one "sentence" of its title; its
  `answer_aliases` join the answer in `answers` (every one grades an answer, and no distractor
  holds any of them).

Only the supporting sentences are kept, as for ECM's rows: the source's distractors are other
questions' supporting paragraphs (`sources`). A supporting fact whose sentence index is past its
paragraph is left out (2WikiMultihopQA has some); a row left with no evidence is None.
"""

from __future__ import annotations

from typing import Any

KINDS = ("support", "hotpotqa", "hotpotqa_hf", "musique")
TITLE_SEPARATOR = " | "


def row_format(row: Any) -> str | None:
    """Which of `KINDS` a row is, or None."""
    if not isinstance(row, dict):
        return None
    if isinstance(row.get("evidence"), list):
        return "support"
    if isinstance(row.get("paragraphs"), list):
        return "musique"
    context = row.get("context")
    if isinstance(context, dict):
        return "hotpotqa_hf"
    if isinstance(context, list) and "supporting_facts" in row:
        return "hotpotqa"
    return None


def _fact(title: Any, sentence: Any) -> str | None:
    title, sentence = str(title or "").strip(), str(sentence or "").strip()
    if not sentence:
        return None
    return f"{title}{TITLE_SEPARATOR}{sentence}" if title else sentence


def _facts(paragraphs: dict[str, list[Any]], facts: list[tuple[Any, Any]]) -> list[str]:
    """ "Title | sentence" of each (title, index) fact whose sentence exists, in the facts' order."""
    out: list[str] = []
    for title, index in facts:
        sentences = paragraphs.get(str(title))
        if sentences is None or isinstance(index, bool) or not isinstance(index, int):
            continue
        if 0 <= index < len(sentences) and (fact := _fact(title, sentences[index])) and fact not in out:
            out.append(fact)
    return out


def _hotpotqa(row: dict) -> list[str]:
    paragraphs = {}
    for item in row.get("context") or []:
        if isinstance(item, list | tuple) and len(item) == 2 and isinstance(item[1], list):
            paragraphs.setdefault(str(item[0]), item[1])
    facts = [tuple(f) for f in row.get("supporting_facts") or [] if isinstance(f, list | tuple) and len(f) == 2]
    return _facts(paragraphs, facts)


def _hotpotqa_hf(row: dict) -> list[str]:
    context, support = row.get("context") or {}, row.get("supporting_facts") or {}
    if not isinstance(context, dict) or not isinstance(support, dict):
        return []
    paragraphs = {}
    for title, sentences in zip(context.get("title") or [], context.get("sentences") or [], strict=False):
        if isinstance(sentences, list):
            paragraphs.setdefault(str(title), sentences)
    facts = list(zip(support.get("title") or [], support.get("sent_id") or [], strict=False))
    return _facts(paragraphs, facts)


def _musique(row: dict) -> list[str]:
    if row.get("answerable") is False:
        return []
    out = []
    for p in row.get("paragraphs") or []:
        if isinstance(p, dict) and p.get("is_supporting") and (fact := _fact(p.get("title"), p.get("paragraph_text"))):
            out.append(fact)
    return out


READERS = {"hotpotqa": _hotpotqa, "hotpotqa_hf": _hotpotqa_hf, "musique": _musique}


def support_row(row: Any) -> dict | None:
    """The support row of `row` (module doc), or None when its format is unknown or it has no
    supporting sentence."""
    kind = row_format(row)
    if kind is None:
        return None
    if kind == "support":
        return row
    evidence = READERS[kind](row)
    if not evidence:
        return None
    answer = str(row.get("answer") or "")
    aliases = [str(a) for a in row.get("answer_aliases") or [] if isinstance(a, str) and a.strip()]
    return {
        "question": str(row.get("question") or ""),
        "answer": answer,
        "answers": list(dict.fromkeys([answer, *aliases])),  # MuSiQue's aliases grade an answer too
        "type": str(row.get("type") or ""),
        "evidence": evidence,
    }
