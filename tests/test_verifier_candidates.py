"""The committed candidate verifiers (data/verifier/candidates/): each loads over the installed
encoder, and the warm-started one finds support that spans two passages (issue 36, item 1), on the
invented two-hop fixtures the shipped verifier fails (tests/test_verifier_shipped.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_verifier_shipped import TWO_HOP, assert_support_spans_two_passages

from verirag.awf.compose import build_method

CANDIDATES = Path(__file__).resolve().parents[1] / "data" / "verifier" / "candidates"


@pytest.fixture(scope="module")
def warm():
    return build_method(f"vanilla+verifier(verifier={CANDIDATES / 'warm'})", None).predictor


@pytest.mark.parametrize("question, bridge, hop, answer", TWO_HOP, ids=[q for q, *_ in TWO_HOP])
def test_the_warm_candidate_finds_support_that_spans_two_passages(warm, question, bridge, hop, answer):
    assert_support_spans_two_passages(warm, question, bridge, hop, answer)


def test_the_warm_candidate_says_where_it_started(warm):
    v = warm.model
    assert v.init_from == "src/verirag/learned/shipped/verifier" and v.joint and v.train_layers == 6
    assert len(v.warm_start_["adapter_sha256"]) == 64
