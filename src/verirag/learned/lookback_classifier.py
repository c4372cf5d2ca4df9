"""The factuality classifier over lookback ratios (Geissler et al., section 3.3; Lookback Lens).

    clf = LookbackClassifier(variant="cw", k=10).fit(ratios_list, labels)   # labels: 1 = factual
    p = clf.score(ratios)                  # P(factual) of one answer's LookbackRatios
    clf.fingerprints["model"] = attention_llm.fingerprint
    clf.save("clf.json", attention_model="hf:qwen2.5-0.5b")
    clf = LookbackClassifier.load("clf.json", expect={"model": attention_llm.fingerprint})

Feature vector (paper, "Factuality classifier"):
- cw (chunk-wise): the time-averaged ratios LR^{l,h}(c_i) of the passages in the prompt, min-max
  scaled to [0, 1] over this sample's values, then zero-padded to `k` passages: layout L x H x k
  (layer-major). Passages beyond `k` are dropped (they come last: lowest retrieval rank).
- fc (full context, the original Lookback Lens): LR^{l,h}(context), min-max scaled, L x H.
A sample whose values are all equal scales to zeros.

Classifier: scikit-learn LogisticRegression(class_weight="balanced", max_iter=1000), the paper's
settings. Saved as one JSON file (`verirag.learned.base`: coefficients, intercept, layout, the
attention model's fingerprint, the training summary in the provenance); loading rebuilds the same
probabilities with numpy, no pickle. Another attention model (other weights) is refused: its heads
mean something else.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.base import LearnedPart
from verirag.llm.lookback import LookbackRatios
from verirag.metrics.calibration import sigmoid

VARIANTS = ("cw", "fc")


def feature_vector(ratios: LookbackRatios, variant: str, k: int) -> np.ndarray:
    """One sample's scaled, padded feature vector (see the module docstring)."""
    if variant not in VARIANTS:
        raise InputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
    if variant == "fc":
        values = np.asarray(ratios.fc, dtype=np.float64)
        return _minmax(values).ravel()
    cw = np.asarray(ratios.cw, dtype=np.float64)
    if cw.ndim != 3:
        raise InputError(f"chunk-wise ratios must be [layers][heads][passages], got shape {cw.shape}")
    cw = cw[:, :, :k]
    out = np.zeros(cw.shape[:2] + (k,))
    if cw.shape[2]:
        out[:, :, : cw.shape[2]] = _minmax(cw)
    return out.ravel()


def _minmax(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    if not math.isfinite(lo) or not math.isfinite(hi):
        raise InputError("lookback ratios contain NaN or infinity")
    return (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)


class LookbackClassifier(LearnedPart):
    """Logistic regression from lookback-ratio features to P(factual).

    Fitted attributes: coef_ (n_features,), intercept_, layers_, heads_, n_train_, positive_rate_.
    `fingerprints["model"]`: the attention model's weights; `provenance` carries what `save` was
    told (attention model, training data, metrics).
    """

    format_name = "lookback_classifier"
    title = "lookback classifier"
    fitted_attribute = "coef_"
    fit_command = "verirag train lookback RUN_DIR --out FILE"
    refuse_on = ("model",)
    arrays = ("coef_",)

    def __init__(
        self,
        variant: str = "cw",
        k: int = 10,
        *,
        max_iter: int = 1000,
        C: float = 1.0,
        fingerprints: dict[str, Any] | None = None,
    ):
        super().__init__(fingerprints)
        if variant not in VARIANTS:
            raise InputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        self.variant, self.k, self.max_iter, self.C = variant, int(k), int(max_iter), float(C)

    def features(self, ratios: Sequence[LookbackRatios]) -> np.ndarray:
        return np.stack([feature_vector(r, self.variant, self.k) for r in ratios])

    def fit(self, ratios: Sequence[LookbackRatios], labels: Sequence[int]) -> LookbackClassifier:
        from sklearn.linear_model import LogisticRegression

        if len(ratios) != len(labels):
            raise InputError(f"{len(ratios)} samples but {len(labels)} labels")
        y = np.asarray([int(bool(v)) for v in labels])
        if len(set(y.tolist())) < 2:
            raise InputError(
                f"the training labels are all {y[0] if len(y) else 'missing'}: a classifier "
                "needs factual and non-factual answers"
            )
        shapes = {(r.layers, r.heads) for r in ratios}
        if len(shapes) != 1:
            raise InputError(f"the samples come from models of different shapes: {sorted(shapes)}")
        X = self.features(ratios)
        model = LogisticRegression(class_weight="balanced", max_iter=self.max_iter, C=self.C)
        model.fit(X, y)
        self.coef_ = model.coef_[0].astype(np.float64)
        self.intercept_ = float(model.intercept_[0])
        ((self.layers_, self.heads_),) = shapes
        self.n_train_ = len(y)
        self.positive_rate_ = float(y.mean())
        return self

    def predict_proba(self, ratios: Sequence[LookbackRatios]) -> np.ndarray:
        """P(factual) of each sample."""
        self.check_fitted()
        for r in ratios:
            if (r.layers, r.heads) != (self.layers_, self.heads_):
                raise InputError(
                    f"lookback ratios of a model with {r.layers} layers x {r.heads} heads, but the "
                    f"classifier was trained on {self.layers_} x {self.heads_}: use the "
                    "attention model it was trained with"
                )
        z = self.features(ratios) @ self.coef_ + self.intercept_
        return sigmoid(z)

    def score(self, ratios: LookbackRatios) -> float:
        return float(self.predict_proba([ratios])[0])

    # ---- saved form -------------------------------------------------------------------------------
    def restore(self, state: dict[str, Any], path: Path) -> None:
        super().restore(state, path)
        width = self.layers_ * self.heads_ * (self.k if self.variant == "cw" else 1)
        if self.coef_.shape != (width,) or not np.all(np.isfinite(self.coef_)):
            raise ValueError(f"{self.coef_.size} coefficients, expected {width} finite values")

    @classmethod
    def upgrade(cls, d: dict[str, Any], path: Path) -> dict[str, Any]:
        """A classifier of the first format ("verirag-lookback-classifier/1")."""
        if d.get("format") != "verirag-lookback-classifier/1":
            return super().upgrade(d, path)
        meta = dict(d.get("meta") or {})
        return {
            "settings": {"variant": d["variant"], "k": d["k"], "max_iter": d["max_iter"], "C": d["C"]},
            "fingerprints": {"model": meta.pop("model_fingerprint", None)},
            "provenance": meta,
            "state": {
                "coef_": d["coef"],
                "intercept_": d["intercept"],
                "layers_": d["layers"],
                "heads_": d["heads"],
                "n_train_": d["n_train"],
                "positive_rate_": d["positive_rate"],
            },
        }
