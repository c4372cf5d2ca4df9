"""`verirag label verifier`: plan every item, make those the labels file lacks, one line each.

Questions: each dataset's usable questions (`sources`), minus every instruct_qa_human question
(`exclusion`), then the first `n` in an order drawn from `seed` (a larger n keeps the questions of
a smaller one, so a run can grow across sessions); the datasets' questions interleave so
that `limit` (at most that many new items in this run) still covers each dataset and recipe.
Every item's id is known before it is made, so a rerun of the same command skips what the file
holds (made by the recipe's current VERSION; a line of an older version is made again, the later
line counting) and makes only the rest; an item that failed (an LLM error) is not written and is tried
again next time. A summary (label balance, counts per recipe and dataset, skips) is written
beside the labels as <name>.summary.json, over the whole file.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import zip_longest
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.jsonio import write_json
from verirag_lab.datasets import data_dir
from verirag_lab.train.verifier_labels import (
    choice,
    distill,
    doc_claims,
    evidence_removal,
    evidence_sentence,
    followup,
    local_edit,
    multihop,
    paraphrase,
    real,
    subject,
    swap,
)
from verirag_lab.train.verifier_labels.context import Item, LabelContext, RecipeFailure
from verirag_lab.train.verifier_labels.exclusion import evaluation_questions, question_key
from verirag_lab.train.verifier_labels.heldout import SPLITS, split_of
from verirag_lab.train.verifier_labels.records import is_example, label_file
from verirag_lab.train.verifier_labels.sources import Question, Source, load_sources

RECIPES = {
    m.NAME: m
    for m in (
        real,
        swap,
        evidence_removal,
        local_edit,
        evidence_sentence,
        multihop,
        followup,
        doc_claims,
        paraphrase,
        distill,
        choice,
        subject,
    )
}
DEFAULT_DATASETS = ("nq", "hotpotqa")
DEFAULT_MODELS = ("qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2-135m")


@dataclass
class LabelRun:
    """What one run did; `summary` describes the whole labels file afterwards."""

    out: Path
    planned: int = 0
    written: int = 0
    already_done: int = 0
    remade: int = 0  # made again: their recipe's VERSION changed
    failed: list[str] = field(default_factory=list)  # "id: reason", tried again next run
    questions: dict[str, int] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    unusable: dict[str, int] = field(default_factory=dict)
    unreadable_lines: int = 0
    stopped_at_limit: bool = False
    seconds: float = 0.0
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def summary_path(self) -> Path:
        return summary_path(self.out)


def summary_path(out: Path) -> Path:
    return out.with_name(f"{out.name.removesuffix('.jsonl')}.summary.json")


def check_options(
    recipes: Sequence[str],
    models: Sequence[str],
    n: int | None,
    limit: int | None,
    real_per_question: int,
    swap_from: Sequence[str] | None = None,
    split: str | None = None,
    judge_full_every: int = 5,
) -> None:
    from verirag_lab.train.verifier_labels.replacements import ORIGINS

    odd = [o for o in swap_from or () if o not in ORIGINS]
    if odd:
        raise InputError(f"unknown swap origin(s) {', '.join(odd)}; choose from {', '.join(ORIGINS)}")
    if split is not None and split not in SPLITS:
        raise InputError(f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    unknown = [r for r in recipes if r not in RECIPES]
    if unknown or not recipes:
        raise InputError(f"unknown recipe(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(RECIPES)}")
    needy = [r for r in recipes if RECIPES[r].NEEDS_LLM]
    if needy and not models:
        raise InputError(f"recipe(s) {', '.join(needy)} need a model: give --models (e.g. smollm2-135m)")
    for name, value, low in (
        ("n", n, 1),
        ("limit", limit, 0),
        ("real_per_question", real_per_question, 1),
        ("judge_full_every", judge_full_every, 0),
    ):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < low):
            raise InputError(f"{name} must be an integer >= {low}, got {value!r}")


# Sources whose training questions are not drawn when their own evidence is banned. Only
# hotpotqa_support: its distillation draws every training question (so none is added in their place);
# the nq and hotpotqa task lists are committed whole, and dropping questions there would plan others.
SKIP_BANNED_EVIDENCE = ("hotpotqa_support",)


def select_questions(
    source: Source, excluded_keys: set[str], n: int | None, seed: int, split: str | None = None
) -> tuple[list[Question], list[str], int]:
    """(the `n` drawn questions, ids of the questions that may lend their answers and turns, how many
    were excluded). Drawn: the allowed questions of `split` (none given: train's and heldout's, never
    the final test's). Answers, turns and distractors come from `split`'s questions only (none given:
    train's), so a training item never reads a held-out question's answer or evidence, nor a held-out
    item a training question's; the excluded questions' evidence is never a distractor either, and (in
    SKIP_BANNED_EVIDENCE's sources) a training question whose own evidence is such a passage is not drawn."""
    usable = list(source.questions.values())
    allowed = [q for q in usable if question_key(q.text) not in excluded_keys]
    n_excluded = len(usable) - len(allowed)
    lend = split or "train"
    drawn = [
        q
        for q in allowed
        if split_of(q.dataset, q.id) == split or (split is None and split_of(q.dataset, q.id) != "final")
    ]
    # added to what the loader banned (hotpotqa_support: paragraphs of held-out HotpotQA evidence)
    source.banned = (
        set(source.banned)
        | {
            key
            for key, asked in source.evidence_of.items()
            if any(question_key(text) in excluded_keys for text in asked)
        }
        | {key for key, ids in source.evidence_ids.items() if any(split_of(source.name, i) != lend for i in ids)}
    )
    # a hotpotqa_support training question whose own evidence is banned (a held-out or evaluation
    # question's paragraph too) only makes records the training guard refuses: not drawn
    if source.name in SKIP_BANNED_EVIDENCE:
        drawn = [q for q in drawn if split_of(q.dataset, q.id) != "train" or not set(q.gold) & source.banned]
    # Each question's place comes from a hash of (seed, dataset, id): a larger n extends a smaller
    # one's questions (a labelling run grows across sessions) and no other question moves them.
    order = sorted(drawn, key=lambda q: hashlib.sha256(f"{seed}|{source.name}|{q.id}".encode()).digest())
    lenders = [q.id for q in allowed if split_of(q.dataset, q.id) == lend]
    return order[:n] if n is not None else order, lenders, n_excluded


def plan_items(ctx: LabelContext, questions: dict[str, list[Question]], recipes: Sequence[str]) -> list[Item]:
    order = [q for group in zip_longest(*questions.values()) for q in group if q is not None]
    return [item for q in order for r in recipes for item in RECIPES[r].plan(q, ctx)]


def label_verifier(
    out: str | Path,
    *,
    data_root: str | Path | None = None,
    datasets: Sequence[str] = DEFAULT_DATASETS,
    recipes: Sequence[str] = tuple(RECIPES),
    n: int | None = 100,
    models: Sequence[str] = DEFAULT_MODELS,
    seed: int = 0,
    limit: int | None = None,
    real_per_question: int = 3,
    swap_from: Sequence[str] | None = None,
    split: str | None = None,
    judge_full_every: int = 5,
    llm_loader=None,
    n_threads: int | None = None,
    on_start: Callable[[int], None] | None = None,
    on_progress: Callable[[int, int, dict | None], None] | None = None,
) -> LabelRun:
    """Label into `out` (JSONL), skipping ids it holds; see the module doc.
    `on_start(total)` once the items are planned; `on_progress(done, total, record)` after each
    item (record None when it was already in the file or failed). Models load through
    `verirag.llm.load_llm` (request cache, `n_threads` llama.cpp threads) unless `llm_loader`
    (model name -> LLM) is given. `judge_full_every`: the distill recipe judges 1 in this many
    answers over every passage too (0: none)."""
    check_options(recipes, models, n, limit, real_per_question, swap_from, split, judge_full_every)
    t0 = time.perf_counter()
    root = data_dir(data_root)
    run = LabelRun(out=Path(out))
    excluded_keys = evaluation_questions(root)
    sources = load_sources(root, datasets)
    questions, allowed = {}, {}
    for name, source in sources.items():
        questions[name], allowed[name], run.excluded[name] = select_questions(source, excluded_keys, n, seed, split)
        run.questions[name], run.unusable[name] = len(questions[name]), source.unusable
    if llm_loader is None:
        from verirag.llm import load_llm

        llm_loader = partial(load_llm, n_threads=n_threads)
    ctx = LabelContext(
        sources,
        seed=seed,
        models=models,
        allowed=allowed,
        llm_loader=llm_loader,
        real_per_question=real_per_question,
        swap_from=swap_from,
        judge_full_every=judge_full_every,
    )
    items = plan_items(ctx, questions, recipes)
    run.planned = len(items)
    labels = label_file(run.out)
    done = labels.load()
    run.unreadable_lines = labels.unreadable_lines
    if on_start:
        on_start(len(items))
    with labels:
        for i, item in enumerate(items, start=1):
            record = None
            version = RECIPES[item.recipe].VERSION
            if item.id in done and done[item.id].get("v", 1) == version:
                run.already_done += 1
            elif limit is not None and run.written + len(run.failed) >= limit:
                run.stopped_at_limit = True
                break
            else:
                try:
                    record = item.make()
                except RecipeFailure as e:
                    run.failed.append(f"{item.id}: {e}")
                else:
                    if item.id in done:
                        run.remade += 1
                    record["v"] = version
                    labels.append(record)
                    done[item.id] = record
                    run.written += 1
            if on_progress:
                on_progress(i, len(items), record)
    run.seconds = time.perf_counter() - t0
    run.summary = summarise(list(label_file(run.out).load().values()), run, split)
    write_json(run.summary_path, run.summary)
    return run


def summarise(
    records: list[dict[str, Any]], run: LabelRun | None = None, split_name: str | None = None
) -> dict[str, Any]:
    """Label balance and counts per recipe, dataset, model and skip reason of a labels file."""
    examples = [r for r in records if is_example(r)]
    positives = sum(r["label"] for r in examples)
    by_recipe: dict[str, Counter] = {}
    for r in records:
        key = "skipped" if "skip" in r else str(r.get("label"))
        by_recipe.setdefault(r.get("recipe", "?"), Counter())[key] += 1
    summary: dict[str, Any] = {
        "examples": len(examples),
        "label_balance": {
            "supported": positives,
            "unsupported": len(examples) - positives,
            "share_supported": round(positives / len(examples), 4) if examples else None,
        },
        "by_recipe": {
            k: {"supported": c["1"], "unsupported": c["0"], "skipped": c["skipped"]}
            for k, c in sorted(by_recipe.items())
        },
        "by_dataset": dict(sorted(Counter(f"{r['dataset']}:{r['label']}" for r in examples).items())),
        "by_model": dict(sorted(Counter(r["model"] for r in examples if r.get("model")).items())),
        "with_sentence_labels": sum(1 for r in examples if r.get("sentence_labels")),
        "with_history": sum(1 for r in examples if r.get("history")),
        "by_split": dict(sorted(Counter(split_of(r["dataset"], str(r["example"])) for r in examples).items())),
        "groups": len({f"{r['dataset']}:{str(r['example']).rsplit('#', 1)[0]}" for r in examples}),
        "skip_reasons": dict(Counter(r["skip"] for r in records if "skip" in r).most_common()),
    }
    if run is not None:
        summary["last_run"] = {
            "planned": run.planned,
            "written": run.written,
            "already_done": run.already_done,
            "remade_for_a_new_recipe_version": run.remade,
            "failed": len(run.failed),
            "questions": run.questions,
            "excluded_as_evaluation_questions": run.excluded,
            "unusable_questions": run.unusable,
            "unreadable_lines": run.unreadable_lines,
            "stopped_at_limit": run.stopped_at_limit,
            "split": split_name,
            "seconds": round(run.seconds, 2),
        }
    return summary
