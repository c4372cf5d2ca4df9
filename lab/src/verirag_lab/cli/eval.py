"""`verirag eval`, `verirag report`: experiment grids and paper studies, run and reported (the lab)."""

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
    methods: str = typer.Option(
        "",
        help="Comma-separated method labels: run only these (e.g. the fast judge first); running the whole "
        "config later resumes from their records.",
    ),
):
    """Run (or resume) an experiment grid, or a paper study (a config with `study:`); every grid record
    lands in OUT/results.jsonl as it completes."""
    from verirag_lab.experiments.commands import load_study, run_study, study_summary
    from verirag_lab.experiments.grid.config import load_config
    from verirag_lab.experiments.grid.runner import run_experiment
    from verirag_lab.experiments.report.awf import build_report

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
    cfg = load_config(config)
    if methods.strip():
        cfg = cfg.only_methods([m.strip() for m in methods.split(",") if m.strip()])
    outcome = run_experiment(cfg, out_dir, executor=executor, limit=limit, progress=True)
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
    from verirag_lab.experiments.commands import rebuild_report

    out.print(f"report: {rebuild_report(run_dir, compare)}")
