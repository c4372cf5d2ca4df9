"""`verirag eval`, `verirag report`, `verirag calibrate`: experiment runs and the thresholds fitted on them."""

from __future__ import annotations

import time
from pathlib import Path

import typer
from rich.markup import escape

from verirag.cli._shared import err, out


def eval_cmd(
    config: Path = typer.Argument(..., help="Experiment config (YAML); see configs/awf-small.yaml."),
    out_dir: Path = typer.Option(..., "--out", help="Run directory: results.jsonl, report, figures."),
    executor: str = typer.Option("local", help="local (default) or ray (RAY_ADDRESS, or a local cluster)."),
    limit: int | None = typer.Option(None, help="At most this many examples per dataset (a quick look)."),
    report: bool = typer.Option(True, help="Build the report when the run ends."),
):
    """Run (or resume) an experiment grid, or a paper study (a config with `study:`); every grid record
    lands in OUT/results.jsonl as it completes."""
    from verirag.experiments.commands import load_study, run_study, study_summary
    from verirag.experiments.grid.config import load_config
    from verirag.experiments.grid.runner import run_experiment
    from verirag.experiments.report.awf import build_report

    study = load_study(config)
    if study is not None:
        started = time.perf_counter()
        with err.status("starting…") as status:

            def stage(text: str) -> None:
                status.update(escape(text) + "…")
                if not err.is_terminal:  # a log file gets one line per stage instead of a spinner
                    err.print(f"[{time.perf_counter() - started:6.0f} s] {escape(text)}")

            result = run_study(study, out_dir, on_stage=stage)
        for line in study_summary(result):
            out.print(escape(line))
        out.print(f"study done in {time.perf_counter() - started:.0f} s; report: {result['report']}")
        return
    outcome = run_experiment(load_config(config), out_dir, executor=executor, limit=limit, progress=True)
    out.print(
        f"{outcome.written} records written, {outcome.skipped} already done, "
        f"{outcome.record_errors} with an error (kept, counted as unsupported)."
    )
    if outcome.recomputed:
        out.print(
            f"{outcome.recomputed} records recomputed: their method's identity changed since they were "
            "written (an option, a default, a prompt's text or the model)."
        )
    for f in outcome.failures:
        err.print(
            f"[red]failed:[/red] {escape(f['dataset'])} / {escape(f['model'])} / {escape(f['method'])}: "
            f"{escape(f['error'])}"
        )
    if report:
        out.print(f"report: {build_report(out_dir)}")
    if outcome.failures:
        raise typer.Exit(1)


def report_cmd(
    run_dir: Path = typer.Argument(..., help="A run directory written by `verirag eval`."),
    compare: list[str] = typer.Option(
        [],
        "--compare",
        help="BASELINE:METHOD, repeatable: the "
        "method minus the baseline, paired over the same examples "
        "(beside the AwF paper's questions, compared by default).",
    ),
):
    """Rebuild summary, tables, figures and report.html from OUT/results.jsonl (or a study's OUT/study.json),
    without rerunning."""
    from verirag.experiments.commands import rebuild_report

    out.print(f"report: {rebuild_report(run_dir, compare)}")


def calibrate(
    run_dir: Path = typer.Argument(..., help="A run directory written by `verirag eval`."),
    model: str = typer.Option(..., help="The model as named in the run."),
    method: str = typer.Option(..., help="The AwF method as named in the run."),
    dataset: str | None = typer.Option(None, help="Fit on one dataset only (default: all)."),
    precision: float | None = typer.Option(None, help="Target precision of answered questions."),
    delta: float = typer.Option(0.1, help="With --precision: the guarantee holds with prob. 1-delta."),
    action_rate: float | None = typer.Option(
        None, help="Act (abstain/fall back/escalate) on at most this share of questions."
    ),
    save: Path | None = typer.Option(None, help="Write the fitted threshold here, for `verirag ask --threshold FILE`."),
):
    """Fit the faithfulness threshold for a target precision or action rate on an eval run's labels."""
    from verirag.train.threshold import calibrate_run

    fitted, saved = calibrate_run(
        run_dir,
        model=model,
        method=method,
        dataset=dataset,
        precision=precision,
        delta=delta,
        action_rate=action_rate,
        save=save,
    )
    if fitted.certified_:
        out.print(f"threshold {fitted.threshold_:.4g} for {fitted.target_text()} on {fitted.n_fit_} examples")
    else:
        out.print(
            f"not certified: no threshold reaches the target {fitted.target_text()} on {fitted.n_fit_} "
            "examples, so with this file every answer acts (abstain / fall back / escalate)"
        )
    if saved is not None:
        out.print(f"saved: {saved}")
