"""Paired method comparisons (experiments.grid.comparisons) and their place in the report."""

from __future__ import annotations

import json

import numpy as np
import pytest

from verirag.records import ResultRecord, ResultStore
from verirag_lab.experiments.grid.comparisons import compare_methods, parse_pair
from verirag_lab.experiments.grid.summary import summarize_cell, threshold_target

BOOT = {"n_resamples": 300, "confidence": 0.95, "seed": 0}


def records(method: str, n: int, *, signal: float, seed: int, hard: bool = False, skip=()):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        faithful = int(rng.random() < 0.5)
        score = float(np.clip(signal * faithful + (1 - signal) * rng.random(), 0, 1))
        if i in skip:  # after the draws: the other examples keep their labels
            continue
        out.append(
            ResultRecord(
                dataset="nq",
                model="m",
                method=method,
                example_id=f"e{i:03d}",
                question="q",
                answer="a",
                score=float(score >= 0.5) if hard else score,
                hard=hard,
                answerable=1,
                correct=faithful,
                faithful=faithful,
            )
        )
    return out


def test_the_difference_is_the_two_summaries_apart_on_the_shared_examples():
    a = records("vanilla+pre_answering", 80, signal=0.2, seed=1, skip={5})
    b = records("vanilla+nli", 80, signal=0.7, seed=1)  # same labels (same seed), a sharper score
    (row,) = compare_methods(a + b, [("vanilla+pre_answering", "vanilla+nli")], BOOT)
    assert row["n"] == 79 and row["only_one"] == 1  # e005 has no baseline record: left out, counted
    shared_b = [r for r in b if r.example_id != "e005"]
    target = threshold_target({"threshold": {"value": 0.5}})
    sa, sb = summarize_cell(a, target, BOOT), summarize_cell(shared_b, target, BOOT)
    for m in ("best_f1", "pr_auc", "accuracy"):
        assert row[f"{m}_diff"] == pytest.approx(sb[m] - sa[m])
        assert row[f"{m}_baseline"] == pytest.approx(sa[m]) and row[f"{m}_method"] == pytest.approx(sb[m])
        assert row[f"{m}_diff_low"] <= row[f"{m}_diff"] <= row[f"{m}_diff_high"]
    assert row["pr_auc_diff_low"] > 0  # a much sharper score on the same answers: told apart
    assert row["accuracy_diff"] == 0 and row["accuracy_diff_low"] == row["accuracy_diff_high"] == 0


def test_each_method_is_scored_on_its_own_labels():
    a = records("vanilla", 60, signal=0.4, seed=7)
    b = records("instructrag", 60, signal=0.4, seed=8)  # other answers: other faithful / correct labels
    assert [r.faithful for r in a] != [r.faithful for r in b]
    (row,) = compare_methods(a + b, [("vanilla", "instructrag")], BOOT)
    target = threshold_target({"threshold": {"value": 0.5}})
    sa, sb = summarize_cell(a, target, BOOT), summarize_cell(b, target, BOOT)
    for m in ("best_f1", "pr_auc", "accuracy"):
        assert row[f"{m}_baseline"] == pytest.approx(sa[m]) and row[f"{m}_method"] == pytest.approx(sb[m])
        assert row[f"{m}_diff"] == pytest.approx(sb[m] - sa[m])


def test_a_method_against_itself_is_exactly_zero_and_absent_pairs_are_skipped():
    a = records("vanilla+nli", 40, signal=0.5, seed=2)
    rows = compare_methods(a, [("vanilla+nli", "vanilla+nli"), ("vanilla", "instructrag")], BOOT)
    (row,) = rows
    for m in ("best_f1", "pr_auc"):
        assert row[f"{m}_diff"] == row[f"{m}_diff_low"] == row[f"{m}_diff_high"] == 0


def test_hard_methods_compare_by_their_label():
    a = records("vanilla", 60, signal=0.1, seed=3, hard=True)
    b = records("intrinsic", 60, signal=0.9, seed=3, hard=True)
    (row,) = compare_methods(a + b, [("vanilla", "intrinsic")], BOOT)
    target = threshold_target({"threshold": {"value": 0.5}})
    assert row["best_f1_diff"] == pytest.approx(
        summarize_cell(b, target, BOOT)["best_f1"] - summarize_cell(a, target, BOOT)["best_f1"]
    )


def test_pairs_are_baseline_colon_method():
    assert parse_pair(" vanilla : instructrag ") == ("vanilla", "instructrag")
    for bad in ("vanilla", ":x", "x:", ""):
        with pytest.raises(ValueError, match="BASELINE:METHOD"):
            parse_pair(bad)


def test_report_tables_the_default_and_the_asked_comparisons(tmp_path):
    from verirag.cli import main

    store = ResultStore(tmp_path)
    for r in (
        records("vanilla", 30, signal=0.3, seed=4, hard=True)
        + records("instructrag", 30, signal=0.6, seed=4, hard=True)
        + records("vanilla+nli", 30, signal=0.5, seed=4)
    ):
        store.append(r)
    (tmp_path / "run.json").write_text(json.dumps({"threshold": {"value": 0.5}, "bootstrap": BOOT}))
    assert main(["report", str(tmp_path), "--compare", "vanilla:vanilla+nli", "--compare", "vanilla:cot_hybrid"]) == 0
    got = json.loads((tmp_path / "comparisons.json").read_text())
    assert {(c["baseline"], c["method"]) for c in got} == {("vanilla", "instructrag"), ("vanilla", "vanilla+nli")}
    table = (tmp_path / "tables" / "comparisons.md").read_text()
    assert "instructrag+trivial | vanilla+trivial | 30" in table
    assert "vanilla:cot_hybrid" in (tmp_path / "report.html").read_text()  # asked for, not in the run: said
    tex = (tmp_path / "tables" / "comparisons.tex").read_text()
    assert "Δ" not in tex and r"$\Delta$" in tex  # pdflatex takes it
    assert main(["report", str(tmp_path), "--compare", "vanilla"]) != 0


def test_twins_are_resampled_together():
    """Each question asked twice (HotpotQA's twins, one group): resampling groups draws both or
    neither, so every resample is the single-copy resample doubled, and every number is the
    single-copy one. Resampling examples would split twins and give other intervals."""
    import dataclasses

    single = records("vanilla", 50, signal=0.3, seed=5, hard=True) + records("vanilla+nli", 50, signal=0.6, seed=6)
    twins = [
        dataclasses.replace(r, example_id=f"{r.example_id}/{t}", group=r.example_id) for r in single for t in ("a", "b")
    ]
    pair = [("vanilla", "vanilla+nli")]
    (one,), (two,) = compare_methods(single, pair, BOOT), compare_methods(twins, pair, BOOT)
    assert two["n"] == 100 and one["n"] == 50
    for k in ("best_f1_diff", "best_f1_diff_low", "best_f1_diff_high", "pr_auc_diff_low", "pr_auc_diff_high"):
        assert two[k] == pytest.approx(one[k]), k
    # groups of different sizes (one question without its twin) take the row-by-row path
    (mixed,) = compare_methods(twins[:-1], pair, BOOT)  # vanilla+nli's last twin is gone
    assert mixed["n"] == 99 and mixed["best_f1_diff_low"] <= mixed["best_f1_diff"] <= mixed["best_f1_diff_high"]
