"""`multihop`: HotpotQA answers whose support spans both supporting paragraphs (issue 36, item 1).

Every example carries several passages (the two supporting paragraphs among the question's own
distractors, or the two alone), so support has to be found across passages:
- both_mixed, both_pair (1): the gold answer with both supporting paragraphs (among distractors /
  alone);
- drop<i> (0): the same passages with supporting paragraph i replaced, in its place, by a
  distractor paragraph: one hop is missing;
- bridge_swap (0, bridge questions): the paragraph that names the bridge entity (the other
  supporting paragraph's title) names another entity of the same kind instead, a distractor's
  title (`passage_edits`): the chain from the question to the answer is broken;
- other_entity (0, comparison questions): the answer is the other compared entity (its title, or
  the other option of "A or B?"), or yes/no flipped.
"""

from __future__ import annotations

import re

from verirag.metrics.qa import normalize_answer
from verirag_lab.datasets.followup import bare_title
from verirag_lab.train.verifier_labels.context import PASSAGES_PER_QUESTION, Item, LabelContext, variant_items
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped
from verirag_lab.train.verifier_labels.replacements import other_option
from verirag_lab.train.verifier_labels.sources import MULTI_HOP, Question
from verirag_lab.train.verifier_labels.spans import Span, answer_kind, too_close

NAME = "multihop"
NEEDS_LLM = False
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if q.dataset not in MULTI_HOP or not q.answers or len(q.gold) != 2:
        return []
    variants = ["both_mixed", "both_pair", "drop0", "drop1"]
    variants.append("other_entity" if q.kind == "comparison" else "bridge_swap")
    return variant_items(NAME, q, ctx, variants, make)


def layout(ctx: LabelContext, q: Question) -> tuple[list[str], list[str]] | None:
    """(the mixed passage keys: both supporting paragraphs among distractors, shuffled; spare
    distractors that stand in for a dropped paragraph), or None with too few distractors."""
    distractors = ctx.sources[q.dataset].distractors(q, PASSAGES_PER_QUESTION)
    if len(distractors) < PASSAGES_PER_QUESTION - len(q.gold) + 2:
        return None
    n_mixed = PASSAGES_PER_QUESTION - len(q.gold)
    keys = list(q.gold) + distractors[:n_mixed]
    ctx.rng(NAME, q.group, "mixed").shuffle(keys)
    return keys, distractors[n_mixed:]


def mentions(text: str, name: str) -> list[tuple[int, int]]:
    """(start, end) of each whole-word occurrence of `name` in `text`."""
    return [(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text)]


def bridge_edit(ctx: LabelContext, q: Question, keys: list[str]) -> tuple[list, dict] | str:
    """The passage edits that swap the bridge entity, and what they did; a reason when none."""
    source = ctx.sources[q.dataset]
    a, b = q.gold
    ta, tb = bare_title(source.passage(a).title), bare_title(source.passage(b).title)
    if not ta or not tb:
        return "an untitled supporting paragraph"
    in_a, in_b = mentions(source.passage(a).text, tb), mentions(source.passage(b).text, ta)
    if bool(in_a) == bool(in_b):
        return "no one-way bridge mention between the supporting paragraphs"
    edited, bridge, spans = (a, tb, in_a) if in_a else (b, ta, in_b)
    if too_close(bridge, q.answers[0], "other"):
        return "the bridge entity is the answer"
    kind = answer_kind(bridge)
    text = source.passage(edited).text
    candidates = []
    for key in source.distractors(q, 20):
        other = bare_title(source.passage(key).title)
        if answer_kind(other) == kind and not too_close(bridge, other, kind) and other.lower() not in text.lower():
            candidates.append(key)
    if not candidates:
        return f"no distractor entity of kind {kind}"
    other = ctx.rng(NAME, q.group, "bridge").choice(candidates)
    index = keys.index(edited)
    edits = [[index, s, e - s, {"title_of": [q.dataset, other]}] for s, e in spans]
    return edits, {"bridge": edited, "replacement": other, "mentions": len(spans), "kind": kind}


def other_answer(ctx: LabelContext, q: Question, keys: list[str]) -> tuple[object, dict] | str:
    """The comparison's wrong answer (a text spec) and how it was found; a reason when none."""
    answer = q.answers[q.answer_index]
    kind = answer_kind(answer)
    if kind == "yesno":
        flipped = "no" if answer.strip().lower().startswith("yes") else "yes"
        return flipped, {"how": "yesno"}
    source = ctx.sources[q.dataset]
    titles = {key: bare_title(source.passage(key).title) for key in q.gold}
    matching = [key for key, t in titles.items() if t and too_close(answer, t, "other")]
    if len(matching) == 1:
        (other,) = [key for key in q.gold if key not in matching]
        if normalize_answer(titles[other]) and normalize_answer(titles[other]) in normalize_answer(q.text):
            return {"title_of": [q.dataset, other]}, {"how": "title"}
    option = other_option(ctx, q, Span(0, len(answer), kind, answer), keys)
    if option is not None:
        return option.spec, {"how": "option"}
    return "the answer is not one of two named entities"


def make(ctx: LabelContext, q: Question, item_id: str, variant: str) -> dict:
    found = layout(ctx, q)
    if found is None:
        return question_skipped(item_id, NAME, q, "too few distractors")
    keys, spare = found
    answer = {"answer_from": [q.dataset, q.id, q.answer_index]}
    meta: dict = {"variant": variant, "type": q.kind}
    extra: dict = {}
    label = 0
    if variant == "both_mixed":
        label = 1
    elif variant == "both_pair":
        keys, label = list(q.gold), 1
        ctx.rng(NAME, q.group, "pair").shuffle(keys)
    elif variant.startswith("drop"):
        dropped = q.gold[int(variant[len("drop") :])]
        keys = [spare[0] if k == dropped else k for k in keys]
    elif variant == "bridge_swap":
        found_edit = bridge_edit(ctx, q, keys)
        if isinstance(found_edit, str):
            return question_skipped(item_id, NAME, q, found_edit)
        extra["passage_edits"], how = found_edit
        meta.update(how)
    else:  # other_entity
        found_answer = other_answer(ctx, q, keys)
        if isinstance(found_answer, str):
            return question_skipped(item_id, NAME, q, found_answer)
        answer, how = found_answer
        meta.update(how)
    if label and not ctx.sources[q.dataset].has_evidence(q, keys):  # cannot happen by construction
        return question_skipped(item_id, NAME, q, "the passages lack the evidence")
    if variant.startswith("drop") and ctx.sources[q.dataset].has_evidence(q, keys):
        return question_skipped(item_id, NAME, q, "the passages still hold the evidence")
    return question_labelled(item_id, NAME, q, keys, answer, label, meta=meta, extra=extra)
