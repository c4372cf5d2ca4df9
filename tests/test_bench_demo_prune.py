"""benchmarks/bench_demo_prune.py's pure parts: the arms take turns in a rotated order, and each arm
is reported against `off` over the (repeat, question) rows both answered (issue 48's demo goal)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmark_module import load_benchmark

CLEAN = str(Path(__file__).resolve().parents[1] / "data" / "pruner" / "candidates" / "clean")


def _row(arm: str, repeat: int, question: int, seconds: float, tokens: int, action: str = "answered") -> dict:
    return {"arm": arm, "repeat": repeat, "question": question, "seconds": seconds, "prompt_tokens": tokens} | {
        "action": action
    }


def test_the_arms_take_turns():
    bench = load_benchmark("bench_demo_prune")
    names = ["off", "conservative", "aggressive"]
    assert [bench.rotated(names, r)[0] for r in range(4)] == ["off", "conservative", "aggressive", "off"]


def test_each_arm_is_a_paired_ratio_to_off_and_the_goal_is_a_third():
    bench = load_benchmark("bench_demo_prune")
    rows = []
    for repeat in range(2):
        for q in range(3):
            rows.append(_row("off", repeat, q, 12.0, 900))
            rows.append(_row("conservative", repeat, q, 6.0, 450, "abstained" if (repeat, q) == (0, 0) else "answered"))
            if q < 2:  # one question fewer: compared over the rows both answered
                rows.append(_row("aggressive", repeat, q, 3.0, 200))
    out = bench.report(rows, ["off", "conservative", "aggressive"])
    c, a = out["conservative"], out["aggressive"]
    assert c["rows"] == 6 and a["rows"] == 4
    assert c["seconds_ratio"][0] == pytest.approx(0.5) and c["prompt_tokens_ratio"][0] == pytest.approx(0.5)
    assert c["actions_changed"] == 1 and not c["meets_goal"]
    assert a["seconds_ratio"][0] == pytest.approx(0.25) and a["meets_goal"]
    assert out["off"]["seconds_ratio"][0] == pytest.approx(1.0)


def test_each_pruner_brings_its_own_published_thresholds():
    from verirag.learned.pruner import ContextPruner
    from verirag.learned.shipped import shipped_pruner_dir

    bench = load_benchmark("bench_demo_prune")
    one = bench.arm_settings(["off", "conservative", "aggressive"], [0.4], [None])
    shipped = ContextPruner.load(shipped_pruner_dir())
    assert one == {
        "off": False,
        "conservative": {"threshold": shipped.named_threshold("conservative"), "pruner": None},
        "aggressive": {"threshold": shipped.named_threshold("aggressive"), "pruner": None},
        "t=0.4": {"threshold": 0.4, "pruner": None},
    }
    two = bench.arm_settings(["off", "aggressive"], [], [None, CLEAN])
    assert list(two) == ["off", "shipped:aggressive", "clean:aggressive"]
    assert two["clean:aggressive"]["pruner"] == CLEAN
    with pytest.raises(SystemExit, match="unknown arm"):
        bench.arm_settings(["off", "0.4"], [], [None])


def test_the_report_says_where_the_seconds_go():
    bench = load_benchmark("bench_demo_prune")
    rows = [
        _row("off", 0, 0, 6.0, 900) | {"timings": {"retrieve": 0.0, "generate": 5.0, "verify": 1.0, "total": 6.0}},
        _row("conservative", 0, 0, 3.0, 400)
        | {"timings": {"retrieve": 0.2, "generate": 2.0, "verify": 0.8, "total": 3.0}},
        _row("conservative", 0, 1, 2.0, 300) | {"timings": {"retrieve": 0.2, "generate": 1.0, "verify": 0.8}},
    ]
    parts = bench.report(rows, ["off", "conservative"])["conservative"]["parts"]
    assert parts == pytest.approx({"retrieve": 0.2, "generate": 2.0, "verify": 0.8})  # paired with off: q0 only
    assert bench.mean_parts([{"seconds": 1.0}]) == {}  # records made before timings were kept


def test_the_report_says_how_many_prompt_tokens_reach_the_goal():
    bench = load_benchmark("bench_demo_prune")
    # seconds exactly 0.5 + 0.005 x tokens: off reads 1,000 tokens (5.5 s), so a third (1.833 s) is at 266.7
    rows = [_row("off", r, 0, 5.5, 1000) for r in range(3)] + [
        _row("conservative", r, 0, 0.5 + 0.005 * t, t) for r, t in enumerate((400, 500, 600))
    ]
    line = bench.tokens_for_goal(rows)
    assert line["intercept_s"] == pytest.approx(0.5) and line["seconds_per_token"] == pytest.approx(0.005)
    assert line["tokens"] == pytest.approx((5.5 / 3 - 0.5) / 0.005)
