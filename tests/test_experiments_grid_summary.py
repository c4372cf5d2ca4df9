"""Summary rows: hand-computed values, agreement with verirag.metrics, intervals, small n, files."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from verirag.learned.threshold import ThresholdController, cross_fit_target
from verirag.metrics.awf import awf_scores, best_f1, best_f1_statistic, pr_auc, qpp_precision, qpp_recall, random_pr_auc
from verirag.metrics.stats import bootstrap_ci
from verirag.records import ResultRecord
from verirag_lab.experiments.grid.summary import CI_METRICS, group_records, summarize, write_summary

BOOT = {"bootstrap": {"n_resamples": 300, "confidence": 0.95, "seed": 0}}


def rec(
    i,
    score,
    A,
    C,
    *,
    method="vanilla+nli",
    dataset="nq",
    model="m",
    hard=False,
    error=None,
    abstained=0,
    seconds=0.0,
    pt=0,
    ct=0,
    group="",
):
    return ResultRecord(
        dataset=dataset,
        model=model,
        method=method,
        example_id=f"e{i:03d}",
        question="q",
        answer="a",
        score=float(score),
        hard=hard,
        answerable=int(A),
        correct=int(C),
        faithful=int(A and C),
        abstained=abstained,
        error=error,
        group=group,
        seconds=seconds,
        prompt_tokens=pt,
        completion_tokens=ct,
    )


# e0..e5 (score, A, C); e5 carries an error and so the score 0
HAND = [(0.9, 1, 1), (0.8, 1, 0), (0.6, 0, 0), (0.4, 1, 1), (0.2, 0, 1), (0.0, 1, 0)]


def hand_records():
    out = []
    for i, (s, A, C) in enumerate(HAND):
        out.append(
            rec(i, s, A, C, error="boom" if i == 5 else None, abstained=int(i == 2), seconds=float(i), pt=10 * i, ct=1)
        )
    return out


def test_summary_by_hand():
    [row] = summarize(hand_records(), {"threshold": {"value": 0.5}, **BOOT})
    # v = s >= 0.5: e0, e1, e2; TP = 1 (e0); Pred-Pos = 3; F-Answerable = 4 (e0, e1, e3, e5)
    assert row["n"] == 6 and row["n_errors"] == 1 and row["n_answerable"] == 4 and row["n_faithful"] == 2
    assert row["awf_precision"] == pytest.approx(1 / 3)
    assert row["awf_recall"] == pytest.approx(1 / 4)
    assert row["awf_f1"] == pytest.approx(2 / 7)  # 2 TP / (PP + NA)
    assert row["qpp_precision"] == pytest.approx(2 / 3)  # e0, e1 answerable among 3 answered
    assert row["qpp_recall"] == pytest.approx(2 / 4)
    # best F1 over thresholds: t=0.4 -> TP 2, PP 4 -> 2*2 / (4 + 4) = 0.5
    assert row["best_f1"] == pytest.approx(0.5)
    assert row["best_f1_threshold"] == 0.4
    assert (row["best_f1_precision"], row["best_f1_recall"]) == (pytest.approx(0.5), pytest.approx(0.5))
    # PR-AUC: (1/4 - 0) * 1 at t=0.9, + (2/4 - 1/4) * 2/4 at t=0.4
    assert row["pr_auc"] == pytest.approx(0.375)
    assert row["accuracy"] == pytest.approx(0.5)
    assert row["abstention_rate"] == pytest.approx(1 / 6)
    assert row["error_rate"] == pytest.approx(1 / 6)
    assert row["seconds_per_question"] == pytest.approx(2.5)  # mean of 0..5
    assert row["tokens_per_question"] == pytest.approx(26.0)  # mean of 10 i + 1
    assert row["answer_rate"] == pytest.approx(0.5)
    assert row["threshold"] == 0.5 and not row["threshold_cross_fitted"]
    assert "n=6" in row["notes"]


def random_records(n, seed=0, **kw):
    rng = np.random.default_rng(seed)
    A = rng.random(n) < 0.7
    C = rng.random(n) < np.where(A, 0.7, 0.2)
    s = np.clip(0.4 * (A & C) + rng.random(n) * 0.6, 0, 1).round(3)
    return [rec(i, s[i], A[i], C[i], **kw) for i in range(n)]


def test_summary_matches_metrics_functions():
    recs = random_records(300, seed=1)
    [row] = summarize(recs, {"threshold": {"value": 0.55}, **BOOT})
    s = np.array([r.score for r in recs])
    V = np.array([r.faithful for r in recs])
    A = np.array([r.answerable for r in recs])
    v = s >= 0.55
    ref = awf_scores(v, V, A)
    assert row["awf_precision"] == pytest.approx(ref.precision)
    assert row["awf_recall"] == pytest.approx(ref.recall)
    assert row["awf_f1"] == pytest.approx(ref.f1)
    assert row["qpp_precision"] == pytest.approx(qpp_precision(v, A))
    assert row["qpp_recall"] == pytest.approx(qpp_recall(v, A))
    assert row["best_f1"] == pytest.approx(best_f1(s, V, A).f1)
    assert row["pr_auc"] == pytest.approx(pr_auc(s, V, A))


def test_intervals_contain_estimate_and_equal_bootstrap_ci():
    recs = random_records(400, seed=2)
    [row] = summarize(recs, {"threshold": {"value": 0.5}, **BOOT})
    for m in CI_METRICS:
        assert row[f"{m}_low"] <= row[m] <= row[f"{m}_high"], m
        assert row[f"{m}_low"] < row[f"{m}_high"], m
    # one shared set of resamples, drawn as bootstrap_ci draws them for the same seed
    s = np.array([r.score for r in recs])
    V = np.array([r.faithful for r in recs])
    A = np.array([r.answerable for r in recs])
    b = bootstrap_ci(best_f1_statistic, s, V, A, n_resamples=300, seed=0)
    assert (row["best_f1_low"], row["best_f1_high"]) == (pytest.approx(b.low), pytest.approx(b.high))
    C = np.array([r.correct for r in recs], dtype=float)
    m = bootstrap_ci(lambda x: x.mean(axis=-1), C, n_resamples=300, seed=0, vectorized=True)
    assert (row["accuracy_low"], row["accuracy_high"]) == (pytest.approx(m.low), pytest.approx(m.high))


def test_twins_are_resampled_together():
    """A question asked twice (HotpotQA's twins share a group, and their labels differ) is one
    draw of the bootstrap: the intervals are those of a brute-force cluster bootstrap on the same
    draws of groups, and differ from the example bootstrap's."""
    import dataclasses

    from verirag.metrics.stats import percentile_interval, resample_indices

    first, second = random_records(80, seed=4), random_records(80, seed=9)
    twins = [
        dataclasses.replace(r, example_id=f"{r.example_id}/{t}", group=r.example_id)
        for a, b in zip(first, second)
        for t, r in (("a", a), ("b", b))
    ]
    cfg = {"threshold": {"value": 0.5}, **BOOT}
    [row] = summarize(twins, cfg)
    # brute force: groups in sorted order, each draw takes both twins
    C = np.array([r.correct for r in twins], dtype=float)
    brute = [
        C[[2 * g + k for g in draw for k in (0, 1)]].mean()
        for chunk in resample_indices(80, BOOT["bootstrap"]["n_resamples"], 0)
        for draw in chunk
    ]
    assert (row["accuracy_low"], row["accuracy_high"]) == pytest.approx(percentile_interval(brute))
    s = np.array([r.score for r in twins])
    V = np.array([r.faithful for r in twins])
    A = np.array([r.answerable for r in twins]) | V
    areas = [
        pr_auc(s[ix], V[ix], A[ix])
        for chunk in resample_indices(80, BOOT["bootstrap"]["n_resamples"], 0)
        for draw in chunk
        for ix in [[2 * g + k for g in draw for k in (0, 1)]]
    ]
    assert (row["pr_auc_low"], row["pr_auc_high"]) == pytest.approx(percentile_interval(areas))
    ungrouped = summarize([dataclasses.replace(r, group="") for r in twins], cfg)[0]
    assert (ungrouped["accuracy_low"], ungrouped["accuracy_high"]) != pytest.approx(
        (row["accuracy_low"], row["accuracy_high"])
    )


@pytest.mark.parametrize("n, F, A", [(50, 5, 10), (12, 3, 3), (400, 190, 280), (30, 1, 20)])
def test_random_pr_auc_is_the_mean_over_random_scores(n, F, A):
    """The closed form against simulation, small classes included (where it is well above the
    constant score's (F / n)(F / A))."""
    V = np.zeros(n, dtype=int)
    V[:F] = 1
    Aa = np.zeros(n, dtype=int)
    Aa[:A] = 1
    rng = np.random.default_rng(0)
    sim = np.mean([pr_auc(rng.random(n), V, Aa) for _ in range(4000)])
    assert random_pr_auc(F, A, n) == pytest.approx(sim, rel=0.03)
    assert random_pr_auc(F, A, n) >= (F / n) * (F / A) - 1e-12


def test_random_pr_auc_edge_cases_and_summary_column():
    assert math.isnan(random_pr_auc(0, 0, 5)) and random_pr_auc(0, 4, 5) == 0.0
    assert random_pr_auc(1, 1, 1) == 1.0
    recs = random_records(200, seed=7)
    [row] = summarize(recs, {"threshold": {"value": 0.5}, **BOOT})
    F, A = row["n_faithful"], row["n_answerable"]
    assert row["pr_auc_random"] == pytest.approx(random_pr_auc(F, A, 200))
    assert row["pr_auc"] > row["pr_auc_random"] + 0.05  # these scores carry signal
    [hard] = summarize(random_records(40, seed=8, hard=True), {"threshold": {"value": 0.5}, **BOOT})
    assert hard["pr_auc_random"] == pytest.approx(random_pr_auc(hard["n_faithful"], hard["n_answerable"], 40))
    nothing = [rec(i, 0.5, 0, 0) for i in range(5)]
    assert math.isnan(summarize(nothing, {"threshold": {"value": 0.5}, **BOOT})[0]["pr_auc_random"])


def test_hard_method_uses_its_label():
    recs = random_records(200, seed=3, method="intrinsic", hard=True)
    for r in recs:
        r.score = float(r.score >= 0.5)
    [row] = summarize(recs, BOOT)
    h = np.array([r.score for r in recs]).astype(int)
    V = np.array([r.faithful for r in recs])
    A = np.array([r.answerable for r in recs])
    ref = awf_scores(h, V, A)
    assert row["hard"] is True
    assert row["best_f1"] == pytest.approx(ref.f1)  # not a max over thresholds
    assert row["pr_auc"] == pytest.approx(pr_auc(h, V, A, hard=True))  # precision x recall
    assert row["pr_auc"] == pytest.approx(ref.precision * ref.recall)
    assert row["best_f1_low"] <= row["best_f1"] <= row["best_f1_high"]


def test_fitted_target_is_cross_fitted():
    recs = random_records(200, seed=4)
    for r in recs:
        r.group = f"g{int(r.example_id[1:]) // 2}"
    cfg = {"threshold": {"action_rate": 0.3}, **BOOT}
    [row] = summarize(recs, cfg)
    recs = group_records(recs)[("nq", "m", "vanilla+nli")]
    s = np.array([r.score for r in recs])
    V = np.array([r.faithful for r in recs])
    A = np.array([r.answerable for r in recs])
    kept = cross_fit_target(ThresholdController(action_rate=0.3), s, V, groups=[r.group for r in recs], seed=0)
    assert row["threshold_cross_fitted"] is True
    assert row["answer_rate"] == pytest.approx(kept.mean())
    assert row["awf_precision"] == pytest.approx(awf_scores(kept, V, A).precision)
    # the reported threshold is the fit on all rows, for deployment
    assert row["threshold"] == ThresholdController(action_rate=0.3).fit(s).threshold_
    assert row["threshold_rule"] == "action rate <= 0.3"


def test_tiny_cells_do_not_crash():
    four = [rec(i, s, A, C) for i, (s, A, C) in enumerate([(0.9, 1, 1), (0.1, 0, 0), (0.7, 1, 0), (0.3, 1, 1)])]
    [row] = summarize(four, BOOT)
    for m in CI_METRICS:
        assert row[f"{m}_low"] <= row[m] <= row[f"{m}_high"], m
    assert "n=4" in row["notes"]
    # some resamples draw no answerable example: PR-AUC is undefined there, left out and counted
    assert "pr_auc:" in row["notes"] and "resamples undefined" in row["notes"]
    # one example with a fitted target: no cross-fitting possible -> NaN threshold, said so
    [one] = summarize([four[0]], {"threshold": {"precision": 0.9}, **BOOT})
    assert math.isnan(one["threshold"]) and "no cross-fitted threshold" in one["notes"]
    assert one["answer_rate"] == 0.0


def test_nothing_answerable_gives_nan_pr_auc_clearly():
    recs = [rec(i, s, 0, 0) for i, s in enumerate([0.2, 0.5, 0.9])]
    [row] = summarize(recs, BOOT)
    assert math.isnan(row["pr_auc"]) and math.isnan(row["pr_auc_low"]) and math.isnan(row["pr_auc_high"])
    assert "nothing answerable" in row["notes"]


def test_rows_sorted_per_cell_and_order_independent():
    recs = (
        random_records(60, seed=5)
        + random_records(60, seed=6, method="vanilla")
        + random_records(60, seed=7, dataset="hotpot")
    )
    rows = summarize(recs, BOOT)
    assert [(r["dataset"], r["method"]) for r in rows] == [
        ("hotpot", "vanilla+nli"),
        ("nq", "vanilla"),
        ("nq", "vanilla+nli"),
    ]
    again = summarize(list(reversed(recs)), BOOT)
    assert [r["best_f1_low"] for r in rows] == [r["best_f1_low"] for r in again]


def test_write_summary(tmp_path):
    rows = summarize([rec(i, s, 0, 0) for i, s in enumerate([0.2, 0.9])] + random_records(30, method="x"), BOOT)
    c, j = write_summary(rows, tmp_path)
    data = json.loads(j.read_text())  # strict JSON: NaN became null
    assert len(data) == 2 and data[0]["pr_auc"] is None
    with open(c, newline="") as f:
        lines = list(csv.DictReader(f))
    assert len(lines) == 2 and set(lines[0]) == set(rows[0])
    assert lines[0]["pr_auc"] == "nan"


def test_costs_full_shared_and_spent():
    from verirag_lab.experiments.grid.summary import spent_by_unit

    a, b = (
        rec(0, 0.9, 1, 1, method="vanilla", pt=100, ct=5),
        rec(0, 0.9, 1, 1, method="vanilla+llm_judge", pt=200, ct=5),
    )
    # vanilla generated (half of it from the request cache); the judge method found that generation
    a.spent = {
        "calls": 1,
        "cache_hits": 1,
        "prompt_tokens": 100,
        "completion_tokens": 5,
        "cached_prompt_tokens": 100,
        "cached_completion_tokens": 5,
    }
    b.spent = {
        "calls": 1,
        "cache_hits": 0,
        "prompt_tokens": 100,
        "completion_tokens": 0,
        "cached_prompt_tokens": 0,
        "cached_completion_tokens": 0,
    }
    a.details, b.details = (
        {"shared": {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}},
        {"shared": {"calls": 1, "prompt_tokens": 100, "completion_tokens": 5}},
    )
    old = rec(1, 0.5, 1, 1, method="vanilla", pt=7, ct=1)  # a record written before costs were attributed
    rows = {r["method"]: r for r in summarize([a, b, old], BOOT)}
    assert rows["vanilla+llm_judge"]["tokens_per_question"] == 205
    assert rows["vanilla+llm_judge"]["shared_tokens_per_question"] == 105
    assert rows["vanilla+llm_judge"]["spent_tokens_per_question"] == 100
    assert rows["vanilla"]["spent_tokens_per_question"] == 0  # all of it from the cache; `old` has none
    (unit,) = spent_by_unit([a, b, old])
    assert (unit["records"], unit["calls"], unit["cache_hits"]) == (3, 2, 1)
    assert (unit["tokens_read"], unit["tokens_from_cache"], unit["records_without_spent"]) == (100, 105, 1)


def pruned(r, read, saved):
    """`r` with the prune report a pruned run's record carries (only the totals the summary reads)."""
    r.details = {
        "prune": {"threshold": 0.4, "fallback": False, "passages": [], "tokens_read": read, "tokens_saved": saved}
    }
    return r


def test_tokens_read_and_saved_by_pruning():
    from verirag_lab.experiments.grid.summary import PRUNE_COLUMNS

    recs = [pruned(rec(0, 0.9, 1, 1, pt=300), 100, 300), pruned(rec(1, 0.2, 1, 0, pt=200), 50, 350)]
    recs += [rec(i, 0.5, 1, 1, method="vanilla", dataset="nq") for i in range(2)]  # pruning off
    recs += [pruned(rec(0, 0.5, 1, 1, dataset="hotpotqa"), 20, 0), rec(1, 0.5, 1, 1, dataset="hotpotqa")]
    rows = {(r["dataset"], r["method"]): r for r in summarize(recs, BOOT)}
    on = rows["nq", "vanilla+nli"]
    assert on["prune_tokens_read_per_question"] == 75 and on["prune_tokens_saved_per_question"] == 325
    assert on["prune_saved_share"] == pytest.approx(650 / 800)
    assert on["tokens_per_question"] == 250  # the cost columns stay what the method read, pruned
    off = rows["nq", "vanilla"]
    assert all(math.isnan(off[c]) for c in PRUNE_COLUMNS)  # absent, never 0
    mixed = rows["hotpotqa", "vanilla+nli"]  # means over the pruned records only, and said
    assert mixed["prune_tokens_read_per_question"] == 20 and mixed["prune_saved_share"] == 0
    assert "pruning: 1/2 records were not pruned" in mixed["notes"]
    assert list(on)[-4:] == [*PRUNE_COLUMNS, "notes"]  # beside the cost columns
