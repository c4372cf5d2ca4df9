"""`evidence_sentence`: whole passage sentences as answers, so that length tells nothing.

Swaps give short answers and real answers are long, and a verifier trained on both learns that a
long answer is seldom supported (the shipped one's score falls with the answer's length: Spearman
-0.51 on the dev set). This recipe gives full sentences with either label, told apart only by what
they say. From the passage that holds the gold answer:
- `evidence`: the sentence that holds the gold answer, copied whole: supported;
- `evidence-swapped`: that sentence with the gold answer replaced by a span of the same kind
  (`replacements.pick`, as in `swap`): unsupported;
- `other-sentence`: another sentence of the same passage, of at least MIN_WORDS words, that holds
  no gold answer: true of the passage but no answer to the question, so unsupported. This is how
  a small model often fails, copying a sentence near the answer; the dev labels are correctness.
All three are judged against the same passages (the evidence among distractors, as in `swap`) and
are stored as spans and edits of the passage text, never the text itself.
"""

from __future__ import annotations

from verirag.retrieval.sentences import sentence_spans
from verirag_lab.train.verifier_labels.context import Item, LabelContext, variant_items
from verirag_lab.train.verifier_labels.edits import find_answer_span
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped
from verirag_lab.train.verifier_labels.replacements import pick
from verirag_lab.train.verifier_labels.sources import Question, holds_answer

NAME = "evidence_sentence"
NEEDS_LLM = False
VERSION = 1
MIN_WORDS = 6  # shorter pieces (headings, "See also") are no answer anyone would write
MAX_WORDS = 60  # longer "sentences" are lists or tables run together
VARIANTS = ("evidence", "evidence-swapped", "other-sentence")


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if not q.answers:
        return []
    return variant_items(NAME, q, ctx, VARIANTS, make)


def evidence_sentences(ctx: LabelContext, q: Question) -> list[tuple[str, int, int, bool]]:
    """(passage key, start, end, holds a gold answer) of each sentence of the gold passages that
    is of a usable length, in passage order."""
    out = []
    for key in q.gold:
        text = ctx.passage(q.dataset, key).text
        for s, e in sentence_spans(text):
            if MIN_WORDS <= len(text[s:e].split()) <= MAX_WORDS:
                out.append((key, s, e, holds_answer(text[s:e], q.answers)))
    return out


def make(ctx: LabelContext, q: Question, item_id: str, variant: str) -> dict:
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    sentences = evidence_sentences(ctx, q)
    rng = ctx.rng(item_id)
    if variant == "other-sentence":
        others = [s for s in sentences if not s[3]]
        if not others:
            return question_skipped(item_id, NAME, q, "every sentence of the evidence holds the answer")
        key, s, e, _ = rng.choice(others)
        return question_labelled(
            item_id, NAME, q, keys, {"passage_span": [q.dataset, key, s, e - s]}, 0, meta={"variant": variant}
        )
    holding = [s for s in sentences if s[3]]
    if not holding:
        return question_skipped(item_id, NAME, q, "no sentence of usable length holds the gold answer")
    key, s, e, _ = holding[0]  # the first mention: where a reader meets the answer
    span_spec = {"passage_span": [q.dataset, key, s, e - s]}
    if variant == "evidence":
        return question_labelled(item_id, NAME, q, keys, span_spec, 1, meta={"variant": variant})
    sentence = ctx.passage(q.dataset, key).text[s:e]
    span = find_answer_span(sentence, q.answers)
    if span is None:
        return question_skipped(item_id, NAME, q, "the gold answer is not a whole-word span of its sentence")
    r = pick(ctx, q, span, keys, [*q.answers, span.text], sentence, rng)
    if r is None:
        return question_skipped(item_id, NAME, q, f"no replacement of kind {span.kind}")
    edited = sentence[: span.start] + r.text + sentence[span.end :]
    if holds_answer(edited, q.answers):  # another mention of the answer stays: not an unsupported answer
        return question_skipped(item_id, NAME, q, "the sentence mentions the gold answer twice")
    return question_labelled(
        item_id,
        NAME,
        q,
        keys,
        {"edit": span_spec, "offset": span.start, "length": span.end - span.start, "replacement": r.spec},
        0,
        meta={"variant": variant, "kind": span.kind, "origin": r.origin},
    )
