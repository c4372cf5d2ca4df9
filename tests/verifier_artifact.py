"""A tiny trained verifier standing in for the shipped one (VERIRAG_VERIFIER_DIR points at it):
trained in seconds on test_learned_verifier's toy task, so a test checks the plumbing with a real
network, not the quality of the artifact main ships."""

from __future__ import annotations

from pathlib import Path

from test_learned_verifier import FILLER, fact, toy_examples, toy_verifier

__all__ = ["FILLER", "fact", "rule_score", "train_tiny_verifier"]


def rule_score(sentence_scores, softmin: float | None = None) -> float:
    """The answer's score the verify default's rule gives sentences of one claim each: the smooth
    minimum of their logits (`answer_logit`; the plain minimum at softmin=0)."""
    import numpy as np

    from verirag.awf.predictors.verifier import DEFAULT_SOFTMIN
    from verirag.learned.verifier import answer_logit
    from verirag.metrics.calibration import sigmoid

    p = np.clip(np.asarray(list(sentence_scores), dtype=float), 1e-12, 1 - 1e-12)
    z = answer_logit(np.log(p / (1 - p)), DEFAULT_SOFTMIN if softmin is None else softmin)
    return float(sigmoid(z))


def train_tiny_verifier(folder: Path) -> Path:
    import torch

    torch.set_num_threads(1)
    toy_verifier().fit(toy_examples()).save(folder)
    return folder
