"""benchmarks/stack_engines.py reads each build's run as the stack reads an answer: the answer's
signals, llm_judge's score and the verifier's rescored score, and leaves out an answer missing one."""

from __future__ import annotations

import json

from benchmark_module import load_benchmark


def _row(example_id, method, score, answer="Ada", error=None):
    signals = {"values": {"logprob_min": -0.5, "logprob_mean": -0.2, "logprob_sum": -0.6, "k_precision": 1.0}}
    return {
        "example_id": example_id,
        "method": method,
        "score": score,
        "error": error,
        "answer": answer,
        "faithful": 1,
        "group": example_id.split(":")[0],
        "details": {"signals": signals},
    }


def test_an_answer_is_read_with_every_feature_or_left_out(tmp_path):
    bench = load_benchmark("stack_engines")
    rows = [
        _row("q1:a", "vanilla+verifier", 0.9),
        _row("q1:a", "vanilla+llm_judge", 0.7),
        _row("q2:a", "vanilla+verifier", 0.4),
        _row("q2:a", "vanilla+llm_judge", None, error="the judge's reply had no Yes or No"),
    ]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    scores = tmp_path / "v.jsonl"
    lines = [{"header": True}, {"example_id": "q1:a", "score": 0.8}, {"example_id": "q2:a", "score": 0.3}]
    scores.write_text("".join(json.dumps(x) + "\n" for x in lines))
    read = bench.rows_by_answer(tmp_path)
    assert read["q1:a"]["llm_judge"] == 0.7 and read["q2:a"]["llm_judge"] is None
    names = ["verifier", "logprob_min", "llm_judge"]
    got = bench.features(read, bench.verifier_scores(scores), names)
    assert got == {"q1:a": {"verifier": 0.8, "logprob_min": -0.5, "llm_judge": 0.7}}  # q2: its judge failed
