"""One summary row per (dataset, model, method), computed from the result records alone.

Per row, over the n records of that cell (records carrying an error stay in: they count in every
denominator, with the score 0 and the labels their record holds):

- AwF precision / recall / F1 and QPP precision / recall of the decisions v_i = 1[s_i >= t] at
  the configured threshold (run.json "threshold"; `verirag.metrics.awf` for the formulas).
  A fixed value is applied directly. A fitted target (target precision, action rate) is
  cross-fitted (`verirag.learned.threshold.cross_fit_target`, 5 group-aware folds): each example's
  decision uses a threshold fitted on the other folds only, so the threshold is never fitted on
  the rows it is scored on. `threshold` then reports the fit on all rows (what one would deploy;
  NaN, with a note, when the target cannot be certified on them: every answer acts); the scored
  decisions did not use it.
- best F1 (max over thresholds; a hard-label method has one decision, its F1) and PR-AUC
  (step-wise area; hard-label methods: precision x recall, as in `metrics.awf.pr_auc`).
  `pr_auc_random` is the expected PR-AUC of a score that knows nothing (a random order of the
  n answers, F of them faithful): (F / F-Answerable) x [H_n / n + (F - 1) / (n - 1) x (1 - H_n / n)],
  H_n the n-th harmonic number (the expected average precision of a random ranking, times the
  answering recall F / F-Answerable that bounds AwF recall). It tends to (F / n)(F / F-Answerable),
  the PR-AUC of a constant score, as n grows, and is above it for small n. AwF PR-AUC is bounded
  by the generator's answers, so a verifier is judged against this chance level of its own
  generator, not against 0.5.
- accuracy = mean(correct); abstention rate = mean(abstained); error rate = mean(error is set);
  seconds, calls and tokens (prompt + completion) per question = their means. Calls and tokens are
  the method's full cost (every quantity it used, shared or not, cached or not: records.py);
  `shared_tokens_per_question` is the part it found computed by an earlier method of the same
  example, and `spent_tokens_per_question` what it made the backend read and write in this run
  (its own quantities, less what the request cache answered); NaN for records without them.
- with the config's `prune` on, what the context pruner did to the passages the method read
  (each record's `details["prune"]`, shared by an example's methods): `prune_tokens_read_per_question`
  and `prune_tokens_saved_per_question`, the mean passage tokens kept and dropped per answer (the
  answering model's tokenizer), and `prune_saved_share` = sum(saved) / sum(read + saved); NaN (null
  in summary.json) in a cell without pruning, never 0, so "not pruned" is not read as "saved nothing".
- `spent_by_unit`: what the run spent per dataset x model (calls, cache hits, tokens read by the
  backend, tokens answered by the cache, seconds), summed over methods.

Every metric has a percentile bootstrap interval (`<name>_low`, `<name>_high`; run.json
"bootstrap"; one set of resamples per row, shared by its metrics). A resample draws the records'
groups, not examples (`verirag.metrics.stats.group_bootstrap_intervals`; a group is what the
dataset says belongs together: a HotpotQA question's two twins, a SQuAD2 passage's questions), so
they are not counted as independent examples; records without a group are groups of one, which
is the plain example bootstrap. The
decisions at a cross-fitted threshold are held fixed while resampling, so those intervals leave
out the threshold's own variability. A resample where a statistic is undefined (e.g. PR-AUC with
nothing answerable) is left out; if all are, the bounds are NaN. Caveats of a row (tiny n,
undefined values) are listed in its `notes` column.
"""

from __future__ import annotations

import copy
import csv
import json
import math
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from verirag.learned.threshold import ThresholdController, cross_fit_target
from verirag.metrics.awf import (
    awf_counts,
    awf_scores,
    best_f1,
    best_f1_statistic,
    f1_statistic,
    hard_pr_auc_statistic,
    pr_auc_statistic,
    random_pr_auc,
)
from verirag.metrics.stats import group_bootstrap_intervals
from verirag.records import ResultRecord

__all__ = [
    "CI_METRICS",
    "PRUNE_COLUMNS",
    "SUMMARY_FILES",
    "bootstrap_settings",
    "group_records",
    "prune_columns",
    "ranking_statistics",
    "record_arrays",
    "summarize",
    "summarize_cell",
    "threshold_rule",
    "threshold_target",
    "write_summary",
]

