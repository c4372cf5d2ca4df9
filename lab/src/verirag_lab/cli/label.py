"""`verirag label verifier`: labelled examples for the trained verifier."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from verirag.cli._shared import err, names, out, progress


def label_verifier(
    out_file: Path = typer.Option(
        ..., "--out", help="The labels JSONL (resumed when it exists); a <name>.summary.json is written beside it."
    ),
    datasets: list[str] = typer.Option(
        ["nq,hotpotqa"],
        "--datasets",
        help="nq, hotpotqa, hotpotqa_support (HotpotQA supporting facts, from $VERIRAG_HOTPOTQA_SUPPORT), nomiracl, docs (installed documentation; comma-separated).",
    ),
    recipes: list[str] = typer.Option(
        ["real,swap,evidence_removal,local_edit,evidence_sentence"],
        "--recipes",
        help="real, swap, evidence_removal, local_edit, evidence_sentence, multihop, followup, doc_claims, "
        "paraphrase, distill, choice, subject "
        "(comma-separated; the default: the first five).",
    ),
    n: int | None = typer.Option(100, help="Questions per dataset, drawn with --seed (0: all)."),
    models: list[str] = typer.Option(
        ["qwen2.5-1.5b,qwen2.5-0.5b,smollm2-135m"],
        "--models",
        help="Models that answer (presets, comma-separated); none: no LLM.",
    ),
    seed: int = typer.Option(0, help="Seed of the question draw and of every choice of a recipe."),
    limit: int | None = typer.Option(None, help="Make at most this many new items in this run."),
    per_question: int = typer.Option(3, help="Answers per question and model of the real recipe."),
    judge_full_every: int = typer.Option(
        5,
        help="distill: 1 in this many answers (seeded) is judged by nli over every passage too, "
        "beside nli over the evidence (0: none).",
    ),
    swap_from: list[str] = typer.Option(
        [],
        "--swap-from",
        help="Origins the swap recipe draws a wrong answer "
        "from, the first that has one (passage, answer, made_up; comma-separated; "
        "passage: a wrong span of the same passages, the hardest). Default: any.",
    ),
    split: str | None = typer.Option(
        None,
        help="Only this split's questions: train, heldout (whole questions, the own-answer runs' too; for docs "
        "whole packages: the man pages) or final (the Info manuals, kept back for the final table). Default: "
        "train's and heldout's, answers and distractors from train's only.",
    ),
    threads: int | None = typer.Option(
        None, help="llama.cpp threads (default: every core; on a busy machine 1 can be much faster)."
    ),
    data: Path | None = typer.Option(None, help="The benchmark data folder (default: $VERIRAG_DATA_DIR)."),
):
    """Label (question, answer, passages) examples for the trained verifier: real answers of the local
    models graded against gold answers, swaps, evidence removal and local edits. One JSON line per
    example as it is made (ids and generated text, never benchmark text); the same command resumes."""
    from verirag_lab.train.verifier_labels import label_verifier as make_labels

    with progress(remaining=True) as bar:
        task = bar.add_task("reading the data…", total=None)
        run = make_labels(
            out_file,
            data_root=data,
            datasets=names(datasets),
            recipes=names(recipes),
            n=n or None,
            models=names(models),
            seed=seed,
            limit=limit,
            real_per_question=per_question,
            judge_full_every=judge_full_every,
            swap_from=names(swap_from) or None,
            split=split,
            n_threads=threads,
            on_start=lambda total: bar.update(task, total=total, description="labelling"),
            on_progress=lambda i, total, _r: bar.update(task, completed=i),
        )
    s, last = run.summary, run.summary["last_run"]
    table = Table("recipe", "supported", "unsupported", "skipped")
    for recipe, c in s["by_recipe"].items():
        table.add_row(recipe, str(c["supported"]), str(c["unsupported"]), str(c["skipped"]))
    out.print(table)
    balance = s["label_balance"]
    share = f"{balance['share_supported']:.1%}" if balance["share_supported"] is not None else "-"
    out.print(
        f"{s['examples']} examples in {escape(str(out_file))} ({share} supported); this run: {run.written} made, "
        f"{run.already_done} already there, {len(run.failed)} failed, {run.seconds:.1f} s"
        + ("; stopped at --limit" if run.stopped_at_limit else "")
    )
    out.print(
        "questions left out as instruct_qa_human (evaluation) questions: "
        + ", ".join(f"{k} {v}" for k, v in last["excluded_as_evaluation_questions"].items())
    )
    for failure in run.failed[:5]:
        err.print(f"[yellow]failed (tried again next run):[/yellow] {escape(failure)}")
    if run.unreadable_lines:
        err.print(
            f"[yellow]warning:[/yellow] {run.unreadable_lines} unreadable line(s) in {escape(str(out_file))} "
            "(a killed run's torn line): their items were made again"
        )
    out.print(f"summary: {escape(str(run.summary_path))}")


def label_llm_judge(
    labels: Path = typer.Argument(..., help="The distillation's labels JSONL (`label verifier --recipes distill`)."),
    datasets: list[str] = typer.Option([], "--datasets", help="Only these datasets' answers (comma-separated)."),
    limit: int | None = typer.Option(None, help="Score at most this many answers in this run."),
    threads: int | None = typer.Option(None, help="llama.cpp threads (default: every core)."),
    data: Path | None = typer.Option(None, help="The benchmark data folder (default: $VERIRAG_DATA_DIR)."),
):
    """Add `llm_judge`'s score to the distillation answers made before it was recorded: the same judge
    over the passages the generator read (rebuilt and checked), appended to the file; resumes."""
    from verirag_lab.train.verifier_labels.distill_llm_judge import backfill_llm_judge

    with progress(remaining=True) as bar:
        task = bar.add_task("reading the data…", total=None)
        run = backfill_llm_judge(
            labels,
            data_root=data,
            datasets=names(datasets) or None,
            limit=limit,
            n_threads=threads,
            on_start=lambda total: bar.update(task, total=total, description="llm_judge"),
            on_progress=lambda i: bar.update(task, completed=i),
        )
    out.print(f"{run.scored} of {run.todo} answers without llm_judge scored in {escape(str(labels))}")
    for why, count in run.left.most_common():
        err.print(f"[yellow]left as they are:[/yellow] {count} ({escape(why)})")
