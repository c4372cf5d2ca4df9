"""benchmarks/verifier_made_up.py (issue 47's made-up checks): every pair differs only where it
should, and a tie counts against the judge."""

from __future__ import annotations

import pytest
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def made_up():
    return load_benchmark("verifier_made_up")


def test_each_pair_differs_only_in_what_it_tests(made_up):
    ps = made_up.pairs()
    kinds = {p["kind"] for p in ps}
    assert kinds == {"follow-up", "bridge: right above wrong", "bridge: above the bridge removed"}
    assert sum(p["kind"] == "follow-up" for p in ps) == 6
    for p in ps:
        right, wrong = p["right"], p["wrong"]
        assert right["question"] == wrong["question"]
        if p["kind"] == "bridge: above the bridge removed":
            assert right["answer"] == wrong["answer"] and right["contexts"] != wrong["contexts"]
            assert right["contexts"][0] == wrong["contexts"][0]  # only the bridge passage is replaced
        else:
            assert right["contexts"] == wrong["contexts"] and right["answer"] != wrong["answer"]
    for f in made_up.FOLLOW_UPS:  # the answers use the pronoun: only the history names the entity
        for answer in (f["right"], f["wrong"]):
            assert answer.split()[0] in {"She", "He", "It"}


def test_a_tie_or_a_failed_score_counts_against(made_up):
    scored = [
        {"kind": "follow-up", "above": True},
        {"kind": "follow-up", "above": False},
        {"kind": "bridge: right above wrong", "above": False},
    ]
    assert made_up.summary(scored) == {"follow-up": (1, 2), "bridge: right above wrong": (0, 1)}
