"""Faithfulness predictors: (question, answer, passages) -> score in [0, 1]. Importing registers them."""
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification
from verirag.awf.predictors.nli import PostAnsweringNLI

__all__ = ["FaithfulnessPredictor", "PostAnsweringNLI", "Verification"]
