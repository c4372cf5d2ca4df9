"""A threshold fitted on one's own labels: the verified records of a log read with a label field
(`verirag verify LOG --label-field F --fit-precision P`, or later `verirag calibrate OUT`).

The records of the run that OUT/summary.json describes (its `keys`) give the scores (a failed
verification scores 0, as in the summary) and the labels (1 = supported: the log's label, kept in
each record). `ThresholdController(precision=P, delta=D)` fits on them by Learn then Test: the
smallest threshold whose precision is at least P with probability >= 1 - D, or none (not
certified: every answer is then judged not supported, and every result says so).

The threshold file names what the scores came from: fingerprints `method` (the GEN+PRED method
that verified), `model` (only when an LLM judged: the trained verifier calls none) and `dataset`
(the log's name); provenance the log, the label field, the counts, the judge and the fit's
options. Using the file with another method or model warns (`Pipeline.threshold_warnings`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verirag.answer_log.run import RESULTS_FILE, results_file
from verirag.answer_log.summary import SUMMARY_FILE
from verirag.errors import InputError
from verirag.evaluation_data import evaluation_refusal
from verirag.learned.threshold import ThresholdController

THRESHOLD_FILE = "threshold.json"


def read_summary(out_dir: str | Path) -> dict[str, Any] | None:
    """OUT/summary.json of a verified log, or None when OUT holds none (e.g. an eval run)."""
    path = Path(out_dir) / SUMMARY_FILE
    if not path.is_file() or not (Path(out_dir) / RESULTS_FILE).is_file():
        return None
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"{path} cannot be read ({e}): verify the log into {out_dir} again") from None
    return summary if isinstance(summary, dict) and "log" in summary and "fields" in summary else None


def _one(values: set, what: str) -> Any:
    if len(values) > 1:
        raise InputError(
            f"the records hold {what}s {', '.join(sorted(map(str, values)))}: a threshold is fitted on "
            "the scores of one; verify the log into a folder of its own"
        )
    return next(iter(values), None)


def fit_log_threshold(
    records: Sequence[dict[str, Any]],
    *,
    precision: float,
    delta: float = 0.1,
    log: str = "",
    label_field: str = "",
) -> ThresholdController:
    """A target-precision threshold fitted on the labelled answers of `records` (results.jsonl
    records), naming the method and (when an LLM judged) the model that scored them."""
    answered = [r for r in records if r["status"] != "malformed"]
    labelled = [r for r in answered if r.get("label") is not None]
    if not labelled:
        raise InputError(
            "no verified answer has a label: verify the log with --label-field FIELD (the records keep the label)"
        )
    # the evaluation data (verirag.evaluation_data) would tune the threshold on the test set
    why = evaluation_refusal(questions=(str(r.get("question") or "") for r in labelled))
    if why is not None:
        raise InputError(f"{log or 'the log'}: {why}: a threshold is never fitted on it")
    bad = sorted({repr(r["label"]) for r in labelled if r["label"] not in (0, 1)})
    if bad:
        raise InputError(f"the records' labels must be 1 or 0, found {', '.join(bad)}")
    method = _one({r["method"] for r in answered if r.get("method")}, "method")
    if method is None:
        raise InputError("no answer was verified (every one failed): there are no scores to fit a threshold on")
    model = _one({r["model"] for r in answered if r.get("model")}, "model")
    try:
        target = ThresholdController(precision=precision, delta=delta)
    except ValueError as e:
        raise InputError(str(e)) from None
    scores = [0.0 if r["score"] is None else float(r["score"]) for r in labelled]
    target.fit(scores, [int(r["label"]) for r in labelled])
    target.fingerprints.update(method=method, dataset=Path(log).name if log else "*")
    if model:
        target.fingerprints["model"] = model
    target.provenance.update(
        source="answer log",
        log=log,
        label_field=label_field,
        labelled=len(labelled),
        positives=sum(int(r["label"]) for r in labelled),
        judge=_one({r["judge"] for r in answered if r.get("judge")}, "judge") or "",
        fit={"precision": precision, "delta": delta, "ltt_method": target.method},
    )
    return target


def calibrate_log(
    out_dir: str | Path,
    *,
    precision: float,
    delta: float = 0.1,
    method: str | None = None,
    model: str | None = None,
    save: str | Path | None = None,
) -> tuple[ThresholdController, Path]:
    """Fit on the verified, labelled log in `out_dir` and save the threshold file (`save`, default
    OUT/threshold.json). `method` / `model`, when given, must be what verified the records."""
    out_dir = Path(out_dir)
    summary = read_summary(out_dir)
    if summary is None:
        raise InputError(
            f"{out_dir} holds no verified log (results.jsonl and summary.json): "
            "verify one first with `verirag verify LOG --label-field FIELD --out DIR`"
        )
    labels = summary.get("labels") or {}
    if labels.get("source") != "label":
        raise InputError(
            f"the log in {out_dir} was verified without a label field: run `verirag verify "
            f"{summary['log']} --out {out_dir} --label-field FIELD` (nothing is verified again)"
        )
    keys = summary.get("keys")
    if keys is None:
        raise InputError(
            f"{out_dir / SUMMARY_FILE} was written by an older verirag and lists no records: run the same "
            "`verirag verify` again (nothing is verified again)"
        )
    done = results_file(out_dir).load()
    missing = [k for k in keys if k not in done]
    if missing:
        raise InputError(
            f"{len(missing)} records of {out_dir / SUMMARY_FILE} are not in {RESULTS_FILE} (first {missing[0]!r}): "
            "run the same `verirag verify` again"
        )
    records = [done[k] for k in keys]
    fitted = fit_log_threshold(
        records, precision=precision, delta=delta, log=summary["log"], label_field=labels.get("field") or ""
    )
    used = fitted.fingerprints
    if method and method != used["method"]:
        raise InputError(
            f"the answers in {out_dir} were verified with {used['method']!r}, not {method!r}: a threshold "
            f"holds for the scores of one method; verify with --method {method} into another folder first"
        )
    if model and model != used.get("model"):
        raise InputError(
            f"no LLM judged the answers in {out_dir} (method {used['method']!r} calls none): --model does not apply"
            if "model" not in used
            else f"the answers in {out_dir} were judged by {used['model']!r}, not {model!r}"
        )
    path = Path(save) if save is not None else out_dir / THRESHOLD_FILE
    return fitted, fitted.save(path, command="verirag calibrate")