SUMMARY_FILES = ("summary.csv", "summary.json")
# metrics reported with a bootstrap interval, in column order
CI_METRICS = ("awf_precision", "awf_recall", "awf_f1", "best_f1", "pr_auc", "qpp_precision", "qpp_recall", "accuracy")
CV_FOLDS = 5
# what the context pruner kept and dropped (NaN without pruning), beside the cost columns
PRUNE_COLUMNS = ("prune_tokens_read_per_question", "prune_tokens_saved_per_question", "prune_saved_share")


# --------------------------------------------------------------------------- config
def threshold_target(run_config: Mapping[str, Any]) -> ThresholdController:
    """The ThresholdController of run.json "threshold" (default: the fixed value 0.5)."""
    th = dict(run_config.get("threshold") or {"value": 0.5})
    kw = {k: th[k] for k in ("value", "precision", "action_rate", "delta", "method") if k in th}
    return ThresholdController(**kw)


def threshold_rule(target: ThresholdController) -> str:
    """A short human description: "s >= 0.5", "precision >= 0.9 (delta 0.1)", "action rate <= 0.2"."""
    if target.kind == "value":
        return f"s >= {target.value:g}"
    if target.kind == "precision":
        return f"precision >= {target.precision:g} (delta {target.delta:g})"
    return f"action rate <= {target.action_rate:g}"


def bootstrap_settings(run_config: Mapping[str, Any]) -> dict[str, Any]:
    """run.json "bootstrap" with its defaults: 1000 resamples, 95% confidence, seed 0."""
    b = dict(run_config.get("bootstrap") or {})
    return {
        "n_resamples": int(b.get("n_resamples", 1000)),
        "confidence": float(b.get("confidence", 0.95)),
        "seed": int(b.get("seed", 0)),
    }


# --------------------------------------------------------------------------- records -> arrays
def group_records(records: Iterable[ResultRecord]) -> dict[tuple[str, str, str], list[ResultRecord]]:
    """{(dataset, model, method): records sorted by example_id}, keys sorted.

    Sorting makes every bootstrap reproducible whatever order the run wrote the records in."""
    out: dict[tuple[str, str, str], list[ResultRecord]] = {}
    for r in records:
        out.setdefault((r.dataset, r.model, r.method), []).append(r)
    return {k: sorted(out[k], key=lambda r: r.example_id) for k in sorted(out)}


def prune_columns(recs: list[ResultRecord]) -> tuple[dict[str, float], list[str]]:
    """The pruning columns of a cell (module docstring) and a note when only some of its records
    were pruned (the means are then over those only)."""
    reports = [(r.details or {}).get("prune") for r in recs]
    reports = [p for p in reports if p]
    if not reports:
        return dict.fromkeys(PRUNE_COLUMNS, math.nan), []
    read = float(sum(p["tokens_read"] for p in reports))
    saved = float(sum(p["tokens_saved"] for p in reports))
    columns = {
        "prune_tokens_read_per_question": read / len(reports),
        "prune_tokens_saved_per_question": saved / len(reports),
        "prune_saved_share": saved / (read + saved) if read + saved else math.nan,
    }
    missing = len(recs) - len(reports)
    notes = [f"pruning: {missing}/{len(recs)} records were not pruned, left out of its columns"] if missing else []
    return columns, notes


def record_arrays(recs: list[ResultRecord]) -> dict[str, np.ndarray]:
    """Columns of the records as numpy arrays. `group` falls back to example_id when empty, so
    examples without a group are each their own group; `answerable` is A | V (a faithful answer
    makes its question answerable, as `metrics.awf` assumes with strict=False)."""

    def col(f, dtype):
        return np.array([f(r) for r in recs], dtype=dtype)

    faithful = col(lambda r: int(r.faithful), np.int64)
    return {
        "score": col(lambda r: r.score if r.score is not None and math.isfinite(r.score) else 0.0, np.float64),
        "faithful": faithful,
        "answerable": col(lambda r: int(r.answerable), np.int64) | faithful,
        "correct": col(lambda r: int(r.correct), np.int64),
        "abstained": col(lambda r: int(r.abstained), np.int64),
        "error": col(lambda r: r.error is not None and r.error != "", bool),
        "seconds": col(lambda r: r.seconds or 0.0, np.float64),
        "calls": col(lambda r: r.calls or 0, np.float64),
        "tokens": col(lambda r: (r.prompt_tokens or 0) + (r.completion_tokens or 0), np.float64),
        "shared_tokens": col(_shared_tokens, np.float64),
        "spent_tokens": col(lambda r: _paid_tokens(r.spent) if r.spent else math.nan, np.float64),
        "group": np.array([r.group or r.example_id for r in recs], dtype=object),
        "example_id": np.array([r.example_id for r in recs], dtype=object),
    }


