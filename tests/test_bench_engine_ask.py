"""benchmarks/bench_engine_ask.py: its settings are parsed strictly, and its report pairs each
setting's answers with the baseline's same (turn, question)."""

from __future__ import annotations

import argparse

import pytest
from benchmark_module import load_benchmark


def test_a_setting_is_an_engine_and_a_batch_size():
    bench = load_benchmark("bench_engine_ask")
    assert bench.parse_setting("ik:512") == ("ik", 512)
    for bad in ("ik", "ik:", "ik:0", ":64", "ik:big"):
        with pytest.raises(argparse.ArgumentTypeError, match="ENGINE:N_BATCH"):
            bench.parse_setting(bad)


def _row(setting, repeat, question, seconds, action="answered", answer="Ada"):
    return {
        "setting": setting,
        "repeat": repeat,
        "question": question,
        "seconds": seconds,
        "prompt_tokens": 100,
        "action": action,
        "answer": answer,
        "judge": "stacked[verifier]",
    }


def test_the_report_pairs_rows_with_the_baselines():
    bench = load_benchmark("bench_engine_ask")
    rows = [_row("a:64", 0, q, 2.0) for q in range(4)] + [_row("b:512", 0, q, 1.0) for q in range(3)]
    rows.append(_row("b:512", 0, 3, 1.0, action="abstained", answer="?"))
    out = bench.report(rows, ["a:64", "b:512"])
    assert out["a:64"]["seconds_ratio"][0] == pytest.approx(1.0)
    b = out["b:512"]
    assert b["rows"] == 4 and b["seconds_ratio"][0] == pytest.approx(0.5)
    assert b["seconds_ratio"][1] <= 0.5 <= b["seconds_ratio"][2]
    assert b["actions_changed"] == 1 and b["answers_changed"] == 1
    # a setting without a row paired to the baseline is left out, not divided by nothing
    assert "c:8" not in bench.report([*rows, _row("c:8", 1, 0, 1.0)], ["a:64", "b:512", "c:8"])
