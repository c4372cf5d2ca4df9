"""Fit an operating threshold for one (model, method) on the labelled records of an eval run
(what `verirag calibrate` runs; a folder of a verified, labelled answer log goes to
`verirag.answer_log.calibrate`).

The labels are the records' `faithful` (V): a target precision then means "of the answers we let
through, at least P are correct and supported". Records with an error stay in, with their score 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from verirag.errors import InputError
from verirag.evaluation_data import evaluation_refusal
from verirag.learned.threshold import ThresholdController


def fit_threshold(
    records: Sequence,
    *,
    model: str,
    method: str,
    dataset: str | None = None,
    target: ThresholdController,
    run: str = "",
) -> ThresholdController:
    """Fit `target` (fitted in place) on the records (a run's ResultRecords) of (model, method[,
    dataset]), and record what it was fitted for: fingerprints model, method, the records'
    method_digest and dataset; provenance the method's options (defaults included) and `run`. A
    target that cannot be certified gives `certified_` False and no threshold: every answer acts."""
    records = [
        r for r in records if r.model == model and r.method == method and (dataset is None or r.dataset == dataset)
    ]
    if not records:
        raise InputError(
            f"no records for model {model!r}, method {method!r}"
            + (f", dataset {dataset!r}" if dataset else "")
            + (f" in {run}" if run else "")
        )
    # the evaluation data (verirag.evaluation_data) would tune the threshold on the test set
    why = evaluation_refusal((r.dataset for r in records), (r.question for r in records))
    if why is not None:
        raise InputError(
            f"{why}: a threshold is never fitted on it (fit on a dev split of your own, or pass --dataset "
            "to pick another dataset of the run)"
        )
    scores = np.array([0.0 if r.error else r.score for r in records])
    labels = np.array([r.faithful for r in records])
    target.fit(scores, labels)
    digests = {r.method_digest for r in records}
    target.fingerprints.update(
        model=model, method=method, dataset=dataset or "*", method_digest=digests.pop() if len(digests) == 1 else ""
    )
    spec = records[0].method_spec  # resolved_options: every option, defaults included (older runs: those given)
    target.provenance.update(run=run, method_options=spec.get("resolved_options") or spec.get("options") or {})
    return target


def calibrate_run(
    run_dir: str | Path,
    *,
    model: str | None = None,
    method: str | None = None,
    dataset: str | None = None,
    precision: float | None = None,
    delta: float = 0.1,
    action_rate: float | None = None,
    save: str | Path | None = None,
) -> tuple[ThresholdController, Path | None]:
    """What `verirag calibrate` runs: fit a threshold for a target precision (with probability
    1 - delta) or a target action rate, exactly one, on an eval run's records of (model, method).
    `run_dir` may instead be the folder of a verified, labelled answer log (`verirag verify LOG
    --label-field F --out DIR`): a target precision is fitted on its labels, `method` and `model`
    are read from its records (checked when given), and the file is saved (default DIR/threshold.json).
    Returns the fitted controller and where it was saved (`save`, else None)."""
    from verirag.answer_log.calibrate import calibrate_log, read_summary
    from verirag.records import ResultStore

    if (precision is None) == (action_rate is None):
        raise InputError("give exactly one of --precision P or --action-rate R")
    if read_summary(run_dir) is not None:
        if precision is None or dataset is not None:
            raise InputError(
                f"{run_dir} is a verified answer log: its labels calibrate a target precision "
                "(--precision P [--delta D]); --action-rate and --dataset are for eval runs"
            )
        return calibrate_log(run_dir, precision=precision, delta=delta, method=method, model=model, save=save)
    if not model or not method:
        raise InputError(
            f"{run_dir} is no verified answer log (summary.json of `verirag verify --out`): an eval run needs "
            "--model and --method, as named in the run"
        )
    try:
        target = (
            ThresholdController(precision=precision, delta=delta)
            if precision is not None
            else ThresholdController(action_rate=action_rate)
        )
    except ValueError as e:
        raise InputError(str(e)) from None
    fitted = fit_threshold(
        ResultStore(run_dir).load(), model=model, method=method, dataset=dataset, target=target, run=str(run_dir)
    )
    saved = fitted.save(save, command="verirag calibrate") if save is not None else None
    return fitted, saved
