"""A tiny trained verifier standing in for the shipped one (VERIRAG_VERIFIER_DIR points at it):
trained in seconds on test_learned_verifier's toy task, so a test checks the plumbing with a real
network, not the quality of the artifact main ships."""

from __future__ import annotations

from pathlib import Path

from test_learned_verifier import FILLER, fact, toy_examples, toy_verifier

__all__ = ["FILLER", "fact", "train_tiny_verifier"]


def train_tiny_verifier(folder: Path) -> Path:
    import torch

    torch.set_num_threads(1)
    toy_verifier().fit(toy_examples()).save(folder)
    return folder
