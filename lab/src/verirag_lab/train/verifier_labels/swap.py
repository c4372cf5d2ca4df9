"""`swap`: the gold answer, unchanged (supported) or with its span replaced by one of the same kind
(unsupported); and a model's correct long answer with the gold answer in it replaced (unsupported).

The gold pair shares one passage set (the mixed condition: the evidence among distractors), so
only the answer tells the two apart. The replacement comes from the passages, another question's
gold answer or a moved value (`replacements`), drawn per question; with `swap_from` (e.g.
"passage": the hard negatives of AlignScore, a wrong span the passages do hold) only from those
origins, the first that has one, and the record's id names them. On a model's answer the edited
sentence is labelled 0 and the others 1 when they are grounded (`LabelContext.grounded`).
"""

from __future__ import annotations

from verirag_lab.train.verifier_labels.context import Item, LabelContext
from verirag_lab.train.verifier_labels.edits import edit_record, find_answer_span
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.replacements import pick
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import Span, answer_kind

NAME = "swap"
NEEDS_LLM = False
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if not q.answers:
        return []
    items = []
    swapped = "swapped" + (f"-from-{'+'.join(ctx.swap_from)}" if ctx.swap_from else "")
    for variant, make in (("gold", make_gold), (swapped, make_swapped)):
        item_id = record_id(NAME, q.dataset, q.id, variant, ctx.seed)
        items.append(Item(item_id, NAME, q.dataset, q.id, lambda i=item_id, f=make: f(ctx, q, i)))
    for model in ctx.models:
        item_id = record_id(NAME, q.dataset, q.id, f"{model}.swapped", ctx.seed)
        items.append(Item(item_id, NAME, q.dataset, q.id, lambda i=item_id, m=model: make_real(ctx, q, i, m)))
    return items


def make_gold(ctx: LabelContext, q: Question, item_id: str) -> dict:
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    answer = q.answers[q.answer_index]
    return question_labelled(
        item_id,
        NAME,
        q,
        keys,
        {"answer_from": [q.dataset, q.id, q.answer_index]},
        int(ctx.sources[q.dataset].has_evidence(q, keys)),
        meta={"kind": answer_kind(answer)},
    )


def make_swapped(ctx: LabelContext, q: Question, item_id: str) -> dict:
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    answer = q.answers[q.answer_index]
    kind = answer_kind(answer)
    r = pick(ctx, q, Span(0, len(answer), kind, answer), keys, q.answers, "", ctx.rng(item_id), ctx.swap_from)
    if r is None:
        where = f" from {'/'.join(ctx.swap_from)}" if ctx.swap_from else ""
        return question_skipped(item_id, NAME, q, f"no replacement of kind {kind}{where}")
    return question_labelled(item_id, NAME, q, keys, r.spec, 0, meta={"kind": kind, "origin": r.origin})


def make_real(ctx: LabelContext, q: Question, item_id: str, model: str) -> dict:
    base = ctx.base_answer(q, model)
    if base is None or not base.grade.label:
        return question_skipped(item_id, NAME, q, "the model's long answer is not correct and supported")
    span = find_answer_span(base.generated.text, q.answers)
    if span is None:
        return question_skipped(item_id, NAME, q, "no gold answer string in the model's answer")
    return edit_record(ctx, q, item_id, NAME, base, [span], ctx.rng(item_id))
