"""What `verirag eval` and `verirag report` run, chosen by the config or the run directory: the
AwF grid (`grid/`, a config without `study`), or a paper study (`study: dependable`, Geissler et
al.; `study: calibrag`, Jang et al.; `studies/`) whose directory holds study.json."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag_lab.experiments.grid.comparisons import parse_pair
from verirag_lab.experiments.report import calibrag as calibrag_report
from verirag_lab.experiments.report import dependable as dependable_report
from verirag_lab.experiments.report.awf import build_report
from verirag_lab.experiments.schema import listing, read_yaml, shown
from verirag_lab.experiments.studies import calibrag, dependable
from verirag_lab.experiments.studies.common import STUDY_FILE, write_study

STUDIES = {
    "dependable": (dependable.parse_dependable_study, dependable.run_dependable_study, dependable_report.summary_lines),
    "calibrag": (calibrag.parse_calibrag_study, calibrag.run_calibrag_study, calibrag_report.summary_lines),
}
StudyConfig = dependable.DependableStudyConfig | calibrag.CalibragStudyConfig


def load_study(path: str | Path) -> StudyConfig | None:
    """The study config in the YAML file `path`, validated; None for an AwF grid config."""
    raw = read_yaml(path)
    if not isinstance(raw, dict) or "study" not in raw:
        return None
    if raw["study"] not in STUDIES:
        raise InputError(
            f"{Path(path)}: 1 problem(s): study: must be one of {listing(STUDIES)}, got {shown(raw['study'])}"
        )
    return STUDIES[raw["study"]][0](raw, str(Path(path)))


def run_study(
    cfg: StudyConfig, out_dir: str | Path, *, on_stage: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run (or resume, through the request cache) the study into `out_dir`: study.json, report.html."""
    return STUDIES[cfg.study][1](cfg, out_dir, on_stage=on_stage)


def study_summary(result: dict[str, Any]) -> list[str]:
    """The study's main tables in a few lines, for the terminal."""
    return STUDIES[result["config"]["study"]][2](result)


def rebuild_report(run_dir: str | Path, compare: Sequence[str] = ()) -> Path:
    """Rebuild the report of an eval run or a study from its files, without running anything;
    `compare`: "BASELINE:METHOD" pairs for an eval run's paired comparisons."""
    run_dir = Path(run_dir)
    if not (run_dir / STUDY_FILE).is_file():
        try:
            pairs = [parse_pair(c) for c in compare]
        except ValueError as e:
            raise InputError(str(e)) from None
        return build_report(run_dir, pairs)
    if compare:
        raise InputError(f"--compare compares the methods of an eval run; {run_dir} holds a study")
    try:
        study = json.loads((run_dir / STUDY_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InputError(f"{run_dir / STUDY_FILE} is not readable JSON: {e}") from None
    if study.get("config", {}).get("study") == "calibrag":
        if study.get("questions"):  # the tables again from the per-question records, today's metrics
            write_study(run_dir, calibrag.retable(study))
        return calibrag_report.build_calibrag_report(run_dir, study)
    return dependable_report.build_dependable_report(run_dir, study)
