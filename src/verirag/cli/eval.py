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
    run_dir: Path = typer.Argument(
        ...,
        help="A run directory written by `verirag eval`, or the --out folder of `verirag verify LOG "
        "--label-field F` (its labels calibrate --precision).",
    ),
    model: str | None = typer.Option(None, help="The model as named in the run (a verified log: read from it)."),
    method: str | None = typer.Option(
        None, help="The AwF method as named in the run (a verified log: read from it, checked when given)."
    ),
    dataset: str | None = typer.Option(None, help="Fit on one dataset only (default: all)."),
    precision: float | None = typer.Option(None, help="Target precision of answered questions."),
    delta: float = typer.Option(0.1, help="With --precision: the guarantee holds with prob. 1-delta."),
    action_rate: float | None = typer.Option(
        None, help="Act (abstain/fall back/escalate) on at most this share of questions."
    ),
    save: Path | None = typer.Option(
        None,
        help="Write the fitted threshold here, for `verirag ask --threshold FILE` (a verified log: "
        "default DIR/threshold.json).",
    ),
):
    """Fit the faithfulness threshold for a target precision or action rate on the labels of an eval
    run or of a verified answer log."""
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
    print_fitted(fitted, saved)


def print_fitted(fitted, saved: Path | None) -> None:
    """A fitted threshold in a line (what it was fitted for), or the warning that it is not certified."""
    made_by = ", ".join(f"{k} {fitted.fingerprints[k]}" for k in ("method", "model") if fitted.fingerprints.get(k))
    if fitted.certified_:
        out.print(
            f"threshold {fitted.threshold_:.4g} for {fitted.target_text()} on {fitted.n_fit_} examples"
            + (f" ({escape(made_by)})" if made_by else "")
        )
    else:
        out.print(  # on stdout with the result it replaces
            f"[yellow]warning:[/yellow] not certified: no threshold reaches the target {fitted.target_text()} on "
            f"{fitted.n_fit_} examples, so with this file every answer acts (abstain / fall back / escalate; "
            "verify: not supported)"
        )
    if saved is not None:
        out.print(f"saved: {escape(str(saved))}")
