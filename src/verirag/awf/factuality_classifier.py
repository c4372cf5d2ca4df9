"""The factuality classifier over lookback ratios (Geissler et al., section 3.3; Lookback Lens).

    clf = LookbackClassifier(variant="cw", k=10).fit(ratios_list, labels)   # labels: 1 = factual
    p = clf.score(ratios)                  # P(factual) of one answer's LookbackRatios
    clf.save("clf.json", attention_model="hf:qwen2.5-0.5b", model_fingerprint=...)
    clf = LookbackClassifier.load("clf.json")

Feature vector (paper, "Factuality classifier"):
- cw (chunk-wise): the time-averaged ratios LR^{l,h}(c_i) of the passages in the prompt, min-max
  scaled to [0, 1] over this sample's values, then zero-padded to `k` passages: layout L x H x k
  (layer-major). Passages beyond `k` are dropped (they come last: lowest retrieval rank).
- fc (full context, the original Lookback Lens): LR^{l,h}(context), min-max scaled, L x H.
A sample whose values are all equal scales to zeros.

Classifier: scikit-learn LogisticRegression(class_weight="balanced", max_iter=1000), the paper's
settings. Saved as JSON (coefficients, intercept, layout, the attention model and its fingerprint,
training summary); loading rebuilds the same probabilities with numpy, no pickle.
"""
from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.jsonio import write_json
from verirag.llm.lookback import LookbackRatios

VARIANTS = ("cw", "fc")
FORMAT = "verirag-lookback-classifier/1"


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
        out[:, :, :cw.shape[2]] = _minmax(cw)
    return out.ravel()


def _minmax(values: np.ndarray) -> np.ndarray:
    lo, hi = float(values.min()), float(values.max())
    if not math.isfinite(lo) or not math.isfinite(hi):
        raise InputError("lookback ratios contain NaN or infinity")
    return (values - lo) / (hi - lo) if hi > lo else np.zeros_like(values)


class LookbackClassifier:
    """Logistic regression from lookback-ratio features to P(factual).

    Fitted attributes: coef_ (n_features,), intercept_, layers_, heads_, n_train_, positive_rate_.
    `meta` carries what `save` was told (attention model, fingerprint, training data, metrics).
    """

    def __init__(self, variant: str = "cw", k: int = 10, *, max_iter: int = 1000, C: float = 1.0):
        if variant not in VARIANTS:
            raise InputError(f"variant must be one of {', '.join(VARIANTS)}, got {variant!r}")
        if k < 1:
            raise InputError(f"k must be >= 1, got {k}")
        self.variant, self.k, self.max_iter, self.C = variant, int(k), int(max_iter), float(C)
        self.meta: dict[str, Any] = {}

    def features(self, ratios: Sequence[LookbackRatios]) -> np.ndarray:
        return np.stack([feature_vector(r, self.variant, self.k) for r in ratios])

    def fit(self, ratios: Sequence[LookbackRatios], labels: Sequence[int]) -> "LookbackClassifier":
        from sklearn.linear_model import LogisticRegression
        if len(ratios) != len(labels):
            raise InputError(f"{len(ratios)} samples but {len(labels)} labels")
        y = np.asarray([int(bool(v)) for v in labels])
        if len(set(y.tolist())) < 2:
            raise InputError(f"the training labels are all {y[0] if len(y) else 'missing'}: a classifier "
                             "needs factual and non-factual answers")
        shapes = {(r.layers, r.heads) for r in ratios}
        if len(shapes) != 1:
            raise InputError(f"the samples come from models of different shapes: {sorted(shapes)}")
        X = self.features(ratios)
        model = LogisticRegression(class_weight="balanced", max_iter=self.max_iter, C=self.C)
        model.fit(X, y)
        self.coef_ = model.coef_[0].astype(np.float64)
        self.intercept_ = float(model.intercept_[0])
        (self.layers_, self.heads_), = shapes
        self.n_train_ = int(len(y))
        self.positive_rate_ = float(y.mean())
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise InputError("the lookback classifier is not fitted: call fit() or load()")

    def predict_proba(self, ratios: Sequence[LookbackRatios]) -> np.ndarray:
        """P(factual) of each sample."""
        self._check_fitted()
        for r in ratios:
            if (r.layers, r.heads) != (self.layers_, self.heads_):
                raise InputError(f"lookback ratios of a model with {r.layers} layers x {r.heads} heads, but the "
                                 f"classifier was trained on {self.layers_} x {self.heads_}: use the "
                                 "attention model it was trained with")
        z = self.features(ratios) @ self.coef_ + self.intercept_
        return 1.0 / (1.0 + np.exp(-z))

    def score(self, ratios: LookbackRatios) -> float:
        return float(self.predict_proba([ratios])[0])

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        self._check_fitted()
        return {"format": FORMAT, "variant": self.variant, "k": self.k, "max_iter": self.max_iter,
                "C": self.C, "layers": self.layers_, "heads": self.heads_, "n_train": self.n_train_,
                "positive_rate": self.positive_rate_, "intercept": self.intercept_,
                "coef": self.coef_.tolist(), "meta": self.meta}

    def save(self, path: str | os.PathLike, **meta: Any) -> Path:
        self.meta.update(meta)
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_json(path, self.to_dict())

    @classmethod
    def load(cls, path: str | os.PathLike) -> "LookbackClassifier":
        path = Path(path)
        try:
            d = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"lookback classifier not found: {path} (train one with "
                             "`verirag train lookback RUN_DIR --out FILE`)") from None
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise InputError(f"{path} is not a lookback classifier file: {e}") from None
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise InputError(f"{path} is not a lookback classifier file (format {FORMAT!r})")
        try:
            clf = cls(d["variant"], int(d["k"]), max_iter=int(d["max_iter"]), C=float(d["C"]))
            clf.layers_, clf.heads_ = int(d["layers"]), int(d["heads"])
            clf.coef_ = np.asarray(d["coef"], dtype=np.float64)
            clf.intercept_ = float(d["intercept"])
            clf.n_train_, clf.positive_rate_ = int(d["n_train"]), float(d["positive_rate"])
            clf.meta = dict(d.get("meta") or {})
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"{path}: a lookback classifier field is missing or malformed: {e}") from None
        width = clf.layers_ * clf.heads_ * (clf.k if clf.variant == "cw" else 1)
        if clf.coef_.shape != (width,) or not np.all(np.isfinite(clf.coef_)):
            raise InputError(f"{path}: {clf.coef_.size} coefficients, expected {width} finite values")
        return clf
