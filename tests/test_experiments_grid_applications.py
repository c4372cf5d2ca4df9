"""No-RAG fallback and switch-to-larger-model on hand-made records."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from verirag.records import ResultRecord
from verirag_lab.experiments.grid.applications import no_rag_fallback, pair_records, switch_to_larger


def rec(i, score, correct, *, A=1, method="m", group=""):
    return ResultRecord(
        dataset="d",
        model="x",
        method=method,
        example_id=f"e{i}",
        question="q",
        answer="a",
        score=float(score),
        hard=False,
        answerable=A,
        correct=correct,
        faithful=int(A and correct),
        group=group,
    )


# --------------------------------------------------------------------------- pairing
def test_pairing_reports_unpaired_ids():
    p = pair_records([rec(0, 0, 0), rec(1, 0, 0), rec(2, 0, 0)], [rec(1, 0, 0), rec(2, 0, 0), rec(7, 0, 0)])
    assert p.n == 2 and [r.example_id for r in p.left] == ["e1", "e2"]
    assert p.unpaired_left == ["e0"] and p.unpaired_right == ["e7"]
    with pytest.raises(ValueError, match="twice"):
        pair_records([rec(0, 0, 0), rec(0, 1, 0)], [])


# --------------------------------------------------------------------------- fallback
def test_fallback_curve_by_hand():
    # score, RAG correct, no-RAG correct
    rag = [rec(0, 0.9, 1), rec(1, 0.2, 0, A=0), rec(2, 0.8, 1), rec(3, 0.1, 0, A=0), rec(4, 0.5, 0)]
    norag = [rec(0, 0, 0), rec(1, 0, 1), rec(2, 0, 0), rec(3, 0, 1), rec(5, 0, 1)]
    r = no_rag_fallback(rag, norag, folds=2, seed=0, n_resamples=200)
    assert r.n == 4
    assert r.unpaired_rag == ["e4"] and r.unpaired_norag == ["e5"]
    # thresholds ascending: 0.1 (none falls back) ... inf (all fall back)
    assert r.thresholds.tolist() == [0.1, 0.2, 0.8, 0.9, math.inf]
    assert r.fallback_rate.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    # t=0.2: e3 falls back (no-RAG right) -> 3/4; t=0.8: e1, e3 fall back -> 4/4; t=0.9: e2 lost -> 3/4
    assert r.accuracy.tolist() == [0.5, 0.75, 1.0, 0.75, 0.5]
    assert r.rag_accuracy == 0.5 and r.norag_accuracy == 0.5 and r.oracle_accuracy == 1.0
    assert (r.best_accuracy, r.best_fallback_rate, r.best_threshold) == (1.0, 0.5, 0.8)
    assert r.rag_accuracy_fallen[2] == 0.0 and r.norag_accuracy_fallen[2] == 1.0
    assert math.isnan(r.rag_accuracy_fallen[0])
    assert r.cv_folds == 2 and len(r.cv_thresholds) == 2
    assert r.cv_gain == pytest.approx(r.cv_accuracy - r.rag_accuracy)
    assert r.cv_gain_low <= r.cv_gain <= r.cv_gain_high
    json.dumps(r.to_dict(), allow_nan=False)


def test_fallback_perfect_scores_reach_the_maximum():
    rng = np.random.default_rng(0)
    n = 300
    c_rag = (rng.random(n) < 0.6).astype(int)
    c_norag = (rng.random(n) < 0.5).astype(int)
    s = c_rag.astype(float)  # a perfect score: 1 exactly when the RAG answer is right
    rag = [rec(i, s[i], c_rag[i]) for i in range(n)]
    norag = [rec(i, 0, c_norag[i]) for i in range(n)]
    r = no_rag_fallback(rag, norag, folds=5, seed=0, n_resamples=200)
    best = np.maximum(c_rag, c_norag).mean()
    assert r.best_accuracy == pytest.approx(best) == pytest.approx(r.oracle_accuracy)
    assert r.cv_accuracy == pytest.approx(best)  # every fold learns to fall back exactly on score 0
    assert r.cv_fallback_rate == pytest.approx(1 - c_rag.mean())
    assert r.accuracy[0] == pytest.approx(c_rag.mean()) and r.accuracy[-1] == pytest.approx(c_norag.mean())
    # gains only where RAG was wrong: answerable / unanswerable split both computed
    assert r.cv_gain > 0 and r.cv_gain_low > 0


def test_fallback_answerable_split():
    # answerable: RAG right; unanswerable: RAG wrong and no-RAG right; scores separate them
    rag = [rec(i, 0.9, 1, A=1) for i in range(10)] + [rec(10 + i, 0.1, 0, A=0) for i in range(10)]
    norag = [rec(i, 0, 0) for i in range(10)] + [rec(10 + i, 0, 1) for i in range(10)]
    r = no_rag_fallback(rag, norag, folds=5, seed=0, n_resamples=100)
    assert r.cv_gain_answerable == 0.0 and r.cv_gain_unanswerable == 1.0
    assert r.n_answerable == 10


def test_fallback_errors():
    with pytest.raises(ValueError, match="no example is in both"):
        no_rag_fallback([rec(0, 0.5, 1)], [rec(1, 0, 1)])
    # one example (one group): the curve exists, the CV point does not, and says why
    r = no_rag_fallback([rec(0, 0.5, 1)], [rec(0, 0, 0)], n_resamples=50)
    assert math.isnan(r.cv_accuracy) and "no cross-validated point" in r.notes
    json.dumps(r.to_dict(), allow_nan=False)


def test_fallback_folds_keep_groups():
    rng = np.random.default_rng(1)
    n = 40
    rag = [rec(i, rng.random(), int(rng.random() < 0.5), group=f"g{i // 4}") for i in range(n)]
    norag = [rec(i, 0, int(rng.random() < 0.5)) for i in range(n)]
    r = no_rag_fallback(rag, norag, folds=5, seed=0, n_resamples=50)
    assert r.cv_folds == 5 and not math.isnan(r.cv_accuracy)


# --------------------------------------------------------------------------- switch
def test_switch_by_hand_with_ties():
    # scores ascending: 0.1 (gain +1), 0.5 tie (gains +1 and -1 -> 0 each in expectation), 0.9 (0)
    small = [rec(0, 0.9, 1), rec(1, 0.1, 0), rec(2, 0.5, 0), rec(3, 0.5, 1)]
    large = [rec(0, 0, 1), rec(1, 0, 1), rec(2, 0, 1), rec(3, 0, 0)]
    r = switch_to_larger(small, large, rate=0.5)
    assert r.switch_rate.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert r.accuracy.tolist() == pytest.approx([0.5, 0.75, 0.75, 0.75, 0.75])
    assert (r.small_accuracy, r.large_accuracy) == (0.5, 0.75)
    assert r.achieved_rate == 0.5 and r.accuracy_at_rate == 0.75
    assert r.random_at_rate == pytest.approx(0.5 * 0.5 + 0.5 * 0.75)
    assert r.gain_over_random == pytest.approx(0.125)
    assert r.oracle_at_rate == pytest.approx(1.0)  # switch e1 and e2
    assert r.random_curve()[[0, -1]].tolist() == [0.5, 0.75]
    json.dumps(r.to_dict(), allow_nan=False)


def test_switch_perfect_ranking_equals_oracle_and_rate_is_floored():
    rng = np.random.default_rng(2)
    n = 101
    cs = (rng.random(n) < 0.5).astype(int)
    cl = (rng.random(n) < 0.7).astype(int)
    s = 1.0 - (cl - cs + 1) / 3 + rng.random(n) * 1e-3  # larger gain -> lower score
    r = switch_to_larger([rec(i, s[i], cs[i]) for i in range(n)], [rec(i, 0, cl[i]) for i in range(n)], 0.2)
    assert r.achieved_rate == pytest.approx(20 / 101)  # floor(0.2 * 101) = 20 switched
    assert r.accuracy_at_rate == pytest.approx(r.oracle_at_rate)
    assert r.accuracy[0] == pytest.approx(cs.mean()) and r.accuracy[-1] == pytest.approx(cl.mean())


def test_switch_hard_label_is_random_within_its_groups():
    # a hard label: 0 on 4 examples, 1 on 4; inside each group the curve is linear
    cs = [0, 0, 1, 1, 1, 1, 0, 1]
    cl = [1, 1, 0, 1, 1, 1, 1, 0]
    s = [0, 0, 0, 0, 1, 1, 1, 1]
    r = switch_to_larger([rec(i, s[i], cs[i]) for i in range(8)], [rec(i, 0, cl[i]) for i in range(8)], 0.25)
    # group 0 gains: +1 +1 -1 0 -> mean 0.25 per switch; group 1: 0 0 +1 -1 -> 0
    assert np.diff(r.accuracy).tolist() == pytest.approx([0.25 / 8] * 4 + [0.0] * 4)


def test_switch_unpaired_and_errors():
    r = switch_to_larger([rec(0, 0.1, 0), rec(1, 0.2, 1)], [rec(1, 0, 1), rec(2, 0, 1)], 0.5)
    assert r.n == 1 and r.unpaired_small == ["e0"] and r.unpaired_large == ["e2"]
    with pytest.raises(ValueError):
        switch_to_larger([rec(0, 0.1, 0)], [rec(1, 0, 1)])
    with pytest.raises(ValueError):
        switch_to_larger([rec(0, 0.1, 0)], [rec(0, 0, 1)], rate=1.5)
