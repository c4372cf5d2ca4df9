"""`real`: a local model answers from gold, mixed or distractor passages; graded against gold answers.

Label (the AwF label): supported (1) when the answer is right against the gold answers
(`ground_truth.matches`, rule recall_or_substring) and the passages it was given hold the evidence
(`sources`: NQ, a gold answer in a passage; HotpotQA, every supporting paragraph); unsupported (0)
when it is wrong, an abstention, or right without support in its passages (from knowledge).
NoMIRACL non_relevant queries have no gold answers and no relevant passage: every answer is 0.

Per question and model, `real_per_question` answers: the first is the long answer from the gold
passages at temperature 0 (the base the other recipes edit, so one request serves them all); the
rest go round the passage conditions with a style and a temperature drawn for the question.
"""

from __future__ import annotations

from verirag_lab.train.verifier_labels.context import CONDITIONS, Item, LabelContext
from verirag_lab.train.verifier_labels.generation import STYLES, TEMPERATURES
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.sources import Question

NAME = "real"
NEEDS_LLM = True
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items
BASE = ("gold", "long", 0.0)


def variants(ctx: LabelContext, q: Question, model: str) -> list[tuple[str, str, float]]:
    """(condition, style, temperature) of each answer `model` gives to `q`."""
    conditions = ctx.conditions(q)
    chosen = [BASE] if conditions == CONDITIONS else []
    rng = ctx.rng(NAME, q.group, model)
    i = len(chosen)
    while len(chosen) < ctx.real_per_question and i < 4 * ctx.real_per_question:
        combo = (conditions[i % len(conditions)], rng.choice(STYLES), rng.choice(TEMPERATURES))
        if combo not in chosen:
            chosen.append(combo)
        i += 1
    return chosen


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    items = []
    for model in ctx.models:
        for condition, style, temperature in variants(ctx, q, model):
            item_id = record_id(NAME, q.dataset, q.id, f"{model}.{condition}.{style}.t{temperature:g}", ctx.seed)
            items.append(
                Item(
                    item_id,
                    NAME,
                    q.dataset,
                    q.id,
                    lambda i=item_id, m=model, c=condition, s=style, t=temperature: make(ctx, q, i, m, c, s, t),
                )
            )
    return items


def make(
    ctx: LabelContext, q: Question, item_id: str, model: str, condition: str, style: str, temperature: float
) -> dict:
    if (condition, style, temperature) == BASE:
        base = ctx.base_answer(q, model)
        keys, g = (base.passages, base.generated) if base else (None, None)
    else:
        keys = ctx.passage_set(q, condition)
        g = ctx.generate(q, model, style, keys, temperature) if keys else None
    if keys is None:
        return question_skipped(item_id, NAME, q, f"no {condition} passages")
    if not g.text:
        return question_skipped(item_id, NAME, q, "the model returned an empty answer")
    grade = ctx.grade(q, g.text, keys)
    meta = {"condition": condition, "style": style, **grade.meta()}
    if g.finish_reason == "length":
        meta["truncated"] = True
    return question_labelled(item_id, NAME, q, keys, g.text, grade.label, generation=g.provenance, meta=meta)
