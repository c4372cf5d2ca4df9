"""`distill`: the shipped pipeline's own answers, scored by the LLM judge, graded against gold answers
(issue 47, item 1): the labels that teach the trained verifier from the slow judge's verdicts.

Per question and model, one answer from its "mixed" passages (the evidence among hard distractors,
as retrieval gives them) and, for a seeded DISTRACTOR_SHARE of questions, a second from
"distractor" passages only (retrieval that missed); NoMIRACL's non_relevant questions answer from
their own passages. For a seeded FOLLOWUP_SHARE of the NQ and HotpotQA questions that name a
supporting passage's title, a third ("followup", over the "mixed" passages): the question asked as a
follow-up, as the `followup` recipe rewrites it (the entity told about in an earlier turn, the
question saying "it" or "that album"), read by the pruner, the generator and the judge as `ask`
reads a question with its `history` (`AnswerState`); the record keeps the question and the turns as
text specs. (The shared TopiOCQA release holds no passages, so conversations are made this way.)

Each answer is made as `verirag ask` makes it with the pruner on: the shipped context pruner
(`PruneStage`, its fitted threshold, titles for the hop rule) cuts the passages, and the default
method's generator (`DEFAULT_METHOD`: vanilla, its own prompt and answer length, temperature 0)
reads what is left.

The answer is then scored on the FULL passages (what the record's `passages` name, what the verifier
trains on) by the LLM judge `JUDGED_METHOD`'s predictor, nli, with premise=evidence (the shipped
verifier picks the evidence the judge reads), on the answering model; on a seeded 1 in
`judge_full_every` answers also by nli over every passage. The label is the gold grade, as `real`'s
(right against the gold answers, with the evidence among the passages), so training may use the
gold label, the judge's soft score, or only the answers where the two agree.

meta: condition (+ phrase and entity for a follow-up), correct / evidence / abstained (the grade), `judge` {evidence, passages (sampled
only), read ("evidence", or "passages" when nli fell back to reading every passage), premise_words,
digest (the judge's identity), llm_judge and llm_judge_digest (since 2026-11-29: `vanilla+llm_judge`'s
judge over the passages the generator read, asked first, right after the answer), errors}, `prune` {tokens_read, tokens_full (the answering model's
tokens of the passage texts), passages_read, sentences_kept, sentences, fallback, hops, threshold,
data (the pruner's data fingerprint)}, `seconds` {prune, generate, llm_judge, judge, judge_full}, `signals` (what
the answer path knows at no model cost, `verirag.awf.signals`: the reply's token log-probabilities, min,
mean and sum, and K-Precision against the text the generator read; absent ones named in
`signals_missing`), so a stack of the verifier with them can be trained on these answers.

Failures: a backend outage (the generator's or the judge's) is a `RecipeFailure`, written nothing and
tried again next run; any other judge failure (e.g. an answer too long for the judge's window) is
kept in `judge.errors` with its score None, beside the gold label; an empty answer is a skip line.
Datasets with evidence but no gold answers (docs) cannot be graded: a skip line says so.
"""

from __future__ import annotations

import math
import time
from typing import Any

from verirag.awf import registry
from verirag.awf.compose import build_predictor
from verirag.awf.core import AnswerState
from verirag.awf.defaults import DEFAULT_METHOD, JUDGED_METHOD
from verirag.awf.predictors.nli import evidence_saves
from verirag.awf.signals import answer_signals
from verirag.awf.spec import split_name
from verirag.awf.stage_kinds.prune import PruneStage
from verirag.errors import BackendError, is_outage
from verirag.llm.base import DEFAULT_SEED
from verirag.types import ScoredPassage
from verirag_lab.train.verifier_labels.context import Item, LabelContext, RecipeFailure
from verirag_lab.train.verifier_labels.followup import as_followup, entity_mention, tell_history
from verirag_lab.train.verifier_labels.generation import provenance
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, record_id, render
from verirag_lab.train.verifier_labels.sources import Question

