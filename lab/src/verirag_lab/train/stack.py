"""What `verirag train stack RUN` runs: fit the stacked verifier
(`verirag.learned.stack`) on an eval run's answers and measure it beside each signal alone.

    table = feature_table(ResultStore(run).load())            # verirag_lab.train.stack_features
    result = train_stack(table, folds=5, seed=0)
    result.stack.save("stack.json", **result.provenance)

Measured by cross-validation split by question group (`verirag.learned.threshold.kfold_indices`:
a group's answers are wholly in one fold): every answer gets out-of-fold probabilities from a
stack fitted without its question. On those, the AUROC (against the label) and the AwF PR-AUC
(`verirag.metrics.awf`, the label as V, the records' `answerable` as A) of

- `stacked`: the logistic regression, the model that is saved;
- `gradient_boosting`: scikit-learn's HistGradientBoostingClassifier on the raw features, the
  non-linear alternative, measured beside it. It is not saved (scikit-learn gives it no form but
  pickle): when it ranks better with the paired interval above 0, the report says so;
- each feature alone (its raw value as the score; a missing value, with imputation, at the mean).

Intervals: 95% percentile bootstrap over question groups (`group_bootstrap_intervals`), every
column scored on the same resamples, so `stacked - X` is paired. The saved stack is then fitted on
every answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.stack import StackedVerifier
from verirag.learned.threshold import kfold_indices
from verirag.metrics.awf import pr_auc_statistic, random_pr_auc
from verirag.metrics.calibration import auroc
from verirag.metrics.stats import group_bootstrap_intervals
from verirag_lab.train.stack_features import StackTable

STACKED, BOOSTED = "stacked", "gradient_boosting"
METRICS = ("auroc", "pr_auc")


@dataclass
class StackResult:
    stack: StackedVerifier
    report: dict[str, Any]
    out_of_fold: dict[str, np.ndarray] = field(default_factory=dict)  # model -> P(faithful) per answer

    @property
    def provenance(self) -> dict[str, Any]:
        return {"cv": self.report}


def out_of_fold(
    table: StackTable, *, folds: int = 5, seed: int = 0, C: float = 1.0, impute: bool = False
) -> tuple[dict[str, np.ndarray], list[tuple[np.ndarray, np.ndarray]]]:
    """({"stacked": p, "gradient_boosting": p}, the folds): every answer's probability from models
    fitted on the other folds' question groups."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    n = len(table.y)
    try:
        splits = kfold_indices(n, folds, groups=table.groups, seed=seed)
    except ValueError as e:
        raise InputError(f"cannot cross-validate the stack: {e}") from None
    p = {STACKED: np.full(n, math.nan), BOOSTED: np.full(n, math.nan)}
    for k, (train, test) in enumerate(splits):
        if len(set(table.y[train].tolist())) < 2:
            raise InputError(
                f"fold {k + 1}'s training answers are all of one label: too few answers of the "
                "other kind for cross-validation (use fewer --folds, or a larger run)"
            )
        lr = StackedVerifier(table.features, C=C, impute=impute).fit(table.X[train], table.y[train])
        p[STACKED][test] = lr.predict_proba(table.X[test])
        with threadpool_limits(1):  # a stack's table is small: one thread is faster, and the machine is shared
            gb = HistGradientBoostingClassifier(random_state=seed).fit(table.X[train], table.y[train])
            p[BOOSTED][test] = gb.predict_proba(table.X[test])[:, 1]
    return p, splits


