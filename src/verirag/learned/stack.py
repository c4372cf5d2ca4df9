"""The stacked verifier: a learned combination of what the pipeline knows about its own answer
(issue 27, item 5): the predictors' scores (the trained verifier, self_check's P(yes), ...) and
the answer's signals (token log-probabilities, K-Precision, retrieval scores).

    stack = StackedVerifier(["verifier", "self_check", "logprob_min", "k_precision"]).fit(X, y)
    p = stack.predict_proba(X)                   # P(faithful) per row
    p = stack.score({"verifier": 0.8, "self_check": 0.6, "logprob_min": -2.1, "k_precision": 0.9})
    stack.save("stack.json", cv=report)          # one JSON file, no pickle
    stack = StackedVerifier.load("stack.json", expect={"model": fp})

Predictor features are the predictors' own scores, before the answer rules (an eval record's
`raw_score`): what the `stacked` predictor computes at answer time, the rules applying after it.

Model: scikit-learn's LogisticRegression (L2, `C`) on standardised features z = (x - mean_) /
scale_ (scale_ the population standard deviation, 1 where a feature is constant), so the
coefficients compare across features and one `C` suits them all. P(faithful) = sigmoid(z . coef_
+ intercept_), rebuilt with numpy from the saved JSON.

Missing values (NaN): refused (InputError naming the feature) unless `impute`, in which case a
missing value takes the training mean (z = 0: the feature says nothing about that answer), and
`imputed_` counts, per feature, the training values that were filled.

`sources` says how each feature is computed at answer time (predictor features: the predictor's
name, options and identity digest, which the `stacked` predictor checks when it rebuilds them;
signals: nothing, `verirag.awf.signals` computes them). Fingerprints: `model` (the generator's
weights: its logprobs and self-check mean something else on another model) is refused on a
mismatch; `data` (the records it was fitted on) is only recorded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.base import LearnedPart
from verirag.metrics.calibration import sigmoid

# The stack shipped in the package (made by `make stack`: fitted on the distillation's answers of the
# default model, qwen2.5-1.5b), used when `vanilla+stacked` names none; another model is refused by
# its fingerprint, since its log-probabilities mean something else.
SHIPPED_STACK = Path(__file__).resolve().parent / "shipped" / "stack.json"


def shipped_stack_path() -> Path:
    """The stack file `vanilla+stacked` reads when given none (`stack=FILE` names another)."""
    return StackedVerifier.shipped_file(SHIPPED_STACK, "stack")


class StackedVerifier(LearnedPart):
    """Fitted attributes: coef_ (per standardised feature), intercept_, mean_, scale_, imputed_
    ({feature: values filled}), n_train_, positive_rate_."""

    format_name = "stacked_verifier"
    title = "stacked verifier"
    fitted_attribute = "coef_"
    fit_command = "verirag train stack RUN --out FILE"
    refuse_on = ("model",)
    arrays = ("coef_", "mean_", "scale_")

    def __init__(
        self,
        features: Sequence[str],
        *,
        C: float = 1.0,
        impute: bool = False,
        sources: Mapping[str, Any] | None = None,
        fingerprints: Mapping[str, Any] | None = None,
    ):
        super().__init__(fingerprints)
        features = list(features)
        if not features or not all(isinstance(f, str) and f for f in features):
            raise InputError("a stacked verifier needs at least one feature name")
        if len(set(features)) != len(features):
            raise InputError(f"a feature is named twice in {features}")
        if not C > 0:
            raise InputError(f"C must be positive, got {C}")
        self.features, self.C, self.impute = features, float(C), bool(impute)
        self.sources: dict[str, Any] = dict(sources or {})

    # ---- fitting ---------------------------------------------------------------------------------
    def matrix(self, X, impute: bool | None = None) -> np.ndarray:
        """X as a float matrix of this stack's width; NaN (missing) refused unless `impute` (None:
        the stack's own setting; True: at the training mean, as a given answer's missing
        log-probabilities are by `stacked(impute=true)`)."""
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != len(self.features):
            raise InputError(
                f"expected rows of {len(self.features)} features ({', '.join(self.features)}), got shape {X.shape}"
            )
        if np.isinf(X).any():
            raise InputError(f"infinite values in feature(s) {self._named(np.isinf(X))}")
        if not (self.impute if impute is None else impute) and np.isnan(X).any():
            raise InputError(
                f"missing values in feature(s) {self._named(np.isnan(X))} (the stack was made "
                "without imputation: compute them, or refit with imputation)"
            )
        return X

    def _named(self, mask: np.ndarray) -> str:
        return ", ".join(f for f, m in zip(self.features, mask.any(axis=0)) if m)

    def fit(self, X, y) -> StackedVerifier:
        from sklearn.linear_model import LogisticRegression

        X = self.matrix(X)
        y = np.asarray(y)
        if y.shape != (X.shape[0],) or not np.isin(y, (0, 1)).all():
            raise InputError(f"labels must be one 0 / 1 per row ({X.shape[0]} rows), got shape {y.shape}")
        if len(set(y.tolist())) < 2:
            raise InputError(
                f"the labels are all {int(y[0]) if len(y) else 'missing'}: a stack needs faithful "
                "and unfaithful answers"
            )
        missing = np.isnan(X)
        if missing.all(axis=0).any():
            raise InputError(f"feature(s) {self._named(missing.all(axis=0)[None])} have no value at all")
        self.mean_ = np.nanmean(X, axis=0)
        scale = np.nanstd(X, axis=0)
        self.scale_ = np.where(scale > 0, scale, 1.0)
        model = LogisticRegression(C=self.C, max_iter=1000)
        model.fit(self.standardise(X), y.astype(int))
        self.coef_ = model.coef_[0].astype(np.float64)
        self.intercept_ = float(model.intercept_[0])
        self.imputed_ = {f: int(n) for f, n in zip(self.features, missing.sum(axis=0)) if n}
        self.n_train_ = len(y)
        self.positive_rate_ = float(y.mean())
        return self

    def standardise(self, X: np.ndarray) -> np.ndarray:
        """(X - mean_) / scale_, a missing value at the mean (0)."""
        return np.nan_to_num((X - self.mean_) / self.scale_, nan=0.0)

    # ---- predicting ------------------------------------------------------------------------------
    def predict_proba(self, X, impute: bool | None = None) -> np.ndarray:
        """P(faithful) of each row (`impute`: as `matrix`)."""
        self.check_fitted()
        return sigmoid(self.standardise(self.matrix(X, impute)) @ self.coef_ + self.intercept_)

    def row(self, values: Mapping[str, float]) -> np.ndarray:
        """One answer's feature values as a row (NaN where a feature is absent)."""
        return np.asarray([[_number(values.get(f)) for f in self.features]], dtype=np.float64)

    def score(self, values: Mapping[str, float], impute: bool | None = None) -> float:
        """P(faithful) of one answer from its {feature: value}; a missing feature is an InputError
        naming it (or at its training mean, for a stack fitted with `impute` or with `impute=True`)."""
        self.check_fitted()
        impute = self.impute if impute is None else impute
        missing = [f for f in self.features if math.isnan(_number(values.get(f)))]
        if missing and not impute:
            raise InputError(f"the stacked verifier needs {', '.join(missing)}, which this answer lacks")
        return float(self.predict_proba(self.row(values), impute)[0])

    def scored_as(self, feature: str) -> set[str]:
        """The predictor digests whose scores are this feature's: the one its source names, and the
        digest it had before an option was pinned at the value that scores as before
        (`verirag_lab.train.stack_repoint.pin_new_options`, recorded in the provenance)."""
        digest = (self.sources.get(feature) or {}).get("digest")
        same = {digest} if digest else set()
        for pin in (self.provenance or {}).get("pinned", []):
            if pin.get("digest") in same and pin.get("digest_from"):
                same.add(pin["digest_from"])
        return same

    def weights(self) -> dict[str, float]:
        """{feature: coefficient of its standardised value}: what moves P(faithful) per standard deviation."""
        self.check_fitted()
        return dict(zip(self.features, (float(c) for c in self.coef_)))

    # ---- saved form -------------------------------------------------------------------------------
    def restore(self, state: dict[str, Any], path: Path) -> None:
        super().restore(state, path)
        width = len(self.features)
        for name in ("coef_", "mean_", "scale_"):
            a = getattr(self, name)
            if a.shape != (width,) or not np.all(np.isfinite(a)):
                raise ValueError(f"{name} has {a.size} values, expected {width} finite values")
        if not np.all(self.scale_ > 0):
            raise ValueError("scale_ must be positive")


def _number(v: Any) -> float:
    if v is None or isinstance(v, bool):
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan
