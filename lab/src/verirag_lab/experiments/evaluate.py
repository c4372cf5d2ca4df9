"""`verirag.evaluate` of an experiment config or a study (the lab's side of it): the grid's
records, summary and report, as `verirag eval CONFIG --out DIR` writes them. The library's
`verirag.api.evaluate` reaches the lab through this one function only (tests/test_lab_apart.py)."""

from __future__ import annotations

from pathlib import Path

from verirag.api import Evaluation


def evaluate_config(path: Path, out_dir: Path, *, limit, progress: bool, report: bool) -> Evaluation:
    from verirag_lab.experiments.commands import load_study, run_study
    from verirag_lab.experiments.grid.config import load_config
    from verirag_lab.experiments.grid.runner import run_experiment
    from verirag_lab.experiments.report.awf import build_report

    study = load_study(path)
    if study is not None:
        result = run_study(study, out_dir)
        return Evaluation("study", out_dir, result, Path(result["report"]) if result.get("report") else None)
    outcome = run_experiment(load_config(path), out_dir, limit=limit, progress=progress)
    summary = {
        "written": outcome.written,
        "skipped": outcome.skipped,
        "recomputed": outcome.recomputed,
        "record_errors": outcome.record_errors,
    }
    page = Path(build_report(out_dir)) if report else None
    return Evaluation("experiment", out_dir, summary, page, outcome.failures)