def compare(
    table: StackTable, predictions: dict[str, np.ndarray], *, n_resamples: int = 2000, seed: int = 0
) -> dict[str, dict[str, Any]]:
    """{column: {metric: value, metric_low, metric_high, gain_<metric> (stacked - column, paired),
    gain_<metric>_low, ...}} for the stacked predictions, the alternatives and each feature alone."""
    columns: dict[str, np.ndarray] = dict(predictions)
    for j, f in enumerate(table.features):
        x = table.X[:, j]
        columns[f] = np.where(np.isnan(x), np.nanmean(x), x)
    y, A = table.y, table.answerable

    def statistic(ix: np.ndarray) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for name, s in columns.items():
            out[f"{name}.auroc"] = np.atleast_1d(auroc(s[ix], y[ix]))
            out[f"{name}.pr_auc"] = np.atleast_1d(pr_auc_statistic(s, y, A, indices=ix))
        for name in columns:
            if name != STACKED:
                for m in METRICS:
                    out[f"{name}.gain_{m}"] = out[f"{STACKED}.{m}"] - out[f"{name}.{m}"]
        return out

    res = group_bootstrap_intervals(statistic, table.groups, n_resamples=n_resamples, seed=seed)
    rows: dict[str, dict[str, Any]] = {name: {} for name in columns}
    for key, r in res.items():
        name, metric = key.rsplit(".", 1)
        rows[name].update({metric: r.estimate, f"{metric}_low": r.low, f"{metric}_high": r.high})
    return rows


def train_stack(
    table: StackTable, *, folds: int = 5, seed: int = 0, C: float = 1.0, impute: bool = False, n_resamples: int = 2000
) -> StackResult:
    """Cross-validate (module docstring), then fit the stack on every answer."""
    predictions, splits = out_of_fold(table, folds=folds, seed=seed, C=C, impute=impute)
    rows = compare(table, predictions, n_resamples=n_resamples, seed=seed)
    boosted = rows[BOOSTED]
    boosted_better = boosted.get("gain_auroc_high", math.nan) < 0  # stacked - boosted, entirely below 0
    stack = StackedVerifier(
        table.features,
        C=C,
        impute=impute,
        sources=table.sources,
        fingerprints={"model": table.model_fingerprint, "data": table.data_fingerprint},
    )
    stack.fit(table.X, table.y)
    report = {
        "label": table.label,
        "answers": len(table.y),
        "groups": len(set(table.groups)),
        "positives": int(table.y.sum()),
        "answerable": int(table.answerable.sum()),
        "folds": len(splits),
        "seed": seed,
        "C": C,
        "features": list(table.features),
        "weights": stack.weights(),
        "imputed": dict(table.missing),
        "predictor_errors": dict(table.errors),
        "absent": dict(table.absent),
        "ignored_methods": dict(table.ignored),
        "model": table.model,
        "pr_auc_random": random_pr_auc(
            int(table.y.sum()), int(((table.answerable > 0) | (table.y > 0)).sum()), len(table.y)
        ),
        "bootstrap": {"resamples": n_resamples, "over": "question groups", "confidence": 0.95},
        "rows": rows,
        "saved_model": "logistic regression",
        "gradient_boosting_better": bool(boosted_better),
    }
    return StackResult(stack, report, predictions)


def train_stack_from_run(
    run_dir: str | Path,
    out_file: str | Path,
    *,
    methods: Sequence[str] = (),
    features: Sequence[str] = (),
    impute: bool = False,
    folds: int = 5,
    label: str = "faithful",
    model: str | None = None,
    seed: int = 0,
    resamples: int = 2000,
    C: float = 1.0,
) -> StackResult:
    """What `verirag train stack` runs: the feature table of an eval run's records (`methods`,
    `features`: all the run has when empty), cross-validated and fitted (`train_stack`), the stack
    saved to `out_file` with its report as provenance."""
    from verirag.records import ResultStore
    from verirag_lab.train.guard import refuse_evaluation_run
    from verirag_lab.train.stack_features import feature_table

    store = ResultStore(run_dir)
    if not store.path.exists():
        raise InputError(
            f"{run_dir} holds no eval records ({store.path.name}): run `verirag eval CONFIG --out {run_dir}` first"
        )
    records = store.load()
    refuse_evaluation_run(run_dir, (r.to_dict() for r in records), part="a stack")
    methods = [m.strip() for m in methods if m.strip()]
    table = feature_table(
        records, methods=methods or None, features=list(features) or None, label=label, impute=impute, model=model
    )
    result = train_stack(table, folds=folds, seed=seed, C=C, impute=impute, n_resamples=resamples)
    result.stack.save(out_file, command="verirag train stack", run=str(run_dir), methods=methods, **result.provenance)
    return result
