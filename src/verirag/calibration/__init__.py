"""Turning scores into decisions: thresholds fitted to a target, cross-validated thresholds,
and score calibration (Platt, isotonic)."""
from verirag.calibration.thresholds import ThresholdTarget

__all__ = ["ThresholdTarget"]
