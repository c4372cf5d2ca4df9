"""`subject`: the same answer, over the same passages, to the question asked of another entity
("what is the song in Red Dead Redemption" -> "what is the song in Viva Dead Ponies", answered "Far
Away" both times): supported when the question names the entity the evidence is about, not when it
names another entity the passages also tell about.

Why: a passage that states the answer's value of a different subject passes the shipped verifier.
On made-up pairs it scored "Helmfast Tools employs about 640 people" above "... about 2,300
people" when one passage gave Helmfast's 2,300 and another gave 640 for a supplier: a follow-up's
pronoun rewritten into the entity's name did not help (4 of 6 made-up follow-ups right above
wrong with the history, 4 of 6 with the question and the answer made standalone). The local
model's wrong multi-hop answers are often of this kind too: the right sort of value, of the wrong
entity of the chain.

The entity is a supporting passage's title named in the question (as `followup` finds it); the
other is the title of a distractor among the same passages (a passage that holds no gold answer:
the passages tell about both, only one holds the answer). Only the name changes: "the song X's" keeps
its "the song" and its "'s". Both records of a pair read the same passages and the same answer.
Yes/no answers are left out (the other entity's passage may well make "yes" true of it).
"""

from __future__ import annotations

from verirag_lab.datasets.followup import bare_title
from verirag_lab.train.verifier_labels.context import Item, LabelContext, variant_items
from verirag_lab.train.verifier_labels.followup import entity_mention
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import answer_kind, too_close

NAME = "subject"
NEEDS_LLM = False
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items
DATASETS = ("nq", "hotpotqa")


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if q.dataset not in DATASETS or not q.answers:
        return []
    return variant_items(NAME, q, ctx, ("gold", "other"), make)


def name_span(question: str, start: int, end: int, name: str) -> tuple[int, int] | None:
    """Where `name` itself stands inside the mention [start, end) ("the song X's" -> X)."""
    at = question.lower().find(name.lower(), start, end)
    return None if at < 0 else (at, at + len(name))


def other_entity(ctx: LabelContext, q: Question, keys: list[str], name: str) -> str | None:
    """A distractor among `keys` whose title is not too close to `name` nor named by the question
    (drawn with a seed of the question, so both records of a pair draw the same), or None."""
    others = []
    for k in keys:
        if k in q.gold:
            continue
        title = bare_title(ctx.passage(q.dataset, k).title)
        if len(title) < 3 or too_close(name, title, "other") or title.lower() in q.text.lower():
            continue
        others.append(k)
    if not others:
        return None
    return ctx.rng(record_id(NAME, q.dataset, q.id, "pair", ctx.seed)).choice(others)


def make(ctx: LabelContext, q: Question, item_id: str, variant: str) -> dict:
    if answer_kind(q.answers[q.answer_index]) == "yesno":
        return question_skipped(item_id, NAME, q, "a yes/no answer may hold of the other entity too")
    found = entity_mention(ctx, q)
    if found is None:
        return question_skipped(item_id, NAME, q, "no supporting passage's title named in the question")
    key, start, end, _ = found
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    name = bare_title(ctx.passage(q.dataset, key).title)
    span = name_span(q.text, start, end, name)
    other = other_entity(ctx, q, keys, name)
    if span is None or other is None:
        return question_skipped(item_id, NAME, q, "no other entity among the passages")
    start, end = span
    if ctx.passage(q.dataset, other).title.lower().startswith("the ") and q.text[:start].lower().endswith("the "):
        start -= 4  # "the orrin canal" -> "The Harbour at Dawn", not "the The Harbour at Dawn"
    answer = {"answer_from": [q.dataset, q.id, q.answer_index]}
    meta = {"entity": key, "other": other}
    if variant == "gold":
        label = int(ctx.sources[q.dataset].has_evidence(q, keys))
        return question_labelled(item_id, NAME, q, keys, answer, label, meta=meta)
    question = {
        "edit": {"question_of": [q.dataset, q.id]},
        "offset": start,
        "length": end - start,
        "replacement": {"title_of": [q.dataset, other]},
    }
    return question_labelled(item_id, NAME, q, keys, answer, 0, meta=meta, extra={"question": question})
