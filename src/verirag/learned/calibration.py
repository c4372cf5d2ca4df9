"""Calibration of a learned part's scores, shared by the forecaster, the verifier and the pruner:
temperature scaling fitted on validation data, and the validation metrics reported beside it."""

from __future__ import annotations

import math

import numpy as np

from verirag.learned.training import bce_with_logits

# Temperature scaling on a handful of validation pairs fits noise (a separable split drives T to
# its bound): below this many pairs of either class the temperature stays 1.
MIN_PER_CLASS_FOR_TEMPERATURE = 5


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T minimising the NLL of sigmoid(logit / T) (Guo et al.'s temperature
    scaling, for one logit), searched in [e^-4, e^4]; 1.0 when either class has fewer than
    MIN_PER_CLASS_FOR_TEMPERATURE labels (nothing reliable to fit)."""
    from scipy.optimize import minimize_scalar

    y = np.asarray(labels, dtype=np.float64)
    z = np.asarray(logits, dtype=np.float64)
    if min(y.sum(), len(y) - y.sum()) < MIN_PER_CLASS_FOR_TEMPERATURE:
        return 1.0

    res = minimize_scalar(lambda log_t: bce_with_logits(z / math.exp(log_t), y), bounds=(-4.0, 4.0), method="bounded")
    return float(math.exp(res.x))


def validation_metrics(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """AUROC, ECE, Brier and NLL of `probs` against `labels` (verirag.metrics.calibration)."""
    from verirag.metrics.calibration import auroc, brier, ece, nll

    y = np.asarray(labels).astype(int)
    out = {
        "n": len(y),
        "positives": int(y.sum()),
        "accuracy": float(np.mean((probs >= 0.5) == y)) if len(y) else float("nan"),
        "ece": ece(probs, y) if len(y) else float("nan"),
        "brier": float(brier(probs, y)) if len(y) else float("nan"),
        "nll": float(nll(probs, y)) if len(y) else float("nan"),
    }
    out["auroc"] = float(auroc(probs, y)) if 0 < y.sum() < len(y) else float("nan")
    return out