NAME = "distill"
NEEDS_LLM = True
VERSION = 1  # bumped when what the recipe makes changes: a rerun remakes its items
# Retrieval misses the gold passage for a share of questions; answers without evidence teach the
# verifier "unsupported" from the pipeline's own answers, at about a third of the answers.
DISTRACTOR_SHARE = 0.5
# Follow-up questions are where the verifier is weakest (issue 47): half the questions that name a
# supporting passage's title (about a third of NQ's training questions) also come as one.
FOLLOWUP_SHARE = 0.5
FOLLOWUP_DATASETS = ("nq", "hotpotqa")
_, GENERATOR, _ = split_name(DEFAULT_METHOD)  # the generator `verirag ask` answers with
_, _, JUDGE = split_name(JUDGED_METHOD)  # the LLM judge's predictor (nli)


def conditions(ctx: LabelContext, q: Question, model: str) -> tuple[str, ...]:
    if not q.answers:
        return ("non_relevant",)
    out = ["mixed"]
    if ctx.rng(NAME, q.group, model, "distractor").random() < DISTRACTOR_SHARE:
        out.append("distractor")
    if (
        q.dataset in FOLLOWUP_DATASETS
        and ctx.rng(NAME, q.group, model, "followup").random() < FOLLOWUP_SHARE
        and entity_mention(ctx, q) is not None  # else nothing to refer back to
    ):
        out.append("followup")
    return tuple(out)


def full_judged(ctx: LabelContext, q: Question, model: str, condition: str) -> bool:
    """Whether this answer is also judged over every passage: a seeded 1 in `judge_full_every`."""
    every = ctx.judge_full_every
    return every > 0 and ctx.rng(NAME, q.group, model, condition, "full").random() < 1 / every


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    items = []
    for model in ctx.models:
        for condition in conditions(ctx, q, model):
            item_id = record_id(NAME, q.dataset, q.id, f"{model}.{condition}", ctx.seed)
            items.append(
                Item(item_id, NAME, q.dataset, q.id, lambda i=item_id, m=model, c=condition: make(ctx, q, i, m, c))
            )
    return items


# ---- the parts, built once per run (`LabelContext.shared`) ----------------------------------------
def pruner_stage(ctx: LabelContext, model: str) -> PruneStage:
    def load():
        from verirag.learned.pruner import ContextPruner
        from verirag.learned.shipped import shipped_pruner_dir

        return ContextPruner.load(shipped_pruner_dir())

    # one pruner; each model counts the tokens it reads with its own tokenizer
    pruner = ctx.shared("pruner", load)
    return ctx.shared(("prune", model), lambda: PruneStage(pruner, count_tokens=ctx.llm(model).count_tokens))


def generator(ctx: LabelContext, model: str):
    return ctx.shared(("generator", model), lambda: registry.create("generator", GENERATOR, ctx.llm(model)))


def judge(ctx: LabelContext, model: str, premise: str):
    def build():
        nli = build_predictor(JUDGE, ctx.llm(model), options={"premise": premise})
        if premise == "evidence":
            remember_premise(nli)
        return nli

    return ctx.shared((JUDGE, premise, model), build)


def remember_premise(nli) -> None:
    """Keep the evidence nli picks on `nli.last_premise` (None: it could not pick one), so what it read
    is known without the verifier reading the passages a second time."""
    pick = nli.evidence

    def evidence(question, answer, passages):
        nli.last_premise = None
        nli.last_premise, lent = pick(question, answer, passages)
        return nli.last_premise, lent

    nli.evidence = evidence