def _paid_tokens(u: Mapping[str, Any]) -> float:
    """Tokens the backend really read and wrote: those of requests the cache did not answer."""
    return float(
        u.get("prompt_tokens", 0)
        + u.get("completion_tokens", 0)
        - u.get("cached_prompt_tokens", 0)
        - u.get("cached_completion_tokens", 0)
    )


def _shared_tokens(r: ResultRecord) -> float:
    shared = (r.details or {}).get("shared")
    return float(shared["prompt_tokens"] + shared["completion_tokens"]) if shared else math.nan


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if np.isfinite(x).any() else math.nan


def spent_by_unit(records: Iterable[ResultRecord]) -> list[dict[str, Any]]:
    """What the run spent per (dataset, model), summed over methods and examples (module docstring)."""
    units: dict[tuple[str, str], dict[str, Any]] = {}
    for r in records:
        u = units.setdefault(
            (r.dataset, r.model),
            {
                "dataset": r.dataset,
                "model": r.model,
                "records": 0,
                "calls": 0,
                "cache_hits": 0,
                "tokens_read": 0.0,
                "tokens_from_cache": 0.0,
                "seconds": 0.0,
                "records_without_spent": 0,
            },
        )
        u["records"] += 1
        u["seconds"] += r.seconds or 0.0
        if not r.spent:
            u["records_without_spent"] += 1
            continue
        u["calls"] += r.spent.get("calls", 0)
        u["cache_hits"] += r.spent.get("cache_hits", 0)
        u["tokens_read"] += _paid_tokens(r.spent)
        u["tokens_from_cache"] += r.spent.get("cached_prompt_tokens", 0) + r.spent.get("cached_completion_tokens", 0)
    return [units[k] for k in sorted(units)]


# --------------------------------------------------------------------------- bootstrap
def ranking_statistics(a: dict[str, np.ndarray], hard: bool) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """{"best_f1", "pr_auc", "accuracy"}: functions of resample indices (B, m) -> B values. A hard
    method's best F1 and PR-AUC are the F1 and precision x recall of its label, a soft method's
    come from its curve. Shared by the summary rows and the paired comparisons."""
    s, V, A, C = a["score"], a["faithful"], a["answerable"], a["correct"]
    if hard:  # hard labels are 0 / 1
        x, best, area = (s >= 0.5).astype(np.int64), f1_statistic, hard_pr_auc_statistic
    else:
        x, best, area = s, best_f1_statistic, pr_auc_statistic
    return {
        "best_f1": lambda ix: best(x, V, A, indices=ix),
        "pr_auc": lambda ix: area(x, V, A, indices=ix),
        "accuracy": lambda ix: C[ix].mean(axis=1),
    }


def _cell_statistic(a: dict[str, np.ndarray], v: np.ndarray, hard: bool):
    """indices (B, m) -> {metric: B values} for every CI_METRICS entry (B = 1 with the sample's
    own indices gives the estimates; a group resample draws m examples, n when groups are of one
    size). v: decisions at the threshold."""
    V, A = a["faithful"], a["answerable"]
    ranking = ranking_statistics(a, hard)

    def statistic(ix: np.ndarray) -> dict[str, np.ndarray]:
        awf, qpp = awf_counts(v, V, A, indices=ix), awf_counts(v, A, A, indices=ix)
        return {
            "awf_precision": awf.precision(),
            "awf_recall": awf.recall(),
            "awf_f1": awf.f1(),
            "qpp_precision": qpp.precision(),
            "qpp_recall": qpp.recall(),
            **{name: f(ix) for name, f in ranking.items()},
        }

    return statistic


# --------------------------------------------------------------------------- one row
def is_hard(recs: list[ResultRecord]) -> bool:
    """Every record of the cell is a hard-label method's (0 / 1 scores): scored by its label, not by a curve."""
    return bool(recs) and all(r.hard for r in recs)


