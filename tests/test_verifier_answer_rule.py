"""The verifier's answer rule: an answer's score is the smooth minimum of its claims' logits
(`verirag.learned.verifier.answer_logit`), so a changed sentence lowers it even where another sentence
is weaker; `softmin=0` is the plain minimum the stacks were fitted on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from benchmark_module import load_benchmark
from scipy.special import logsumexp

from verirag import Verifier
from verirag.awf.compose import build_predictor
from verirag.awf.predictors.verifier import DEFAULT_SOFTMIN
from verirag.errors import InputError
from verirag.learned.verifier import answer_logit


@pytest.mark.parametrize("t", [0.1, 0.25, 1.0])
def test_the_smooth_minimum_is_scipys_and_never_above_the_weakest_claim(t):
    rng = np.random.default_rng(0)
    for _ in range(50):
        z = rng.normal(0, 3, size=int(rng.integers(2, 6)))
        got = answer_logit(z, t)
        assert got == pytest.approx(-t * logsumexp(-z / t), abs=1e-9)
        assert got <= z.min()


def test_one_claim_or_no_temperature_is_the_plain_minimum():
    assert answer_logit([1.7], 0.25) == 1.7
    assert answer_logit([2.0, -1.0, 3.0], 0.0) == -1.0
    assert answer_logit([2.0, -np.inf], 0.25) == -np.inf  # a claim nothing supports stays unsupported


def test_a_changed_claim_moves_the_score_where_the_minimum_ties():
    right, changed = [-2.0, 3.0], [-2.0, 0.5]  # the weak first claim is the minimum of both
    assert answer_logit(right, 0.0) == answer_logit(changed, 0.0)
    assert answer_logit(right, DEFAULT_SOFTMIN) > answer_logit(changed, DEFAULT_SOFTMIN)
    assert answer_logit([40.0, 1e4], 0.25) == pytest.approx(40.0)  # no overflow far from the minimum


@pytest.mark.parametrize("bad", [-0.1, float("inf"), float("nan")])
def test_a_temperature_below_zero_or_not_finite_is_refused(bad):
    with pytest.raises(InputError, match="softmin"):
        answer_logit([0.0, 1.0], bad)
    with pytest.raises(InputError, match="softmin"):
        build_predictor("verifier", None, options={"softmin": bad})
    with pytest.raises(InputError, match="without a claim"):
        answer_logit([], 0.25)


def test_the_shipped_verifier_sees_a_negated_sentence_in_a_long_answer_only_with_the_smooth_minimum():
    # invented facts: the answer's second sentence is unsupported (the minimum), its first is the
    # one the negation changes; with the plain minimum the two answers tie
    passages = [
        "Tamsin Orrel founded the Velloway Press in 1903 in the harbour town of Quell.",
        "Bruno Faskett, a printer from Quell, later ran the Velloway Press's rival, the Gull Street Print.",
    ]
    q = "Who founded the Velloway Press?"
    right = "Tamsin Orrel founded the Velloway Press. She also painted the lighthouse at Varn."
    negated = "Tamsin Orrel did not found the Velloway Press. She also painted the lighthouse at Varn."
    rows = [{"question": q, "answer": a, "contexts": passages} for a in (right, negated)]
    smooth = [r.score for r in Verifier().verify_many(rows)]
    plain = [r.score for r in Verifier("vanilla+verifier(softmin=0)").verify_many(rows)]
    assert plain[0] == pytest.approx(plain[1], abs=1e-12)  # the weak second sentence decides both
    assert smooth[0] > smooth[1]
    assert max(smooth) <= max(plain) + 1e-12  # never above the weakest sentence's support


def _bench():
    return load_benchmark("verifier_answer_rule")


def test_the_benchmark_tables_follow_the_logits_they_read():
    bench = _bench()
    # two questions; the changed pair ties under the minimum and not under the smooth minimum
    lines = [
        {"set": "s", "id": "a", "group": "g1", "label": 1, "logits": [2.0]},
        {"set": "s", "id": "b", "group": "g1", "label": 0, "logits": [-1.0, 3.0]},
        {"set": "s", "id": "c", "group": "g2", "label": 1, "logits": [1.0, 1.5]},
        {"set": "s", "id": "d", "group": "g2", "label": 0, "logits": None},  # unread: left out alike
        {"set": "pairs", "id": "a", "kind": "party", "right": [-2.0, 3.0], "changed": [-2.0, -1.0]},
        {"set": "pairs", "id": "e", "kind": "party", "right": [1.0], "changed": None},
    ]
    aurocs = {(r["set"], r["softmin"]): r for r in bench.auroc_table(lines, resamples=50)}
    assert aurocs[("s", 0.0)]["n"] == 3 and aurocs[("s", 0.0)]["auroc"] == 1.0
    pairs = {(r["subset"], r["softmin"]): r for r in bench.pairs_table(lines)}
    assert pairs[("all", 0.0)]["pairs"] == 1 and pairs[("all", 0.0)]["above"] == 0.0
    assert pairs[("several claims", 0.25)]["above"] == 1.0


def test_the_committed_logits_show_the_default_rule_ranking_as_the_minimum_and_seeing_more_changes():
    """The default's temperature was chosen on these numbers (docs/results/verifier.md): no set's
    AUROC moves by more than 0.005 from the plain minimum's, and every kind of changed pair is seen
    more often."""
    from pathlib import Path

    bench = _bench()
    path = Path(__file__).resolve().parents[1] / "data" / "verifier" / "answer_rule" / "verifier-shipped.jsonl"
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    aurocs = bench.auroc_table(lines, resamples=200)
    at = {(r["set"], r["softmin"]): r["auroc"] for r in aurocs}
    sets = {r["set"] for r in aurocs}
    assert {"dev HotpotQA", "dev TopiOCQA", "own HotpotQA", "own NQ", "own follow-ups"} <= sets
    for s in sets:
        assert abs(at[(s, DEFAULT_SOFTMIN)] - at[(s, 0.0)]) <= 0.005, s
    above = {(r["kind"], r["subset"], r["softmin"]): r["above"] for r in bench.pairs_table(lines)}
    for kind in ("number", "party", "negation"):
        assert above[(kind, "all", DEFAULT_SOFTMIN)] > above[(kind, "all", 0.0)], kind
