"""`paraphrase`: supported answers in other words than their passage, and the same answers made wrong.

Every supported example of the other recipes copies its passage's words (a span, a sentence, or a
local model's answer that mostly copies), so a verifier trained on them learns that overlap is
support: the shipped one scores "H. H. Asquith started his career as a lawyer" 0.08 against a
passage that says he was called to the bar (a human judged it correct). Here the local model
restates the sentence that holds the gold answer (`evidence_sentence.evidence_sentences`, its first
mention) in its own words (`prompts/paraphrase_answer.yaml`), and from that one rewrite:
- `paraphrase` (1): the rewrite, when it still holds a gold answer, every name, number and date of
  it is in the passages or the question, and it is not the sentence copied;
- `paraphrase-swapped` (0): the rewrite with its gold answer replaced by a span of the same kind
  (`replacements.pick`, as in `swap`);
- `paraphrase-negated` (0): the rewrite with a negation added or removed (`doc_claims.negation_edit`,
  and for the past tense answers are mostly written in, "was" / "were" / "has" / "had" + "not").
All three are judged against the evidence among distractors (as in `swap`). The record keeps the
rewrite (generated text) and edits of it, never benchmark text.
"""

from __future__ import annotations

import re

from verirag.metrics.faithfulness import k_precision
from verirag.metrics.qa import normalize_answer
from verirag.prompts import load_prompt
from verirag_lab.train.verifier_labels.context import Item, LabelContext, RecipeFailure
from verirag_lab.train.verifier_labels.doc_claims import negation_edit
from verirag_lab.train.verifier_labels.edits import find_answer_span
from verirag_lab.train.verifier_labels.evidence_sentence import evidence_sentences
from verirag_lab.train.verifier_labels.generation import provenance
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id
from verirag_lab.train.verifier_labels.replacements import pick
from verirag_lab.train.verifier_labels.sources import Question, holds_answer

NAME = "paraphrase"
NEEDS_LLM = True
VERSION = 2  # 2: a preamble line ("Here is ...:") is skipped
VARIANTS = ("paraphrase", "paraphrase-swapped", "paraphrase-negated")
TEMPERATURE = 0.7  # varied wording across questions; the seed makes it repeatable
MAX_TOKENS = 80
MAX_OVERLAP = 0.9  # share of the rewrite's words found in its sentence above which it is a copy
_PAST_NEG_ADD = re.compile(r"\b(was|were|has|have|had)\b(?! not)(?!n't)")


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if not q.answers:
        return []
    items = []
    for model in ctx.models:
        for variant in VARIANTS:
            item_id = record_id(NAME, q.dataset, q.id, f"{model}.{variant}", ctx.seed)
            items.append(
                Item(item_id, NAME, q.dataset, q.id, lambda i=item_id, m=model, v=variant: make(ctx, q, i, m, v))
            )
    return items


def rewrite(ctx: LabelContext, q: Question, model: str) -> tuple[str, str, dict] | None:
    """(the evidence sentence, the model's rewrite, provenance), made once per question and model;
    None when no sentence of usable length holds the gold answer."""
    cache = ctx.__dict__.setdefault("_paraphrases", {})
    key = (q.dataset, q.id, model)
    if key not in cache:
        holding = [s for s in evidence_sentences(ctx, q) if s[3]]
        if not holding:
            cache[key] = None
        else:
            passage_key, s, e, _ = holding[0]
            sentence = ctx.passage(q.dataset, passage_key).text[s:e].strip()
            template = load_prompt("paraphrase_answer")
            llm = ctx.llm(model)
            gen = llm.generate(
                template.messages(question=q.text, sentence=sentence),
                max_tokens=MAX_TOKENS,
                temperature=TEMPERATURE,
                seed=ctx.seed,
            )
            if gen.finish_reason == "error":
                raise RecipeFailure(f"{model} returned an error for {q.group}")
            made = provenance(llm, model, f"{template.name}@{template.digest}", TEMPERATURE, ctx.seed)
            cache[key] = (sentence, first_line(gen.text), made)
    return cache[key]


def first_line(text: str) -> str:
    """The reply's sentence: its first non-empty line that is no preamble ("Here is ...:"), unquoted."""
    lines = [ln.strip().strip('"').strip() for ln in text.strip().splitlines() if ln.strip()]
    lines = [ln for ln in lines if ln and not ln.endswith(":")]
    return lines[0] if lines else ""


def why_not_supported(ctx: LabelContext, q: Question, sentence: str, text: str, keys: list[str]) -> str | None:
    """Why the rewrite cannot be labelled supported, or None when it can."""
    if not text:
        return "the model returned an empty rewrite"
    if not holds_answer(text, q.answers):
        return "the rewrite lost the gold answer"
    if not ctx.names_grounded(text, ctx.evidence_text(q, keys)):
        return "the rewrite names something the passages do not"
    if normalize_answer(text) == normalize_answer(sentence) or k_precision(text, sentence) > MAX_OVERLAP:
        return "the rewrite copies its sentence"
    return None


def negated(text: str) -> tuple[int, int, str, str] | None:
    """(offset, length, replacement, how) of a negation removed or added, else None."""
    edit = negation_edit(text)
    if edit is not None:
        return edit
    m = _PAST_NEG_ADD.search(text)
    return (m.end(1), 0, " not", "added") if m else None


def make(ctx: LabelContext, q: Question, item_id: str, model: str, variant: str) -> dict:
    keys = ctx.evidence_set(q)
    if keys is None:
        return question_skipped(item_id, NAME, q, "no passages with the evidence")
    made = rewrite(ctx, q, model)
    if made is None:
        return question_skipped(item_id, NAME, q, "no sentence of usable length holds the gold answer")
    sentence, text, provenance = made
    reason = why_not_supported(ctx, q, sentence, text, keys)
    if reason is not None:
        return question_skipped(item_id, NAME, q, reason)
    meta = {"variant": variant, "overlap": round(k_precision(text, sentence), 3)}
    if variant == "paraphrase":
        return question_labelled(item_id, NAME, q, keys, text, 1, generation=provenance, meta=meta)
    if variant == "paraphrase-swapped":
        span = find_answer_span(text, q.answers)
        if span is None:
            return question_skipped(item_id, NAME, q, "the gold answer is not a whole-word span of the rewrite")
        r = pick(ctx, q, span, keys, [*q.answers, span.text], text, ctx.rng(item_id))
        if r is None:
            return question_skipped(item_id, NAME, q, f"no replacement of kind {span.kind}")
        edited = text[: span.start] + r.text + text[span.end :]
        if holds_answer(edited, q.answers):
            return question_skipped(item_id, NAME, q, "the rewrite mentions the gold answer twice")
        answer = {"edit": text, "offset": span.start, "length": span.end - span.start, "replacement": r.spec}
        meta.update(kind=span.kind, origin=r.origin)
    else:
        edit = negated(text)
        if edit is None:
            return question_skipped(item_id, NAME, q, "no negation to add or remove")
        offset, length, repl, how = edit
        answer = {"edit": text, "offset": offset, "length": length, "replacement": repl}
        meta["negation"] = how
    return question_labelled(item_id, NAME, q, keys, answer, 0, generation=provenance, meta=meta)
