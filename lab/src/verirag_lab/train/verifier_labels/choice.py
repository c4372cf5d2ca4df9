"""`choice`: a question turned into a choice between its gold answer and another of the same kind
("who wrote the song X" -> "who wrote the song X, A or B?"), answered with each option over the same
passages: the gold option supported (when the passages hold the evidence), the other not.

Why: a choice question's claim names every option ("Which is the Oil Capital of China, Chaoyang
District, Shantou, or Daqing? Daqing"), so a verifier that reads the claim's words against the
passage cannot tell which option the answer chose. The shipped verifier ranked the local model's
answers to HotpotQA's choice questions below chance (AUROC 0.388 on 14 held-out answers, nli 0.925)
and scored the wrong option of a made-up one above the right one. HotpotQA's own choice questions
are few (the `swap` recipe already answers them with the other option); this recipe makes them from
every question. The two answers of a pair share the question, the options' order and the passages,
so only the chosen option tells them apart.

The alternative is drawn as `swap` draws its replacement (`replacements.pick`: a span of the same
kind in the passages, another question's gold answer, a moved number or date), once per question,
and the options' order is seeded: both records of a pair read the same question. Yes/no questions
and questions that already offer a choice are left to `swap`.
"""

from __future__ import annotations

from typing import Any

from verirag_lab.train.verifier_labels.context import Item, LabelContext, variant_items
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.replacements import Replacement, is_choice_question, pick
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import Span, answer_kind

NAME = "choice"
NEEDS_LLM = False
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items
# Longer gold answers make an unnatural list of options.
MAX_OPTION_WORDS = 6


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if not q.answers or is_choice_question(q.text):
        return []
    return variant_items(NAME, q, ctx, ("gold", "other"), make)


def choice_question(q: Question, first: Any, second: Any) -> dict[str, Any]:
    """The question spec "<question>, FIRST or SECOND?": the question's text (by id) with its final
    question mark, if any, replaced; no benchmark text is written."""
    text = q.text
    end = len(text.rstrip())
    start = end - 1 if text[:end].endswith("?") else end
    return {
        "edit": {"question_of": [q.dataset, q.id]},
        "offset": start,
        "length": len(text) - start,
        "replacement": {"join": [", ", first, " or ", second, "?"]},
    }


def alternative(ctx: LabelContext, q: Question, keys: list[str], kind: str) -> tuple[Replacement, bool] | None:
    """(the other option, whether the gold option comes first) for the gold answer of `kind`, drawn
    with a seed of its own, so both records of a pair draw the same."""
    answer = q.answers[q.answer_index]
    rng = ctx.rng(record_id(NAME, q.dataset, q.id, "pair", ctx.seed))
    r = pick(ctx, q, Span(0, len(answer), kind, answer), keys, q.answers, "", rng)
    return None if r is None else (r, rng.random() < 0.5)


def make(ctx: LabelContext, q: Question, item_id: str, variant: str) -> dict:
    answer = q.answers[q.answer_index]
    kind = answer_kind(answer)
    if kind == "yesno":
        return question_skipped(item_id, NAME, q, "a yes/no question offers no options")
    if len(answer.split()) > MAX_OPTION_WORDS:
        return question_skipped(item_id, NAME, q, f"the gold answer is longer than {MAX_OPTION_WORDS} words")
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    drawn = alternative(ctx, q, keys, kind)
    if drawn is None:
        return question_skipped(item_id, NAME, q, f"no alternative of kind {kind}")
    other, gold_first = drawn
    gold = {"answer_from": [q.dataset, q.id, q.answer_index]}
    options = (gold, other.spec) if gold_first else (other.spec, gold)
    chosen, label = (gold, int(ctx.sources[q.dataset].has_evidence(q, keys))) if variant == "gold" else (other.spec, 0)
    return question_labelled(
        item_id,
        NAME,
        q,
        keys,
        chosen,
        label,
        meta={"kind": kind, "origin": other.origin, "gold_first": gold_first},
        extra={"question": choice_question(q, *options)},
    )