def _decisions(target: ThresholdController, a: dict[str, np.ndarray], seed: int) -> tuple[np.ndarray, float, list[str]]:
    """(v, threshold reported, notes): fixed value directly, fitted targets cross-fitted."""
    s, V = a["score"], a["faithful"]
    if target.kind == "value":
        return s >= target.value, float(target.value), []
    try:
        v = cross_fit_target(target, s, V, n_folds=CV_FOLDS, groups=a["group"], seed=seed)
    except ValueError as e:  # fewer than 2 groups: nothing to cross-fit on
        return np.zeros(len(s), dtype=bool), float("nan"), [f"no cross-fitted threshold ({e})"]
    full = copy.deepcopy(target).fit(s, V)
    if full.threshold_ is None:  # not certified on all rows: no threshold, every answer acts
        return v, float("nan"), [f"{threshold_rule(target)} not certified on the {len(s)} rows: every answer acts"]
    return v, float(full.threshold_), []


def summarize_cell(recs: list[ResultRecord], target: ThresholdController, boot: Mapping[str, Any]) -> dict[str, Any]:
    """The summary row of one (dataset, model, method) cell; see the module docstring."""
    r0 = recs[0]
    a = record_arrays(recs)
    n, hard = len(recs), is_hard(recs)
    s, V, A = a["score"], a["faithful"], a["answerable"]
    v, thr, notes = _decisions(target, a, boot["seed"])
    row: dict[str, Any] = {
        "dataset": r0.dataset,
        "model": r0.model,
        "method": r0.method,
        "hard": hard,
        "n": n,
        "n_errors": int(a["error"].sum()),
        "n_answerable": int(A.sum()),
        "n_faithful": int(V.sum()),
        "threshold_rule": threshold_rule(target),
        "threshold": thr,
        "threshold_cross_fitted": target.kind != "value",
        "answer_rate": float(v.mean()),
    }
    res = group_bootstrap_intervals(_cell_statistic(a, v, hard), list(a["group"]), **boot)
    for name in CI_METRICS:
        r = res[name]
        row[name], row[f"{name}_low"], row[f"{name}_high"] = r.estimate, r.low, r.high
        if r.n_invalid:
            notes.append(f"{name}: {r.n_invalid}/{boot['n_resamples']} resamples undefined")
    # the operating point of the best F1 (for Table 2's averages)
    bp = awf_scores((s >= 0.5).astype(np.int64), V, A, strict=False) if hard else best_f1(s, V, A, strict=False)
    row["best_f1_precision"], row["best_f1_recall"] = bp.precision, bp.recall
    row["best_f1_threshold"] = 0.5 if hard else bp.threshold
    row["pr_auc_random"] = random_pr_auc(int(V.sum()), int(A.sum()), n)
    if A.sum() == 0:
        notes.append("nothing answerable: recall is 1 by convention, PR-AUC undefined")
    if n < 10:
        notes.append(f"n={n}: bootstrap intervals are rough")
    row.update(
        {
            "abstention_rate": float(a["abstained"].mean()),
            "error_rate": float(a["error"].mean()),
            "seconds_per_question": float(a["seconds"].mean()),
            "calls_per_question": float(a["calls"].mean()),
            "tokens_per_question": float(a["tokens"].mean()),
            "shared_tokens_per_question": _nanmean(a["shared_tokens"]),
            "spent_tokens_per_question": _nanmean(a["spent_tokens"]),
        }
    )
    pruned, prune_notes = prune_columns(recs)
    row.update(pruned)
    row["notes"] = "; ".join(notes + prune_notes)
    return row


def summarize(records: Iterable[ResultRecord], run_config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per dataset x model x method (sorted), see the module docstring for each column."""
    target = threshold_target(run_config)
    boot = bootstrap_settings(run_config)
    return [summarize_cell(recs, target, boot) for recs in group_records(records).values()]


# --------------------------------------------------------------------------- files
def _json_value(x: Any) -> Any:
    # JSON has no NaN / inf: NaN -> null, inf -> "inf"
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return None
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def write_summary(rows: list[dict[str, Any]], out_dir) -> tuple[Path, Path]:
    """Write summary.csv (NaN as "nan") and summary.json (NaN as null); returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / SUMMARY_FILES[0], out / SUMMARY_FILES[1]
    fields = list(rows[0]) if rows else ["dataset", "model", "method", "n"]
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k) for k in fields})
    json_path.write_text(
        json.dumps([{k: _json_value(v) for k, v in r.items()} for r in rows], indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    return csv_path, json_path
