"""benchmarks/bench_prune.py's report: per arm, seconds as a ratio to the baseline and accuracy
minus the baseline's, paired over the questions every arm answered; a requantised arm also
against the Q4_K_M prune arm (issue 37, item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_module import load_benchmark


def _bench():
    return load_benchmark("bench_prune")


def _write(out: Path, arm: str, rows: list[tuple[float, int]]) -> None:
    with open(out / f"{arm}.jsonl", "w") as fh:
        for i, (seconds, correct) in enumerate(rows):
            rec = {"key": f"nq:{i}", "dataset": "nq", "seconds": seconds, "correct": correct, "answerable": 1}
            rec |= {"score": 0.2 + 0.6 * correct, "prompt_tokens": 100, "error": None}
            if arm.startswith("prune"):
                rec |= {"score_full": 0.5, "prune": {"fallback": False}}
            fh.write(json.dumps(rec) + "\n")


def test_a_requantised_arm_is_compared_with_the_baseline_and_with_q4_k_m_on_shared_questions(tmp_path):
    bench = _bench()
    _write(tmp_path, "baseline", [(10.0, 1), (10.0, 0), (10.0, 1), (10.0, 1), (10.0, 0)])
    _write(tmp_path, "prune", [(4.0, 1), (4.0, 0), (4.0, 1), (4.0, 0), (4.0, 0)])
    _write(tmp_path, "prune-q4_0", [(2.0, 1), (2.0, 1), (2.0, 1), (2.0, 0)])  # one question fewer
    report = bench.summary(tmp_path, ["nq"], ["baseline", "prune", "prune-q4_0"])["nq"]
    assert report["n"] == 4  # the questions all three answered
    q = report["prune-q4_0"]
    assert q["ratio_to_baseline"][0] == pytest.approx(0.2) and q["ratio_to_prune"][0] == pytest.approx(0.5)
    assert q["accuracy_minus_baseline"][0] == pytest.approx(0.0)  # 3/4 against 3/4
    assert q["accuracy_minus_prune"][0] == pytest.approx(0.25)  # 3/4 against 2/4
    assert "ratio_to_prune" not in report["prune"]


def test_every_arm_is_a_choice_and_each_requantisation_names_a_llama_cpp_type():
    bench = _bench()
    import llama_cpp

    assert {f"prune-{q}" for q in bench.QUANTS} <= set(bench.ARMS)
    assert all(isinstance(getattr(llama_cpp, t), int) for t in bench.QUANTS.values())


def test_the_gate_also_reports_the_questions_whose_passages_could_answer(tmp_path):
    """NQ pairs whose passages hold no reference agree by construction (both arms wrong): the gate
    counts them as issue 48 states, and reports the interval without them beside it."""
    bench = _bench()

    def write(arm: str, correct: list[int]) -> None:
        with open(tmp_path / f"{arm}.jsonl", "w") as fh:
            for i, c in enumerate(correct):
                answerable = int(i < 10)  # the first 10 hold a reference; 30 padding questions do not
                fh.write(
                    json.dumps({"key": f"nq-open:{i}", "dataset": "nq-open", "correct": c, "answerable": answerable})
                    + "\n"
                )

    write("build", [1] * 10 + [0] * 30)
    write("prune", [1] * 8 + [0] * 2 + [0] * 30)  # 2 of the 10 answerable questions lost
    g = bench.pooled_gate(tmp_path, ["nq-open"], "prune", "build")
    assert g["n"] == 40 and g["accuracy_minus_reference"][0] == pytest.approx(-2 / 40)
    assert g["answerable"]["n"] == 10
    assert g["answerable"]["accuracy_minus_reference"][0] == pytest.approx(-2 / 10)
    assert not g["passes"]
    # the padding dilutes the discordance the power is read from: 2 of 40 against 2 of 10
    assert g["power"]["discordant"] == pytest.approx(2 / 40)
    assert g["answerable"]["power"]["discordant"] == pytest.approx(2 / 10)
    assert g["answerable"]["power"]["n_for_80_percent"] > g["power"]["n_for_80_percent"]


def test_the_gate_says_what_the_rules_remaining_questions_cost(tmp_path):
    """A median per dataset of one question in both arms: a record made beside other work (several
    times slower) does not move it."""
    bench = _bench()
    _write(tmp_path, "build", [(20.0, 1), (22.0, 0), (24.0, 1), (200.0, 1)])
    _write(tmp_path, "prune", [(10.0, 1), (10.0, 0), (12.0, 1), (10.0, 1)])
    g = bench.pooled_gate(tmp_path, ["nq"], "prune", "build")
    assert g["pair_seconds"] == {"nq": pytest.approx(34.0)}  # median of 30, 32, 36, 210


def test_seconds_made_beside_other_work_are_left_out_of_the_quiet_ratio(tmp_path):
    """A record made while something else ran (1-minute load above QUIET_LOAD) is several times
    slower: the quiet ratio reads only the questions every arm answered on quiet cores, and a record
    without a load is not known quiet."""
    bench = _bench()
    _write(tmp_path, "build", [(10.0, 1), (10.0, 0), (10.0, 1), (40.0, 1), (10.0, 1)])
    _write(tmp_path, "prune", [(4.0, 1), (4.0, 0), (4.0, 1), (4.0, 1), (40.0, 1)])
    loads = {"build": [2.0, 2.1, 1.9, 3.8, 2.0], "prune": [2.0, 2.0, 2.4, 2.0, None]}
    for arm, values in loads.items():
        rows = [json.loads(line) for line in (tmp_path / f"{arm}.jsonl").read_text().splitlines()]
        with open(tmp_path / f"{arm}.jsonl", "w") as fh:
            for r, load in zip(rows, values):
                made = {"load": load, "cpu_seconds": 2 * r["seconds"]} if load is not None else {}
                fh.write(json.dumps(r | made) + "\n")
    report = bench.summary(tmp_path, ["nq"], ["build", "prune"], reference="build")["nq"]
    assert report["n"] == 5 and report["n_quiet"] == 3  # question 3: build beside work; 4: no load
    assert report["prune"]["ratio_to_baseline_quiet"][0] == pytest.approx(0.4)
    assert report["prune"]["ratio_to_baseline"][0] == pytest.approx(56 / 80)


def test_a_record_whose_process_was_stopped_is_not_quiet():
    """A stopped process lowers the load; its CPU seconds give it away."""
    bench = _bench()
    assert bench.quiet({"seconds": 20.0, "load": 2.0, "cpu_seconds": 38.0})
    assert not bench.quiet({"seconds": 3000.0, "load": 1.0, "cpu_seconds": 40.0})
    assert not bench.quiet({"seconds": 20.0, "load": 2.0})  # made before records carried CPU seconds
    assert not bench.quiet({"seconds": 20.0})


def test_a_pair_across_two_builds_is_not_quiet(tmp_path):
    """Seconds of two builds measure the builds: such a question is left out of the quiet ratio."""
    bench = _bench()
    _write(tmp_path, "build", [(10.0, 1), (10.0, 1), (30.0, 1)])
    _write(tmp_path, "prune", [(4.0, 1), (6.0, 1), (4.0, 1)])
    builds = {"build": ["avx512", "avx512", "avx2"], "prune": ["avx512", "avx512", "avx512"]}
    for arm, values in builds.items():
        rows = [json.loads(line) for line in (tmp_path / f"{arm}.jsonl").read_text().splitlines()]
        with open(tmp_path / f"{arm}.jsonl", "w") as fh:
            for r, b in zip(rows, values):
                quiet = {"load": 2.0, "cpu_seconds": 2 * r["seconds"], "build": {"system_info": b}}
                fh.write(json.dumps(r | quiet) + "\n")
    report = bench.summary(tmp_path, ["nq"], ["build", "prune"], reference="build")["nq"]
    assert report["n"] == 3 and report["n_quiet"] == 2
    assert report["prune"]["ratio_to_baseline_quiet"][0] == pytest.approx(0.5)


def test_an_answer_record_holds_what_the_summary_reads():
    """The record one timed question leaves (the pipeline is a stand-in: this is about the record):
    seconds, CPU seconds and load for the quiet test, correctness by the references, and in a
    pruning arm what was pruned and the verifier's score over the full passages."""
    from types import SimpleNamespace

    from verirag.types import Example, Passage

    bench = _bench()
    stage = {"threshold": 0.14, "fallback": False, "tokens_read": 40, "tokens_saved": 60}
    stage["passages"] = [{"hop": True}, {}]
    result = SimpleNamespace(
        timings={"generate": 1.0}, usage={"prompt_tokens": 40}, retrieved_answer="Maren Solberg", score=0.8,
        error=None, stages={"prune": stage},
    )  # fmt: skip
    pipeline = SimpleNamespace(ask=lambda question: result)
    verifier = SimpleNamespace(verify=lambda q, a, passages: SimpleNamespace(score=0.6 if len(passages) == 2 else 0))
    e = Example(
        id="7",
        question="Who designed it?",
        references=["Maren Solberg"],
        passages=[Passage("a", "x"), Passage("b", "y")],
    )
    rec = bench.answer_record(pipeline, "nq", e, "prune", {"engine": "llama_cpp"}, verifier)
    assert rec["key"] == "nq:7" and rec["correct"] == 1 and rec["prompt_tokens"] == 40
    assert rec["seconds"] >= 0 and rec["cpu_seconds"] >= 0 and isinstance(rec["load"], float)
    assert rec["prune"] == {"threshold": 0.14, "fallback": False, "tokens_read": 40, "tokens_saved": 60, "hops": 1}
    assert rec["score_full"] == 0.6
    json.dumps(rec)  # a JSONL line
