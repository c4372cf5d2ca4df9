"""`verirag verify`: judge another system's answers, one or a whole log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verirag.cli._shared import (
    MODEL_HELP,
    PRESET_HELP,
    THRESHOLD_HELP,
    JudgeOpt,
    err,
    out,
    print_panel,
    print_skipped,
    progress,
    warn_all,
)
from verirag.errors import InputError


def print_verified(v) -> None:
    """A VerifyResult as a panel: each sentence marked, the verdict, the evidence, notes."""
    colour = "green" if v.faithful else ("red" if v.error is None and not v.unverified else "yellow")
    if v.unverified:
        verdict = f"unverified: {v.unverified['reason']}, the score is not trusted"
    else:
        verdict = "supported" if v.faithful else ("not verified" if v.score is None else "not supported")
    lines = [f"[bold]Q:[/bold] {escape(v.question)}", f"[bold]A:[/bold] {escape(v.answer)}"]
    for s in v.sentences or []:  # a sentence-level verifier: each sentence, the unsupported ones marked
        weak = v.threshold is not None and s.score < v.threshold
        mark = "[red]unsupported[/red]" if weak else "[green]supported[/green]"
        lines.append(f"  {mark} {s.score:.3f} ({escape(str(s.supporting_passage))}): {escape(s.text)}")
    lines.append(
        f"[bold]faithfulness[/bold] {'–' if v.score is None else f'{v.score:.3f}'} "
        f"([{colour}]{verdict}[/{colour}]"
        + (f" at threshold {v.threshold:.2f})" if v.threshold is not None else ": no threshold is certified)")
    )
    if v.supporting_passage is not None:
        sp = v.supporting_passage
        flat = " ".join(sp.text.split())
        label = "evidence" if v.faithful else "closest passage"
        support = "–" if sp.support_score is None else f"{sp.support_score:.3f}"
        lines.append(
            f"[bold]{label}[/bold] {escape(sp.id)} (support {support}): "
            f"{escape(flat if len(flat) < 240 else flat[:240] + '…')}"
        )
    if v.unverified:
        lines.append(f"[yellow]unverified:[/yellow] {escape(v.unverified['message'])}")
    print_panel(lines, v.timings, f"method {escape(v.method)}  judge {escape(v.judge)}", colour, [v.error, *v.warnings])


# The options, declared once beside their help (typer reads `Annotated`): the command stays short.
LogArg = Annotated[
    Path | None,
    typer.Argument(
        help="A JSONL log of your system's questions, answers and retrieved contexts, in RAGAS or DeepEval "
        "field names (or mapped)."
    ),
]
OutDir = Annotated[
    Path | None,
    typer.Option("--out", help="With LOG: results.jsonl (one line per answer, resumable), summary.json, report.html."),
]
Question = Annotated[str | None, typer.Option(help="One answer's question (with --answer, --passages).")]
Answer = Annotated[str | None, typer.Option(help="The answer to verify.")]
Passages = Annotated[
    list[Path],
    typer.Option(
        "--passages",
        help="The answer's passages: a text file per passage (repeatable), a folder of them, or a JSONL of passages.",
    ),
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print one JSON object (the result, or the summary).")]
Preset = Annotated[str, typer.Option(help=PRESET_HELP)]
Model = Annotated[str | None, typer.Option(help=MODEL_HELP)]
Method = Annotated[
    str | None,
    typer.Option(
        help="What judges, by name: verifier (default: the shipped trained verifier, as everywhere), nli "
        "(the default with --judge), cascade, llm_judge, ... (`GET /v1/methods` lists them; a full "
        "GENERATOR+PREDICTOR name such as vanilla+nli is taken too)."
    ),
]
Threshold = Annotated[str | None, typer.Option(help=THRESHOLD_HELP)]
QuestionField = Annotated[str | None, typer.Option(help="The log's question field (default: detected).")]
AnswerField = Annotated[str | None, typer.Option(help="The log's answer field.")]
ContextsField = Annotated[str | None, typer.Option(help="The log's retrieved contexts field.")]
ReferenceField = Annotated[str | None, typer.Option(help="The log's reference (gold) answer field.")]
LabelField = Annotated[
    str | None,
    typer.Option(
        help="A human label field (true/false, 0/1, supported/unsupported): AUROC and precision/recall against it."
    ),
]
HistoryField = Annotated[
    str | None,
    typer.Option(
        help="The log's conversation field: each question's earlier turns, strings or {role, content} "
        "messages (default: history; none: read no history)."
    ),
]
Limit = Annotated[int | None, typer.Option(help="Only the first N lines of the log (a quick look).")]
Block = Annotated[
    int | None,
    typer.Option(
        help="Answers verified together in one batched pass; each block's results are written when it ends, "
        "so a killed run loses at most one block. Default: 256 for the trained verifier (it reads a block's "
        "answers in one batched pass), 8 for a judge that scores one answer after another (an LLM judge). "
        "With --executor ray a block is a shard, what one worker takes at a time: give at least a few per worker."
    ),
]
Executor = Annotated[
    str,
    typer.Option(
        help="With LOG: local (this process) or ray: the log's blocks are shards verified by Ray workers "
        "(pip install 'verirag[ray]'), with the same results, summary and report."
    ),
]
Workers = Annotated[
    int | None,
    typer.Option(
        help="With --executor ray: Ray workers (actors, one CPU each, the verifier loaded once in each; default 2)."
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        help="With --executor ray: the cluster to join (HOST:PORT of `ray start --head`, or auto); "
        "default RAY_ADDRESS, else a local Ray started for the run."
    ),
]
FitPrecision = Annotated[
    float | None,
    typer.Option(
        help="With LOG --label-field F: then fit the threshold whose precision is at least P with probability "
        "1 - DELTA on the labels (Learn then Test) and write it to OUT/threshold.json, for --threshold FILE."
    ),
]
Delta = Annotated[float, typer.Option(help="With --fit-precision: the guarantee holds with probability 1 - DELTA.")]


def verify(
    log: LogArg = None,
    out_dir: OutDir = None,
    question: Question = None,
    answer: Answer = None,
    passages: Passages = [],  # noqa: B006 (typer reads the default; it is never mutated)
    json_out: JsonOut = False,
    preset: Preset = "local",
    model: Model = None,
    method: Method = None,
    judge: JudgeOpt = None,
    threshold: Threshold = None,
    question_field: QuestionField = None,
    answer_field: AnswerField = None,
    contexts_field: ContextsField = None,
    reference_field: ReferenceField = None,
    label_field: LabelField = None,
    history_field: HistoryField = None,
    limit: Limit = None,
    block: Block = None,
    executor: Executor = "local",
    workers: Workers = None,
    ray_address: RayAddress = None,
    fit_precision: FitPrecision = None,
    delta: Delta = 0.1,
):
    """Verify another system's answers: one (--question, --answer, --passages) or a whole log
    (LOG --out DIR), against the contexts each was answered from."""
    from verirag import answer_log as al
    from verirag.awf.answer_spec import AnswerSpec
    from verirag.awf.pipeline import Pipeline
    from verirag.learned.threshold import parse_threshold

    single = question is not None or answer is not None or bool(passages)
    _check_options(log, out_dir, single, limit, executor, workers, ray_address, fit_precision, delta, label_field)
    found = _one_answers_passages(question, answer, passages) if single else None
    spec = AnswerSpec.from_flat(
        preset=preset, model=model, judge=judge, threshold=parse_threshold(threshold)[0], method=method
    )  # no method: the default for given answers, or with --judge the method that uses it (as everywhere)
    p = Pipeline(spec.for_given_answers())
    unused = spec.unused_model()
    warn_all(p.threshold_warnings(answering=False) + ([unused] if unused else []))
    if single:
        return _verify_one(p, question, answer, found, json_out)
    fields = {"question_field": question_field, "answer_field": answer_field, "contexts_field": contexts_field}
    fields.update(reference_field=reference_field, label_field=label_field, history_field=history_field)
    run = {"limit": limit, "block": block, "executor": executor, "workers": workers or 2, "ray_address": ray_address}
    done = _verify_log(p, log, out_dir, run, fields)
    fitted = saved = None
    if fit_precision is not None:
        from verirag.answer_log.calibrate import calibrate_log

        fitted, saved = calibrate_log(out_dir, precision=fit_precision, delta=delta)
    _print_log_done(done, out_dir, al.RESULTS_FILE, fitted, saved, json_out)


def _check_options(log, out_dir, single, limit, executor, workers, ray_address, fit_precision, delta, label_field):
    """Every combination of options that cannot run, refused before anything loads."""
    from verirag import answer_log as al
    from verirag.learned.threshold import ThresholdController

    if (log is None) == (not single):
        raise InputError("give a LOG.jsonl (with --out DIR), or one answer with --question, --answer and --passages")
    if limit is not None and limit < 1:
        raise InputError(f"--limit must be at least 1, got {limit}")
    if executor not in al.EXECUTORS:
        raise InputError(f"--executor must be one of {', '.join(al.EXECUTORS)}, got {executor!r}")
    if executor != "ray" and (workers is not None or ray_address is not None):
        raise InputError("--workers and --ray-address are for --executor ray")
    if executor == "ray" and single:
        raise InputError("--executor ray verifies a LOG; one answer is verified here")
    if workers is not None and workers < 1:
        raise InputError(f"--workers must be at least 1, got {workers}")
    if fit_precision is not None:
        if single or not label_field:
            raise InputError("--fit-precision fits a threshold on a log's labels: give LOG --out DIR --label-field F")
        try:  # a bad target fails before the log is verified, not after
            ThresholdController(precision=fit_precision, delta=delta)
        except ValueError as e:
            raise InputError(f"--fit-precision / --delta: {e}") from None
    if single and out_dir is not None:
        raise InputError("--out is where a log's results go; one answer is printed (--json for JSON)")
    if not single and out_dir is None:
        raise InputError("give --out DIR: where the results, summary and report of the log go")


def _one_answers_passages(question, answer, passages):
    from verirag import answer_log as al

    if not (question and answer and passages):
        raise InputError("one answer needs --question, --answer and --passages FILE")
    found, skipped = al.read_passages(passages)
    print_skipped(skipped)
    return found


def _verify_one(p, question, answer, passages, json_out: bool) -> None:
    from verirag.jsonio import strict_json

    with err.status("verifying…") as status:
        v = p.verify(question, answer, passages, on_stage=lambda stage: status.update(f"{stage}…"))
    if json_out:
        print(json.dumps(strict_json(v.to_dict()), ensure_ascii=False))
    else:
        print_verified(v)


def _verify_log(p, log: Path, out_dir: Path, run: dict, fields: dict):
    """The log verified with a progress bar; on an outage, where the answers verified so far are."""
    from verirag import answer_log as al
    from verirag.errors import BackendError

    try:
        with progress() as bar:
            local = run["executor"] == "local"
            task = bar.add_task(
                "loading the model…" if local else f"starting {run['workers']} Ray workers…", total=None
            )
            return al.verify_log(
                p,
                log,
                out_dir,
                on_progress=lambda i, n, _r: bar.update(task, completed=i, total=n, description="verifying"),
                # a block's records come when all of it is done: say what is under way until then
                on_block=lambda n: bar.update(task, description=f"verifying a block of {n} answers…"),
                **run,
                **fields,
            )
    except BackendError:
        err.print(
            f"the answers verified so far are kept in {escape(str(out_dir / al.RESULTS_FILE))}: "
            "the same command resumes"
        )
        raise


def _print_log_done(done, out_dir: Path, results_file: str, fitted, saved, json_out: bool) -> None:
    from verirag import answer_log as al
    from verirag.jsonio import strict_json

    if json_out:
        shown = dict(done.summary)
        if fitted is not None:
            shown["fitted_threshold"] = {
                "file": str(saved),
                "threshold": fitted.threshold_,
                "certified": fitted.certified_,
            }
        print(json.dumps(strict_json(shown), ensure_ascii=False))
        return
    run = done.run
    # counted in lines, as the summary counts them: a malformed line is done too, never an answer
    out.print(
        f"{run.written} of {len(run.records)} lines done now, {run.already_done} were already done"
        + (f", {run.unreadable_lines} torn lines of a killed run ignored" if run.unreadable_lines else "")
        + f" (format {escape(done.log.fields.format)})."
    )
    for line in al.summary_lines(done.summary):
        out.print(escape(line))
    out.print(f"results: {escape(str(out_dir / results_file))}; report: {escape(str(done.report))}")
    if fitted is not None:
        from verirag.cli.calibrate import print_fitted

        print_fitted(fitted, saved)
