"""Editing a model's answer: one span replaced, the sentence that holds it labelled unsupported.

Shared by `swap` (the gold answer inside a correct long answer) and `local_edit` (any name, number
or date of one). The record keeps the model's text and the edit (offset, length, replacement
spec); the edited answer is labelled 0, its edited sentence 0 and every other sentence 1 when all
of them are grounded in the passages (else the sentence labels are left unknown).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from verirag.retrieval.sentences import sentence_spans
from verirag_lab.train.verifier_labels.context import BaseAnswer, LabelContext
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped
from verirag_lab.train.verifier_labels.replacements import pick
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import Span, answer_kind


def find_answer_span(text: str, answers: Sequence[str]) -> Span | None:
    """The first occurrence (case-insensitive, whole words) of the longest gold answer in `text`."""
    for answer in sorted((a for a in answers if a.strip()), key=len, reverse=True):
        m = re.search(rf"(?<!\w){re.escape(answer.strip())}(?!\w)", text, re.IGNORECASE)
        if m:
            return Span(m.start(), m.end(), answer_kind(answer), m.group(0))
    return None


def sentence_of(spans: list[tuple[int, int]], start: int, end: int) -> int | None:
    return next((i for i, (s, e) in enumerate(spans) if s <= start and end <= e), None)


def edit_record(
    ctx: LabelContext,
    q: Question,
    item_id: str,
    recipe: str,
    base: BaseAnswer,
    spans: Sequence[Span],
    rng: random.Random,
) -> dict:
    """The record of the first of `spans` that can be replaced without changing the answer's
    sentences (same count, the edit inside one), or a skip."""
    text = base.generated.text
    before = sentence_spans(text)
    for span in spans:
        index = sentence_of(before, span.start, span.end)
        if index is None:
            continue
        sentence = text[before[index][0] : before[index][1]]
        r = pick(ctx, q, span, base.passages, [*q.answers, span.text], sentence, rng)
        if r is None:
            continue
        edited = text[: span.start] + r.text + text[span.end :]
        after = sentence_spans(edited)
        if len(after) != len(before) or sentence_of(after, span.start, span.start + len(r.text)) != index:
            continue
        others_grounded = all(g for i, g in enumerate(base.grounded) if i != index)
        labels = [int(i != index) for i in range(len(before))] if others_grounded else None
        return question_labelled(
            item_id,
            recipe,
            q,
            base.passages,
            {"edit": text, "offset": span.start, "length": span.end - span.start, "replacement": r.spec},
            0,
            sentence_labels=labels,
            generation=base.generated.provenance,
            meta={"kind": span.kind, "origin": r.origin, "sentence": index},
        )
    return question_skipped(item_id, recipe, q, "no span could be replaced")
