"""verirag's own ROUGE-L and Learn-then-Test precision thresholds against the field's reference code
on the same inputs: `rouge-score` (the package behind the instruct-qa and Fraunhofer numbers) and
MAPIE's `BinaryClassificationController` (precision risk, Bonferroni, the same delta and grid).

Where they differ, and why: MAPIE's LTT p-value is Hoeffding-Bentkus, min(Hoeffding, e * binomial
tail); verirag's is the exact binomial tail, never larger. So at the same level every threshold MAPIE
certifies verirag certifies too; verirag can certify more on small calibration sets (where the
factor e matters), and on large ones the two agree."""

from __future__ import annotations

import numpy as np
import pytest

from verirag.learned.threshold import precision_guarantee_threshold
from verirag.metrics.qa import rouge_l, rouge_l_batch

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
risk_control = pytest.importorskip("mapie.risk_control")

PAIRS = [
    ("The bridge in Varnholt is painted green every spring.", "the bridge is painted green"),
    ("Three mills stand beside the river.", "three mills"),
    ("Paris is the capital of France", "The capital of France is Paris"),
    ("a b c d e f", "f e d c b a"),
    ("Ola Halvorsen kept the lighthouse until 1961", "Ola Halvorsen"),
    ("nothing in common here", "completely different words"),
    ("The the the cat", "the cat the the"),
]


@pytest.mark.parametrize("prediction, reference", PAIRS)
def test_rouge_l_equals_rouge_score(prediction, reference):
    # rouge-score's default tokenizer lowercases and keeps [a-z0-9]; ours also drops articles and
    # punctuation (SQuAD normalisation), so compare on text without articles
    def strip(t):
        return " ".join(w for w in t.split() if w.lower() not in {"a", "an", "the"})

    p, r = strip(prediction), strip(reference)
    ref = rouge_scorer.RougeScorer(["rougeL"]).score(r, p)["rougeL"].fmeasure
    assert rouge_l(p, [r]) == pytest.approx(ref, abs=1e-12)
    assert rouge_l_batch([p], [[r]])[0] == pytest.approx(ref, abs=1e-12)


def test_rouge_l_on_random_texts_equals_rouge_score():
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(12)]
    scorer = rouge_scorer.RougeScorer(["rougeL"])
    for _ in range(300):
        p = " ".join(rng.choice(vocab, rng.integers(1, 15)))
        r = " ".join(rng.choice(vocab, rng.integers(1, 15)))
        assert rouge_l(p, [r]) == pytest.approx(scorer.score(r, p)["rougeL"].fmeasure, abs=1e-12)


class _Proba:
    def predict_proba(self, x):
        x = np.asarray(x, float).ravel()
        return np.stack([1 - x, x], axis=1)


def _mapie_certified(scores, labels, target, delta, grid) -> set[float]:
    c = risk_control.BinaryClassificationController(
        _Proba().predict_proba,
        "precision",
        target,
        confidence_level=1 - delta,
        list_predict_params=grid,
        fwer_method="bonferroni",
    )
    c.calibrate(scores, labels)
    return {round(float(t), 6) for t in np.asarray(c.valid_predict_params).ravel()}


@pytest.mark.parametrize("n", [60, 300, 3000])
@pytest.mark.parametrize("target, delta", [(0.8, 0.1), (0.9, 0.05)])
def test_ltt_precision_thresholds_against_mapie(n, target, delta):
    rng = np.random.default_rng(n)
    y = rng.random(n) < 0.55
    s = np.clip(np.where(y, rng.beta(5, 2, n), rng.beta(2, 5, n)), 0, 1)
    grid = np.round(np.linspace(0, 0.99, 100), 2)
    ours = precision_guarantee_threshold(s, y.astype(int), target, delta, grid=grid, method="bonferroni")
    mine = {round(float(t), 6) for t in ours.grid[ours.rejected]}
    theirs = _mapie_certified(s, y.astype(int), target, delta, grid)
    assert theirs <= mine  # an exact binomial p-value is never larger than HB's
    if n >= 3000:
        assert mine == theirs  # with enough data the factor e no longer matters
        assert ours.threshold == min(theirs)
