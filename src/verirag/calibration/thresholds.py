"""Older home of the threshold targets: `ThresholdTarget` is now `ThresholdController`
(`verirag.calibration.controller`), re-exported here so existing imports keep working."""
from verirag.calibration.controller import ACT, ANSWER, ThresholdController, ThresholdTarget

__all__ = ["ThresholdTarget", "ThresholdController", "ANSWER", "ACT"]
