"""Turning scores into decisions: threshold controllers fitted to a target (a fixed value, a
target precision with a finite-sample guarantee via Learn then Test, an action rate),
cross-validated thresholds, and the threshold files `verirag calibrate` writes."""
from verirag.calibration.controller import ACT, ANSWER, ThresholdController, ThresholdTarget
from verirag.calibration.cv import CVThreshold, best_threshold, cross_fit_target, cv_threshold, kfold_indices
from verirag.calibration.ltt import PrecisionThreshold, precision_guarantee_threshold

__all__ = ["ThresholdController", "ThresholdTarget", "ANSWER", "ACT", "CVThreshold", "best_threshold",
           "cross_fit_target", "cv_threshold", "kfold_indices", "PrecisionThreshold",
           "precision_guarantee_threshold"]
