"""Abstention detection and P_IR / P_G."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verirag.metrics import abstention as A
from verirag.metrics.calibration import abstention_rate

ABSTAIN = [
    "I don't know.",
    "I don’t know",
    "i do not know the answer",
    "__DONT_KNOW__",
    "DONT KNOW",
    "Response: __DONT_KNOW__",
    "The passage does not provide information about the band.",
    "The given passages do not mention who won.",
    "It cannot be determined from the context.",
    "There is not enough information to answer.",
    "No answer",
    "This question is unanswerable.",
    "It is not mentioned in the passages.",
    "I'm sorry, but I cannot answer that.",
    "",
    None,
    "I could not find the answer in the documents.",
    "Unknown.",
    "N/A",
    "Not stated.",
    "unclear",
]
ANSWER = [
    "Paris",
    "The answer is 1889.",
    "Knowledge is power",
    "No. 5 is the perfume.",
    "Nobody knows who built it, but historians credit the Romans.",
    "He did not know her.",
    "The Knowledge Tree",
    "Yes, it is in France.",
    "None.",
    "The author is unknown.",
    "Unknown Pleasures",
]


@pytest.mark.parametrize("t", ABSTAIN)
def test_recognises_abstentions(t):
    assert A.is_abstention(t)


@pytest.mark.parametrize("t", ANSWER)
def test_does_not_flag_answers(t):
    assert not A.is_abstention(t)


def test_extra_patterns():
    assert not A.is_abstention("pass")
    assert A.is_abstention("pass", extra_patterns=[r"^pass$"])


def test_rates():
    responses = ["I don't know", "Paris", "I don't know", "1889"]
    assert A.p_ir(responses) == 0.5
    assert A.p_ir(responses, irrelevant=[True, True, False, False]) == 0.5
    assert A.p_g(responses, gold_present=[False, True, False, True]) == 0.0
    assert math.isnan(A.p_g(responses, gold_present=[False] * 4))
    np.testing.assert_array_equal(A.abstention_mask(responses), [True, False, True, False])
    assert abstention_rate(responses) == 0.5
    assert abstention_rate([True, False, False, False]) == 0.25
    with pytest.raises(ValueError):
        A.p_ir(responses, irrelevant=[True])
