"""benchmarks/candidate_rule.py: a verifier candidate judged by the rule written before training
(no paired interval of candidate minus shipped wholly below 0 on the dev set and the man pages),
on made-up scores: its AUROCs are scikit-learn's, a candidate equal to the base passes, a clearly
worse one is refused and the reason names the set, and the party condition is applied when asked."""

from __future__ import annotations

import numpy as np
from benchmark_module import load_benchmark
from sklearn.metrics import roc_auc_score

rule = load_benchmark("candidate_rule")


def made_up(n_groups: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    groups = [f"q{i // 2}" for i in range(2 * n_groups)]
    y = rng.integers(0, 2, len(groups))
    good = y + rng.normal(0, 0.8, len(y))
    noise = rng.normal(0, 0.8, len(y))
    return y, groups, good, noise


def test_the_aurocs_are_scikit_learns_and_the_difference_is_paired():
    y, groups, good, noise = made_up()
    r = rule.paired_auroc(y, groups, good, noise, resamples=200)
    assert np.isclose(r["candidate"], roc_auc_score(y, good)) and np.isclose(r["base"], roc_auc_score(y, noise))
    assert np.isclose(r["difference"], r["candidate"] - r["base"])
    lo, hi = r["interval"]
    assert 0 < lo <= r["difference"] <= hi  # a real signal against noise
    same = rule.paired_auroc(y, groups, good, good, resamples=200)
    assert same["difference"] == 0 and same["interval"] == [0.0, 0.0]


def test_the_verdict_refuses_a_candidate_shown_below_on_a_deciding_set_only():
    y, groups, good, noise = made_up()
    worse = {"set": "man pages", **rule.paired_auroc(y, groups, noise, good, resamples=200)}
    level = {"set": "dev, every answer", **rule.paired_auroc(y, groups, good, good, resamples=200)}
    assert rule.verdict([level]) == (True, [])
    ok, why = rule.verdict([level, worse])
    assert not ok and len(why) == 1 and why[0].startswith("man pages")
    reported = {**worse, "set": "dev, topiocqa"}  # not a deciding set: reported only
    assert rule.verdict([level, reported])[0]
    flat_party = {"kind": "party", "difference": 0.0, "interval": [-0.02, 0.03]}
    ok, why = rule.verdict([level], party=flat_party)
    assert not ok and "changed parties" in why[0]
    assert rule.verdict([level], party={**flat_party, "interval": [0.01, 0.05]})[0]


def test_every_set_shown_below_is_named_deciding_or_not():
    rows = [
        {"set": "dev, every answer", "interval": [-0.02, 0.01]},
        {"set": "dev, topiocqa", "interval": [-0.09, -0.01]},
        {"kind": "party", "interval": [-0.2, -0.1]},
    ]
    assert rule.shown_below(rows) == ["dev, topiocqa", "party"]
