"""`evidence_removal`: a right answer judged against passages without its evidence: unsupported.

NQ: the gold answer (and each model's correct long answer) with distractors only, none holding a
gold answer. HotpotQA: the same answers with one supporting paragraph dropped (each in turn, so
also the one without the answer string: the answer is then still in the passages, but not the
link that makes it the answer), the other kept among distractors. NoMIRACL has no gold answers;
its non_relevant queries serve in `real`.
"""

from __future__ import annotations

from verirag_lab.train.verifier_labels.context import (
    PASSAGES_PER_QUESTION,
    Item,
    LabelContext,
)
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.sources import MULTI_HOP, Question, holds_answer

NAME = "evidence_removal"
NEEDS_LLM = False
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items


def removals(q: Question) -> list[str]:
    """Names of the passage sets without evidence: "distractors", or "drop<i>" per supporting paragraph."""
    return [f"drop{i}" for i in range(len(q.gold))] if q.dataset in MULTI_HOP else ["distractors"]


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if not q.answers:
        return []
    items = []
    for removal in removals(q):
        for model in [None, *ctx.models]:
            item_id = record_id(NAME, q.dataset, q.id, f"{model or 'gold'}.{removal}", ctx.seed)
            items.append(
                Item(item_id, NAME, q.dataset, q.id, lambda i=item_id, r=removal, m=model: make(ctx, q, i, r, m))
            )
    return items


def passages_without_evidence(ctx: LabelContext, q: Question, removal: str) -> list[str] | None:
    if removal == "distractors":
        return ctx.passage_set(q, "distractor")
    dropped = int(removal[len("drop") :])
    kept = [t for i, t in enumerate(q.gold) if i != dropped]
    distractors = ctx.sources[q.dataset].distractors(q, PASSAGES_PER_QUESTION - len(kept))
    if not distractors:
        return None
    keys = kept + distractors
    ctx.rng(NAME, q.group, removal).shuffle(keys)
    return keys


def make(ctx: LabelContext, q: Question, item_id: str, removal: str, model: str | None) -> dict:
    keys = passages_without_evidence(ctx, q, removal)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no distractors")
    generation = None
    if model is None:
        answer = {"answer_from": [q.dataset, q.id, q.answer_index]}
    else:
        base = ctx.base_answer(q, model)
        if base is None or not base.grade.label:
            return question_skipped(item_id, NAME, q, "the model's long answer is not correct and supported")
        answer = base.generated.text
        generation = base.generated.provenance
    if ctx.sources[q.dataset].has_evidence(q, keys):  # cannot happen by construction; never label it 0
        return question_skipped(item_id, NAME, q, "the passages still hold the evidence")
    passages_text = " ".join(ctx.passage(q.dataset, k).text for k in keys)
    return question_labelled(
        item_id,
        NAME,
        q,
        keys,
        answer,
        0,
        generation=generation,
        meta={"removed": removal, "gold_answer_in_passages": holds_answer(passages_text, q.answers)},
    )