# ---- one answer ---------------------------------------------------------------------------------
def make(ctx: LabelContext, q: Question, item_id: str, model: str, condition: str) -> dict:
    if not q.answers and q.gold:
        return question_skipped(item_id, NAME, q, "no gold answers to grade against (distill: nq, hotpotqa)")
    keys = ctx.passage_set(q, "mixed" if condition == "followup" else condition)
    if keys is None:
        return question_skipped(item_id, NAME, q, f"no {condition} passages")
    asked, extra, about = AnswerState(q.text), {}, {}
    if condition == "followup":
        made = followup_asked(ctx, q, model)
        if made is None:
            return question_skipped(item_id, NAME, q, "no follow-up: the question names no supporting passage")
        asked, extra, about = made
    question = asked.in_context()  # what the generator and the judge read, as `ask` gives it them
    passages = ctx.passages(q, keys)
    seconds: dict[str, float] = {}

    t = time.perf_counter()
    stage = pruner_stage(ctx, model)
    hits = [ScoredPassage(p, 0.0, i) for i, p in enumerate(passages)]
    pruned = stage.run(asked.retrieval_query(), hits, lambda _m: None)
    seconds["prune"] = time.perf_counter() - t

    t = time.perf_counter()
    gen = generator(ctx, model)
    try:
        ans = gen.answer(question, [h.passage for h in pruned.kept])
    except BackendError as e:
        raise RecipeFailure(f"{model} failed for {q.group}: {e}") from e
    seconds["generate"] = time.perf_counter() - t
    if ans.generation is not None and ans.generation.finish_reason == "error":
        raise RecipeFailure(f"{model} returned an error for {q.group}")
    if not ans.text:
        return question_skipped(item_id, NAME, q, "the model returned an empty answer")

    # first, while the generation's prompt is the backend's latest: it reads only what follows the passages
    read_first = llm_judged(ctx, q, question, model, ans.text, [h.passage for h in pruned.kept], seconds)
    grade = ctx.grade(q, ans.text, keys)
    scores = judged(ctx, q, question, model, ans.text, passages, full_judged(ctx, q, model, condition), seconds)
    errors = {**read_first.pop("errors", {}), **scores.pop("errors", {})}
    scores |= read_first | ({"errors": errors} if errors else {})
    meta: dict[str, Any] = {
        "condition": condition,
        **about,
        **grade.meta(),
        "judge": scores,
        "prune": prune_info(pruned.info, stage),
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        **signals_info(ans.text, ans.generation, [h.passage for h in pruned.kept]),
    }
    if ans.generation is not None and ans.generation.finish_reason == "length":
        meta["truncated"] = True
    # the generator's digest names its prompt and options (answer length, layout); it sets no
    # temperature or seed, so the backend's defaults apply
    how = provenance(ctx.llm(model), model, f"{GENERATOR}@{gen.digest}", 0.0, DEFAULT_SEED)
    how["max_tokens"] = gen.max_tokens
    return question_labelled(item_id, NAME, q, keys, ans.text, grade.label, generation=how, meta=meta, extra=extra)


def followup_asked(ctx: LabelContext, q: Question, model: str):
    """(q asked as a follow-up: its AnswerState, the record's question and history specs, meta), or
    None when the question names no supporting passage or its passage has no first sentence."""
    made = as_followup(ctx, q, ctx.rng(NAME, q.group, model, "phrase"))
    if made is None:
        return None
    entity, question, phrase = made
    turns = tell_history(ctx, q.dataset, entity)
    if turns is None:
        return None
    asked = AnswerState.asked(render(question, ctx), [render(t, ctx) for t in turns])
    return asked, {"question": question, "history": turns}, {"phrase": phrase, "entity": entity}


