"""`followup`: a follow-up question that refers back to an entity an earlier turn named (issue 36,
item 2), made from NQ and HotpotQA (never from instruct_qa_human: `exclusion`).

The entity is a supporting passage's title named in the question (NQ: its gold passage; HotpotQA:
a supporting paragraph's). The question is rewritten by the rule the conversational evaluation sets
share (`verirag_lab.datasets.followup`): that mention (with a leading "the",
a possessive "'s" -> "its") becomes "that <kind>" when the title says the kind ("Thriller
(album)" -> "that album"), else "it" or "the above". The earlier turns (`history`, "User: ..." /
"Agent: ...") name the entity: "Tell me about <title>." answered by the passage's first sentence
(history "tell"), or another question whose gold answer is the entity, answered by it ("asked").
- gold, gold_asked (1): the gold answer, the passages with the evidence among distractors;
- swapped (0): a wrong answer of the same kind (as `swap` draws it);
- other_history (0): the same question and answer, but the history names another entity (a
  distractor passage's title among the passages): "it" now means that one, which the answer
  does not fit;
- switch (1), switch_back (0): a conversation that changes topic, as TopiOCQA's do: both
  entities are told about, one after the other. "It" means the latest: the answer fits when the
  question's entity came last (switch), not when the conversation moved on to the other one
  (switch_back), although the question's entity is still in the history.
The record stores the question and the turns as text specs (an edit of the dataset's question,
titles and passage spans by key), never benchmark text.
"""

from __future__ import annotations

from verirag.metrics.qa import normalize_answer
from verirag_lab.datasets.followup import TELL, bare_title, find_mention, first_sentence_span, referring, replacement
from verirag_lab.train.verifier_labels.context import Item, LabelContext, variant_items
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.replacements import pick
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import Span, answer_kind, too_close

NAME = "followup"
NEEDS_LLM = False
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items
DATASETS = ("nq", "hotpotqa")


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if q.dataset not in DATASETS or not q.answers:
        return []
    return variant_items(
        NAME, q, ctx, ("gold", "gold_asked", "swapped", "other_history", "switch", "switch_back"), make
    )


def entity_mention(ctx: LabelContext, q: Question) -> tuple[str, int, int, str] | None:
    """(passage key of the entity, start, end of its mention in the question, the kind noun
    before it: "the song X" -> "song"), or None."""
    source = ctx.sources[q.dataset]
    found = []
    for key in q.gold:
        name = bare_title(source.passage(key).title)
        if len(name) < 3 or too_close(name, q.answers[q.answer_index], "other"):
            continue
        m = find_mention(q.text, name)
        if m:
            found.append((m[0], key, m[1], m[2]))
    if not found:
        return None
    start, key, end, noun = min(found)
    return key, start, end, noun


def rewritten_question(ctx: LabelContext, q: Question, start: int, end: int, phrase: str) -> dict:
    phrase = replacement(q.text[start:end], start, phrase)
    return {"edit": {"question_of": [q.dataset, q.id]}, "offset": start, "length": end - start, "replacement": phrase}


def first_sentence(ctx: LabelContext, dataset: str, key: str) -> dict | None:
    span = first_sentence_span(ctx.passage(dataset, key).text)
    return None if span is None else {"passage_span": [dataset, key, span[0], span[1] - span[0]]}


def tell_history(ctx: LabelContext, dataset: str, key: str) -> list | None:
    reply = first_sentence(ctx, dataset, key)
    if reply is None:
        return None
    stop = "" if ctx.passage(dataset, key).title.rstrip()[-1:] in ".?!" else "."
    return [{"join": [TELL, {"title_of": [dataset, key]}, stop]}, {"join": ["Agent: ", reply]}]


def asked_history(ctx: LabelContext, q: Question, key: str) -> list | None:
    """Another allowed question of the dataset whose gold answer is the entity, and its answer."""
    name = normalize_answer(bare_title(ctx.passage(q.dataset, key).title))
    index = _answers_index(ctx, q.dataset)
    for qid, i in index.get(name, []):
        if qid != q.id:
            return [
                {"join": ["User: ", {"question_of": [q.dataset, qid]}]},
                {"join": ["Agent: ", {"answer_from": [q.dataset, qid, i]}]},
            ]
    return None


def _answers_index(ctx: LabelContext, dataset: str) -> dict[str, list[tuple[str, int]]]:
    cache = ctx.__dict__.setdefault("_followup_answers", {})
    if dataset not in cache:
        index: dict[str, list[tuple[str, int]]] = {}
        source = ctx.sources[dataset]
        for qid in ctx.allowed.get(dataset, []):
            for i, a in enumerate(source.questions[qid].answers):
                index.setdefault(normalize_answer(a), []).append((qid, i))
        cache[dataset] = index
    return cache[dataset]


def as_followup(ctx: LabelContext, q: Question, rng) -> tuple[str, dict, str] | None:
    """(the entity's passage key, the question rewritten to refer back to it as a spec, the phrase
    that refers: "that album", "it"), or None when the question names no supporting passage's title.
    `rng` draws the phrase when the title names no kind."""
    found = entity_mention(ctx, q)
    if found is None:
        return None
    key, start, end, noun = found
    phrase = f"that {noun}" if noun else referring(ctx.passage(q.dataset, key).title, rng)
    return key, rewritten_question(ctx, q, start, end, phrase), phrase


def make(ctx: LabelContext, q: Question, item_id: str, variant: str) -> dict:
    if entity_mention(ctx, q) is None:
        return question_skipped(item_id, NAME, q, "no supporting passage's title named in the question")
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    key, question, phrase = as_followup(ctx, q, ctx.rng(NAME, q.group))
    title = ctx.passage(q.dataset, key).title
    answer: object = {"answer_from": [q.dataset, q.id, q.answer_index]}
    label = 1
    meta = {"variant": variant, "phrase": phrase, "entity": key}
    history = asked_history(ctx, q, key) if variant == "gold_asked" else tell_history(ctx, q.dataset, key)
    if history is None:
        return question_skipped(item_id, NAME, q, f"no earlier turn for {variant}")
    if variant == "swapped":
        gold = q.answers[q.answer_index]
        r = pick(ctx, q, Span(0, len(gold), answer_kind(gold), gold), keys, q.answers, "", ctx.rng(item_id))
        if r is None:
            return question_skipped(item_id, NAME, q, "no replacement answer")
        answer, label = r.spec, 0
        meta["origin"] = r.origin
    elif variant in ("other_history", "switch", "switch_back"):
        name = bare_title(title)
        others = [
            k
            for k in keys
            if k not in q.gold and not too_close(name, bare_title(ctx.passage(q.dataset, k).title), "other")
        ]
        if not others:
            return question_skipped(item_id, NAME, q, "no other entity among the passages")
        # the same other entity for all three variants of a question: they differ only in the order
        other = ctx.rng(record_id(NAME, q.dataset, q.id, "other_history", ctx.seed)).choice(others)
        told = tell_history(ctx, q.dataset, other)
        if told is None:
            return question_skipped(item_id, NAME, q, "the other entity's passage has no sentence")
        if variant == "other_history":
            history, label = told, 0
        elif variant == "switch":  # the other entity first, then the question's: "it" is the question's
            history, label = told + history, 1
        else:  # the question's entity first, then the other: "it" has moved on
            history, label = history + told, 0
        meta["history_entity"] = other
    return question_labelled(
        item_id, NAME, q, keys, answer, label, meta=meta, extra={"question": question, "history": history}
    )
