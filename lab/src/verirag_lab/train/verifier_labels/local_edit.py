"""`local_edit`: a model's long correct answer with one name, number or date changed in one
sentence (LettuceDetect's recipe): the answer 0, the edited sentence 0, the others 1.

The base is the model's long answer from the gold passages at temperature 0 (`real`'s first
answer). It is used only when it is right, has its evidence, has 12 words or more and every
sentence is grounded (its names and numbers in the passages), so "the others 1" holds. The
edited span is one the passages mention (so the original was supported there); the replacement
is of the same kind (`replacements`).
"""

from __future__ import annotations

from verirag.metrics.qa import normalize_answer
from verirag_lab.train.verifier_labels.context import Item, LabelContext
from verirag_lab.train.verifier_labels.edits import edit_record
from verirag_lab.train.verifier_labels.records import question_skipped, record_id
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import find_spans

NAME = "local_edit"
NEEDS_LLM = True
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items
MIN_WORDS = 12  # "long": a short answer has nothing to edit but the answer itself (that is `swap`)


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if not q.answers:
        return []
    items = []
    for model in ctx.models:
        item_id = record_id(NAME, q.dataset, q.id, f"{model}.edit", ctx.seed)
        items.append(Item(item_id, NAME, q.dataset, q.id, lambda i=item_id, m=model: make(ctx, q, i, m)))
    return items


def make(ctx: LabelContext, q: Question, item_id: str, model: str) -> dict:
    base = ctx.base_answer(q, model)
    if base is None or not base.grade.label:
        return question_skipped(item_id, NAME, q, "the model's long answer is not correct and supported")
    if len(base.generated.text.split()) < MIN_WORDS:
        return question_skipped(item_id, NAME, q, f"the model's answer has fewer than {MIN_WORDS} words")
    if not all(base.grounded):
        return question_skipped(item_id, NAME, q, "a sentence of the model's answer is not grounded")
    evidence = normalize_answer(" ".join(p.text for p in ctx.passages(q, base.passages)))
    spans = [sp for sp in find_spans(base.generated.text) if normalize_answer(sp.text) in evidence]
    rng = ctx.rng(item_id)
    rng.shuffle(spans)
    if not spans:
        return question_skipped(item_id, NAME, q, "no name, number or date of the passages in the answer")
    return edit_record(ctx, q, item_id, NAME, base, spans, rng)
