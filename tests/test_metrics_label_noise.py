"""The label-noise estimates against simulation (numpy draws, scikit-learn's AUROC as the reference)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from verirag_lab.label_noise import auroc_ceiling, flip_rate_from_disagreement


@pytest.mark.parametrize("e", [0.0, 0.05, 0.2, 0.35])
def test_flip_rate_inverts_the_disagreement_of_two_noisy_copies(e):
    rng = np.random.default_rng(0)
    truth = rng.random(200_000) < 0.7
    copies = [truth ^ (rng.random(truth.size) < e) for _ in range(2)]
    d = float(np.mean(copies[0] != copies[1]))
    assert flip_rate_from_disagreement(d) == pytest.approx(e, abs=0.01)


@pytest.mark.parametrize(("pi", "e"), [(0.5, 0.0), (0.85, 0.05), (0.85, 0.2), (0.6, 0.3)])
def test_ceiling_is_a_perfect_judges_auroc_against_flipped_labels(pi, e):
    rng = np.random.default_rng(1)
    truth = rng.random(200_000) < pi
    observed = truth ^ (rng.random(truth.size) < e)
    simulated = roc_auc_score(observed, truth.astype(float))  # the perfect judge: the true label
    assert auroc_ceiling(float(observed.mean()), e) == pytest.approx(simulated, abs=0.005)


def test_edges():
    assert flip_rate_from_disagreement(0.6) == 0.5 and auroc_ceiling(0.7, 0.5) == 0.5
    assert auroc_ceiling(0.5, 0.0) == 1.0
    assert math.isnan(auroc_ceiling(0.1, 0.3))  # 10% observed correct cannot come from 30% flips
    with pytest.raises(ValueError):
        flip_rate_from_disagreement(1.5)
    with pytest.raises(ValueError):
        auroc_ceiling(1.0, 0.1)


def _row(q: int, model: str, response: str, label: int) -> dict:
    return {"id": f"ds:{q}:{model}", "group": f"ds:{q}", "response": response, "label": label}


def test_dev_label_noise_counts_equal_answers_with_opposite_labels():
    from benchmark_module import load_benchmark

    noise = load_benchmark("dev_label_noise")
    rows = [
        _row(1, "a", "20 October 1980.", 0),
        _row(1, "b", "20 october 1980", 1),  # the same words: a pair, opposite labels
        _row(1, "c", "In 1981", 1),
        _row(2, "a", "Harvey", 1),
        _row(2, "b", '"Harvey"', 1),  # a pair, same labels
        _row(2, "c", "", 0),
        _row(2, "d", "", 1),  # empty answers are never a pair
    ]
    pairs = noise.repeated_answer_pairs(rows)
    assert [len(pairs[g]) for g in ("ds:1", "ds:2")] == [1, 1]
    s = noise.noise_summary(rows, resamples=50)
    assert (s["pairs"], s["disagreeing_pairs"]) == (2, 1)
    assert s["disagreement"]["value"] == pytest.approx(0.5) and s["flip_rate"]["value"] == 0.5
    assert s["auroc_ceiling"]["value"] == 0.5 and s["zero_label_by_model"] == {"a": 1}
