"""benchmarks/stack_given.py (issue 47): the shipped stack judging given answers, from the committed
scores of its judges; the made-up checks need no benchmark data."""

from __future__ import annotations

import json

import numpy as np
import pytest
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def given():
    return load_benchmark("stack_given")


@pytest.fixture(scope="module")
def stack():
    from verirag.learned.stack import StackedVerifier, shipped_stack_path

    return StackedVerifier.load(shipped_stack_path())


def test_a_given_answer_is_scored_with_its_logprobs_at_their_training_means(given, stack):
    from verirag.metrics.faithfulness import k_precision

    passages = ["The lighthouse on Skarvoy was designed by Maren Solberg in 1899."]
    answer = "Maren Solberg designed it."
    row = [
        {"verifier": 0.7, "llm_judge": 0.9, "k_precision": k_precision(answer, passages)}.get(f, np.nan)
        for f in stack.features
    ]
    expected = stack.predict_proba(np.array([row]), impute=True)[0]
    assert given.given_score(stack, 0.7, 0.9, answer, passages) == pytest.approx(expected)
    # the judge moves it: the stack reads llm_judge with a positive weight
    assert given.given_score(stack, 0.7, 0.2, answer, passages) < expected


def test_the_made_up_table_counts_each_judge_from_the_committed_scores(given, stack):
    table = given.made_up_table(stack)
    for name, path in (("verifier", given.MADE_UP_VERIFIER), ("llm_judge", given.MADE_UP_JUDGE)):
        committed = json.loads(path.read_text())["pairs"]
        for kind, row in table.items():
            of_kind = [p for p in committed if p["kind"] == kind]
            assert row[name] == [sum(p["above"] for p in of_kind), len(of_kind)]
    assert set(table) == {"follow-up", "bridge: right above wrong", "bridge: above the bridge removed"}
    assert all(row["stack"][1] == 6 for row in table.values())


def test_pairs_scored_by_one_judge_only_are_left_out(given, stack):
    p = {"id": "a", "kind": "party", "response": "X did it.", "wrong": "Y did it.", "retrieved_contexts": ["X did it."]}
    both = {("a", "party"): {"right": 0.9, "wrong": 0.1}}
    assert given.pair_share(stack, [p], both, {})["pairs"] == 0
    share = given.pair_share(stack, [p], both, both)
    assert share["pairs"] == 1 and share["verifier"] == share["llm_judge"] == share["stack"] == 1.0
