"""benchmarks/verifier_swaps.py (issue 47, item 4): the changed copies of a right answer change one
number, party or negation the passages hold, and the table counts a tie against the judge."""

from __future__ import annotations

import random

import pytest
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def swaps():
    return load_benchmark("verifier_swaps")


PASSAGES = [
    "Marie Curie was born in Warsaw in 1867. She shared the 1903 Nobel Prize with Pierre Curie and "
    "Henri Becquerel. She won a second Nobel Prize in 1911."
]


def test_each_kind_changes_one_thing_the_passages_hold(swaps):
    answer = "Marie Curie was born in 1867 and shared the prize with Pierre Curie."
    out = swaps.changed(answer, PASSAGES, random.Random(0))
    assert set(out) == {"number", "party", "negation"}
    assert "1867" not in out["number"] and out["number"].replace("1867", "") != answer.replace("1867", "")
    # another name of two capitalised words from the passages, never one sharing a word with it
    # (patterns, no tagger: "Nobel Prize" is a name here too)
    assert out["party"] in {answer.replace("Pierre Curie", other) for other in ("Henri Becquerel", "Nobel Prize")}
    assert out["negation"] == "Marie Curie was not born in 1867 and shared the prize with Pierre Curie."
    for wrong in out.values():
        assert wrong != answer


def test_negation_goes_both_ways_and_needs_an_auxiliary(swaps):
    assert swaps.negated("It was not finished in 1889.") == "It was finished in 1889."
    assert swaps.negated("Paris.") is None


def test_nothing_to_change_gives_no_pair(swaps):
    assert swaps.changed("Yes.", PASSAGES, random.Random(0)) == {}
    assert (
        swaps.make_pairs(
            [{"id": "a", "label": 0, "response": "Marie Curie was born in 1867.", "retrieved_contexts": PASSAGES}]
        )
        == []
    )


def test_a_tie_counts_against_the_judge_and_every_kind_is_reported(swaps):
    scored = [
        {"id": "1", "group": "q1", "kind": "number", "right": 0.9, "wrong": 0.1},
        {"id": "1", "group": "q1", "kind": "party", "right": 0.5, "wrong": 0.5},
        {"id": "2", "group": "q2", "kind": "negation", "right": 0.8, "wrong": None},
    ]
    rows = {t["kind"]: t for t in swaps.table(scored, resamples=200)}
    assert rows["number"]["right_above"] == 1.0 and rows["party"]["right_above"] == 0.0
    assert rows["negation"]["right_above"] == 0.0  # a failed score is no evidence
    assert rows["all"]["pairs"] == 3 and not rows["all"]["goal_met"]
    low, high = rows["all"]["wilson"]
    assert 0 < low < 1 / 3 < high < 1


def test_the_paired_difference_reads_only_the_pairs_both_judges_scored(swaps):
    mine = [
        {"id": "1", "group": "q1", "kind": "negation", "right": 0.9, "wrong": 0.1},
        {"id": "2", "group": "q2", "kind": "negation", "right": 0.9, "wrong": 0.1},
        {"id": "3", "group": "q3", "kind": "party", "right": 0.2, "wrong": 0.8},
        {"id": "4", "group": "q4", "kind": "party", "right": 0.9, "wrong": 0.1},  # the other judge has no pair 4
    ]
    theirs = [
        {"id": "1", "group": "q1", "kind": "negation", "right": 0.9, "wrong": 0.1},
        {"id": "2", "group": "q2", "kind": "negation", "right": 0.1, "wrong": 0.9},
        {"id": "3", "group": "q3", "kind": "party", "right": 0.9, "wrong": 0.1},
    ]
    rows = {t["kind"]: t for t in swaps.paired_table(mine, theirs, resamples=200)}
    assert rows["negation"]["pairs"] == 2 and rows["negation"]["difference"] == 0.5
    assert rows["party"]["pairs"] == 1 and rows["party"]["difference"] == -1.0
    assert rows["all"]["pairs"] == 3 and abs(rows["all"]["difference"] - (1 - 1) / 3) < 1e-12
    low, high = rows["negation"]["interval"]
    assert 0.0 <= low <= 0.5 <= high <= 1.0
    assert "number" not in rows  # no pair of that kind in both


def test_one_kind_gives_the_same_pairs_as_all_kinds_keep(swaps):
    rows = [
        {"id": str(i), "label": 1, "response": a, "retrieved_contexts": PASSAGES}
        for i, a in enumerate(["Marie Curie was born in 1867.", "She shared it with Pierre Curie in 1903."])
    ]
    every = swaps.make_pairs(rows)
    party = swaps.make_pairs(rows, kinds=("party",))
    assert party and all(p["kind"] == "party" for p in party)
    assert party == [p for p in every if p["kind"] == "party"]
    with pytest.raises(SystemExit):
        swaps.main(["--kinds", "parties", "--scores", "x.jsonl"])
