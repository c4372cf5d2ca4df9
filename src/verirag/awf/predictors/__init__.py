"""Faithfulness predictors: (question, answer, passages) -> score in [0, 1]. Importing registers them."""

from verirag.awf.predictors.base import FaithfulnessPredictor, Verification
from verirag.awf.predictors.cascade import CascadePredictor
from verirag.awf.predictors.k_precision import KPrecisionPredictor
from verirag.awf.predictors.llm_judge import LLMJudgePredictor
from verirag.awf.predictors.lookback import LookbackPredictor
from verirag.awf.predictors.nli import PostAnsweringNLI
from verirag.awf.predictors.pre_answering import PreAnsweringPredictor
from verirag.awf.predictors.self_check import SelfCheckPredictor
from verirag.awf.predictors.stacked import StackedPredictor
from verirag.awf.predictors.trivial import TrivialPredictor
from verirag.awf.predictors.verbal_confidence import VerbalLinguisticPredictor, VerbalNumberPredictor
from verirag.awf.predictors.verifier import TrainedVerifierPredictor

__all__ = [
    "CascadePredictor",
    "FaithfulnessPredictor",
    "KPrecisionPredictor",
    "LLMJudgePredictor",
    "LookbackPredictor",
    "PostAnsweringNLI",
    "PreAnsweringPredictor",
    "SelfCheckPredictor",
    "StackedPredictor",
    "TrainedVerifierPredictor",
    "TrivialPredictor",
    "VerbalLinguisticPredictor",
    "VerbalNumberPredictor",
    "Verification",
]
