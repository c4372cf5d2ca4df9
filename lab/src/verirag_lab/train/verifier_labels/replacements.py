"""A replacement of the same kind for a span: what makes a swap or a local edit unsupported.

Candidates, by where they come from:
- passage: a span of the same kind in the passages the answer is judged against (AlignScore's
  recipe: the passages still mention it, only its role is wrong), referenced by offset;
- answer: another question's gold answer of the same kind, referenced by id, from a question that
  starts the same way ("what type ...", "who plays ...") when there is one, and of a similar length;
- made_up: a moved year, number or date ("1972" -> "1969"); "yes" <-> "no".
Never a candidate that is too close to the original or to any gold answer (`spans.too_close`),
nor one the edited sentence already holds. For a choice question ("Which is older, A or B?") the
other option, found in the passages, is the replacement.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verirag.metrics.qa import normalize_answer
from verirag_lab.train.verifier_labels.context import LabelContext
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import Span, find_spans, perturb, too_close

ORIGINS = ("passage", "answer", "made_up")


@dataclass(frozen=True)
class Replacement:
    spec: Any  # a text spec (records.render)
    text: str
    origin: str  # passage | answer | made_up


def _acceptable(text: str, kind: str, avoid: Sequence[str], context: str) -> bool:
    return (
        bool(text.strip()) and not any(too_close(a, text, kind) for a in avoid) and text.lower() not in context.lower()
    )


def candidates(
    ctx: LabelContext,
    q: Question,
    span: Span,
    keys: Sequence[str],
    avoid: Sequence[str],
    context: str,
    rng: random.Random,
) -> dict[str, list[Replacement]]:
    """{origin: acceptable replacements for `span`} (`context`: the text it will stand in)."""
    kind = span.kind
    out: dict[str, list[Replacement]] = {o: [] for o in ORIGINS}
    if kind == "yesno":
        flipped = "no" if span.text.strip().lower().startswith("yes") else "yes"
        out["made_up"].append(
            Replacement(flipped.capitalize() if span.text[:1].isupper() else flipped, flipped, "made_up")
        )
        return out
    seen: set[str] = set()
    for key in keys:
        text = ctx.passage(q.dataset, key).text
        for sp in find_spans(text, (kind,)) if kind != "other" else []:
            if sp.text not in seen and _acceptable(sp.text, kind, avoid, context):
                seen.add(sp.text)
                out["passage"].append(
                    Replacement({"passage_span": [q.dataset, key, sp.start, sp.end - sp.start]}, sp.text, "passage")
                )
    option = other_option(ctx, q, span, keys)
    if option is not None:
        return {"passage": [option], "answer": [], "made_up": []}
    out["answer"] = answer_candidates(ctx, q, span, avoid, context, rng)
    made_up = perturb(span, rng)
    if made_up is not None and _acceptable(made_up, kind, avoid, context):
        out["made_up"].append(Replacement(made_up, made_up, "made_up"))
    return out


_CHOICE = re.compile(
    r"(?:^|[,:]\s*|\b(?:between|is|was|did|does)\s+)(?:the\s+)?([^,:?]+?)\s+or\s+(?:the\s+)?([^,?]+?)\s*\??$",
    re.IGNORECASE,
)


def is_choice_question(text: str) -> bool:
    """Whether a question offers its answer's options ("..., A or B?")."""
    return _CHOICE.search(text.strip()) is not None


def other_option(ctx: LabelContext, q: Question, span: Span, keys: Sequence[str]) -> Replacement | None:
    """For a choice question ("..., A or B?") whose answer is one option: the other option, where a
    passage mentions it."""
    m = _CHOICE.search(q.text.strip())
    if m is None:
        return None
    a, b = m.group(1).strip(), m.group(2).strip()
    if too_close(span.text, a, "other") == too_close(span.text, b, "other"):
        return None  # the answer is neither option, or both
    other = b if too_close(span.text, a, "other") else a
    for key in keys:
        text = ctx.passage(q.dataset, key).text
        at = text.lower().find(other.lower())
        if at >= 0:
            return Replacement(
                {"passage_span": [q.dataset, key, at, len(other)]}, text[at : at + len(other)], "passage"
            )
    return None


def question_start(text: str) -> str:
    """The first two words of a question, normalised: what kind of answer it asks for."""
    return " ".join(normalize_answer(text).split()[:2])


def answer_candidates(
    ctx: LabelContext, q: Question, span: Span, avoid: Sequence[str], context: str, rng: random.Random
) -> list[Replacement]:
    """Other questions' gold answers of `span`'s kind and of a similar length, those of questions
    that start like `q` first."""
    start, words = question_start(q.text), len(span.text.split())
    pool = ctx.answer_pool(q.dataset, span.kind)
    alike, others = [], []
    for qid, i in rng.sample(pool, min(len(pool), 400)):  # a sample is plenty; the pool can be thousands
        text = ctx.answers(q.dataset, qid)[i]
        if qid == q.id or len(text.split()) > 2 * words + 1 or not _acceptable(text, span.kind, avoid, context):
            continue
        r = Replacement({"answer_from": [q.dataset, qid, i]}, text, "answer")
        (alike if question_start(ctx.sources[q.dataset].question(qid).text) == start else others).append(r)
    return alike or others


def pick(
    ctx: LabelContext,
    q: Question,
    span: Span,
    keys: Sequence[str],
    avoid: Sequence[str],
    context: str,
    rng: random.Random,
    prefer: Sequence[str] | None = None,
) -> Replacement | None:
    """One replacement: an origin drawn among those with candidates (with `prefer`: the first of
    those origins that has one, None when none has), then a candidate of it."""
    found = candidates(ctx, q, span, keys, avoid, context, rng)
    if prefer:
        origin = next((o for o in prefer if found.get(o)), None)
        return rng.choice(found[origin]) if origin else None
    origins = [o for o in ORIGINS if found[o]]
    if not origins:
        return None
    return rng.choice(found[rng.choice(origins)])
