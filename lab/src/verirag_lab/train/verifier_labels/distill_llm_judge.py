"""`llm_judge` for distillation answers made before it was recorded (issue 47): the same judge over
the same passages the generator read, added to the record.

The `distill` recipe asks `vanilla+llm_judge` right after each answer since 2026-11-29; the answers
made before (most of the multi-hop ones: every training question of those sources is answered
already) lack it, so a stack that reads it would learn its weight from single-hop answers only.
This scores those answers now: the record's question (asked in its conversation for a follow-up),
its passages read back by id, cut by the shipped pruner as the recipe cut them, and its answer.

Only what can be rebuilt exactly is scored: the record's model fingerprint must be the loaded
model's and its pruner's data fingerprint the shipped pruner's, and the pruner must keep the same
number of tokens the record says the generator read (the proof the passages are the same); other
records are counted and left as they are. The judge's seconds are not recorded (it reads the whole
prompt here, not what follows an answer: not its cost), and `llm_judge_backfilled` says so. The
updated record is appended to the labels file (a later line of one id wins), so a stopped run goes
on where it stopped. Evaluation questions are refused as everywhere (`evaluation_questions`).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.awf.core import AnswerState
from verirag.types import ScoredPassage
from verirag_lab.datasets import data_dir
from verirag_lab.train.verifier_labels import distill
from verirag_lab.train.verifier_labels.context import LabelContext
from verirag_lab.train.verifier_labels.exclusion import evaluation_questions, question_key
from verirag_lab.train.verifier_labels.generation import provenance
from verirag_lab.train.verifier_labels.records import label_file, read_records, render
from verirag_lab.train.verifier_labels.sources import load_sources, question_hash


@dataclass
class BackfillRun:
    todo: int = 0  # records without llm_judge that could be scored
    scored: int = 0
    left: Counter = field(default_factory=Counter)  # {why a record was left as it is: count}


def wanting(records: Sequence[dict[str, Any]], datasets: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The made distill answers with their signals and without an llm_judge score (in `datasets`)."""
    return [
        r
        for r in records
        if r.get("recipe") == distill.NAME
        and "label" in r
        and (r.get("meta") or {}).get("signals")
        and "llm_judge" not in ((r.get("meta") or {}).get("judge") or {})
        and (not datasets or r["dataset"] in datasets)
    ]


def backfill_llm_judge(
    path: str | Path,
    *,
    data_root: str | Path | None = None,
    datasets: Sequence[str] | None = None,
    limit: int | None = None,
    llm_loader: Callable[[str], Any] | None = None,
    n_threads: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> BackfillRun:
    """Score the distill answers of `path` that lack llm_judge (module doc), at most `limit` of them."""
    run = BackfillRun()
    todo = wanting(read_records(path), datasets)
    if not todo:
        return run
    root = data_dir(data_root)
    excluded = evaluation_questions(root)
    sources = load_sources(root, sorted({r["dataset"] for r in todo}))
    if llm_loader is None:
        from functools import partial

        from verirag.llm import load_llm

        llm_loader = partial(load_llm, n_threads=n_threads)
    models = sorted({r["model"] for r in todo})
    ctx = LabelContext(sources, models=models, llm_loader=llm_loader, judge_full_every=0)
    pruner_data = str(distill.pruner_stage(ctx, models[0]).pruner.fingerprints.get("data", ""))[:16]
    run.todo = len(todo)
    if on_start:
        on_start(min(len(todo), limit) if limit is not None else len(todo))
    with label_file(path) as labels:
        for r in todo:
            if limit is not None and run.scored >= limit:
                break
            why = _unbuildable(r, ctx, pruner_data, excluded)
            updated = None if why else _scored(r, ctx)
            if updated is None:
                run.left[why or "the pruner kept another number of tokens than the generator read"] += 1
                continue
            labels.append(updated)
            run.scored += 1
            if on_progress:
                on_progress(run.scored)
    return run


def _unbuildable(r: dict[str, Any], ctx: LabelContext, pruner_data: str, excluded: set[str]) -> str | None:
    """Why the generator's read cannot be rebuilt for record `r` (None: it can)."""
    q = ctx.sources[r["dataset"]].questions.get(r["example"])
    if q is None:
        return "its question is no longer in the data"
    if question_hash(q.text) != r.get("qh"):
        return "its question's text changed"
    if question_key(q.text) in excluded:
        return "an evaluation question"
    if r.get("fingerprint") != provenance(ctx.llm(r["model"]), r["model"], "", 0.0, 0)["fingerprint"]:
        return "made by another model or engine"
    if str(r["meta"].get("prune", {}).get("data", "")) != pruner_data:
        return "made with another pruner"
    return None


def _scored(r: dict[str, Any], ctx: LabelContext) -> dict[str, Any] | None:
    """`r` with llm_judge's score of its answer over what the pruner keeps now, or None when that is not
    what the generator read (another number of tokens)."""
    q = ctx.sources[r["dataset"]].question(r["example"])
    asked = AnswerState(q.text)
    if r.get("history"):
        asked = AnswerState.asked(render(r["question"], ctx), [render(t, ctx) for t in r["history"]])
    stage = distill.pruner_stage(ctx, r["model"])
    hits = [ScoredPassage(p, 0.0, i) for i, p in enumerate(ctx.passages(q, r["passages"]))]
    pruned = stage.run(asked.retrieval_query(), hits, lambda _m: None)
    if pruned.info["tokens_read"] != r["meta"]["prune"]["tokens_read"]:
        return None
    out = distill.llm_judged(ctx, q, asked.in_context(), r["model"], r["answer"], [h.passage for h in pruned.kept], {})
    updated = copy.deepcopy(r)
    judge = updated["meta"].setdefault("judge", {})
    errors = out.pop("errors", None)
    judge.update(out, llm_judge_backfilled=True)
    if errors:
        judge["errors"] = {**judge.get("errors", {}), **errors}
    return updated