def llm_judged(ctx, q, question, model, answer, read, seconds: dict[str, float]) -> dict[str, Any]:
    """`llm_judge`'s score of `answer` over the passages the generator read (`read`: what the pruner
    kept), as `vanilla+llm_judge` judges an answer of `ask`: one question over all of them, so evidence
    two passages hold is read together. In the shared prompt layout its prompt begins as the
    generator's did, so right after the answer it reads little more than its instruction. A judge
    outage is a RecipeFailure; another failure is kept in `errors` with the score None."""
    llm_judge = ctx.shared(("llm_judge", model), lambda: build_predictor("llm_judge", ctx.llm(model)))
    t = time.perf_counter()
    try:
        v = llm_judge.verify(question, answer, read)
    except BackendError as e:
        raise RecipeFailure(f"the llm_judge ({model}) failed for {q.group}: {e}") from e
    seconds["llm_judge"] = time.perf_counter() - t
    if is_outage(v.failure):
        raise RecipeFailure(f"the llm_judge ({model}) failed for {q.group}: {v.failure}")
    ok = v.error is None and v.score is not None and not math.isnan(v.score)
    out: dict[str, Any] = {"llm_judge": round(float(v.score), 4) if ok else None, "llm_judge_digest": llm_judge.digest}
    if not ok:
        out["errors"] = {"llm_judge": v.error or "no score"}
    return out


def judged(ctx, q, question, model, answer, passages, full: bool, seconds: dict[str, float]) -> dict[str, Any]:
    """The judge's scores of `answer` to `question` (q's text, or q asked in its conversation: an
    InContext string); module doc. A judge outage is a RecipeFailure."""
    out: dict[str, Any] = {}
    errors: dict[str, str] = {}
    premises = ("evidence", "passages") if full else ("evidence",)
    for premise in premises:
        nli = judge(ctx, model, premise)
        t = time.perf_counter()
        nli.last_premise = None
        try:
            v = nli.verify(question, answer, passages)
        except BackendError as e:  # the judge's requests raise an outage; its other failures come back in v
            raise RecipeFailure(f"the judge ({model}) failed for {q.group}: {e}") from e
        seconds["judge" if premise == "evidence" else "judge_full"] = time.perf_counter() - t
        if is_outage(v.failure):
            raise RecipeFailure(f"the judge ({model}) failed for {q.group}: {v.failure}")
        ok = v.error is None and not math.isnan(v.score)
        out[premise] = round(float(v.score), 4) if ok else None
        if not ok:
            errors[premise] = v.error or "no score"
        if premise == "evidence":
            out.update(what_was_read(nli.last_premise, passages))
            out["digest"] = nli.digest
    if errors:
        out["errors"] = errors
    return out


def what_was_read(premise: str | None, passages) -> dict[str, Any]:
    """What nli over the evidence read: the evidence, or every passage when it saved too little or the
    verifier could not pick it (`evidence_saves`: the rule nli itself applies)."""
    if premise is None:
        return {"read": "passages", "premise_words": None}
    read = "evidence" if evidence_saves(premise, passages) else "passages"
    return {"read": read, "premise_words": len(premise.split())}


def signals_info(answer: str, generation, read) -> dict[str, Any]:
    """The answer's no-cost signals (module doc); retrieval scores are none here (the recipe chose
    the passages), so they are left out rather than named missing on every line."""
    sig = answer_signals(answer, generation, read, None)
    out: dict[str, Any] = {"signals": {k: round(v, 4) for k, v in sig.values.items()}}
    missing = {k: why for k, why in sig.missing.items() if not k.startswith("retrieval_")}
    if missing:
        out["signals_missing"] = missing
    return out


def prune_info(info: dict[str, Any], stage: PruneStage) -> dict[str, Any]:
    """The pruner's report in a few numbers (its per-sentence scores are not kept)."""
    per = info["passages"]
    return {
        "tokens_read": info["tokens_read"],
        "tokens_full": info["tokens_read"] + info["tokens_saved"],
        "passages_read": sum(1 for p in per if p["kept"]),
        "sentences_kept": sum(len(p["kept"]) for p in per),
        "sentences": sum(len(p["sentences"]) for p in per),
        "fallback": bool(info["fallback"]),
        "hops": sum(1 for p in per if p["hop"]),
        "threshold": round(float(info["threshold"]), 4),
        "data": str(stage.pruner.fingerprints.get("data", ""))[:16],
    }
