"""Turning scores into decisions: thresholds fitted to a target, cross-validated thresholds,
and score calibration (Platt, isotonic)."""
from verirag.calibration.cv import CVThreshold, best_threshold, cross_fit_target, cv_threshold, kfold_indices
from verirag.calibration.thresholds import ThresholdTarget

__all__ = ["ThresholdTarget", "CVThreshold", "best_threshold", "cross_fit_target", "cv_threshold",
           "kfold_indices"]
