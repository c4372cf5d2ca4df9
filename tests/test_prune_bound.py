"""benchmarks/prune_bound.py: the best ratio any pruner could reach, from records on a line."""

from __future__ import annotations

import json

import pytest

from tests.benchmark_module import load_benchmark

pb = load_benchmark("prune_bound")


def records(a: float, b: float, fixed: int, passages: list[int], read_share: float):
    """Both arms' records of questions whose seconds lie exactly on a + b * prompt tokens."""
    unpruned, pruned = {}, {}
    for i, n in enumerate(passages):
        read = round(read_share * n)
        unpruned[f"q{i}"] = {"prompt_tokens": fixed + n, "seconds": a + b * (fixed + n)}
        pruned[f"q{i}"] = {
            "prompt_tokens": fixed + read,
            "seconds": a + b * (fixed + read),
            "prune": {"tokens_read": read, "tokens_saved": n - read},
        }
    return unpruned, pruned


def test_the_line_is_recovered_and_the_oracle_reads_the_supporting_share():
    a, b, fixed = 0.5, 0.007, 200
    unpruned, pruned = records(a, b, fixed, [1000, 1200, 1400, 1600], 0.5)
    shares = dict.fromkeys(pruned, 0.05)
    m = pb.bound(unpruned, pruned, shares)
    assert m["intercept_s"] == pytest.approx(a) and m["seconds_per_token"] == pytest.approx(b)
    full = a + b * (fixed + 1300)
    assert m["measured_pruned"] == pytest.approx(m["line_pruned"])
    assert m["oracle"] == pytest.approx((a + b * (fixed + 0.05 * 1300)) / full)
    # at the share it names, the line gives exactly the goal's ratio
    s = m["share_for_goal"]
    assert (a + b * (fixed + s * 1300)) / full == pytest.approx(pb.GOAL)


def test_a_fixed_part_too_large_leaves_no_share_for_the_goal():
    # the fixed prompt alone costs more than a fifth of the unpruned answer: no pruner can reach it
    unpruned, pruned = records(0.5, 0.007, 400, [600, 700], 0.5)
    m = pb.bound(unpruned, pruned, dict.fromkeys(pruned, 0.0))
    assert m["oracle"] > pb.GOAL and m["share_for_goal"] < 0


def test_questions_without_both_records_or_facts_are_left_out_and_none_is_an_error():
    unpruned, pruned = records(0.5, 0.007, 200, [1000, 1200, 1400], 0.5)
    del unpruned["q0"]
    m = pb.bound(unpruned, pruned, {"q1": 0.1, "q2": 0.1})
    assert m["questions"] == 2
    with pytest.raises(SystemExit):
        pb.bound(unpruned, pruned, {})


def test_supporting_share_counts_the_fact_sentences_words():
    raw = {
        "hotpotqa:x": {
            "context": [["A", ["one two three.", "four five."]], ["B", ["six seven eight nine ten."]]],
            "supporting_facts": [["A", 1], ["B", 0], ["C", 0], ["A", 9]],  # unknown title and index: skipped
        }
    }
    assert pb.supporting_share("hotpotqa:x", raw) == pytest.approx(7 / 10)


def test_load_reads_one_dataset_and_skips_errors(tmp_path):
    rows = [
        {"key": "a", "dataset": "hotpotqa", "seconds": 1},
        {"key": "b", "dataset": "nq", "seconds": 1},
        {"key": "c", "dataset": "hotpotqa", "seconds": 1, "error": "boom"},
    ]
    (tmp_path / "build.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert list(pb.load(tmp_path, "build", "hotpotqa")) == ["a"]
