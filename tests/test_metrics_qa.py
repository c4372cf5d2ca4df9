"""Correctness metrics (verirag.metrics.qa): hand-computed cases, conventions, batch = scalar."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verirag.metrics import qa
from verirag.metrics._text import normalize_many

WORDS = ["the", "a", "an", "paris", "france", "eiffel", "tower", "1889", "x", "y", "is", "in"]
text = st.lists(st.sampled_from(WORDS + ["Paris,", "THE", "tower!", "don't", "U.S."]), max_size=8).map(" ".join)
refs = st.lists(text, min_size=1, max_size=4)


def test_normalize_answer_matches_squad():
    assert qa.normalize_answer("The  Eiffel-Tower, in Paris!") == "eiffeltower in paris"
    assert qa.normalize_answer("An apple a day") == "apple day"
    assert qa.normalize_answer("theatre") == "theatre"  # articles only as whole words
    assert qa.normalize_answer("") == ""
    assert qa.get_tokens("A") == []


@given(st.lists(st.text(max_size=30), max_size=20))
def test_normalize_many_equals_one_by_one(texts):
    assert normalize_many(texts) == [qa.normalize_answer(t) for t in texts]


def test_hand_computed_token_metrics():
    pred, ref = "Paris is in France", ["France"]
    # tokens: [paris, is, in, france] vs [france]: common 1
    assert qa.token_precision(pred, ref) == pytest.approx(1 / 4)
    assert qa.token_recall(pred, ref) == 1.0
    assert qa.token_f1(pred, ref) == pytest.approx(2 * 0.25 * 1 / 1.25)
    assert qa.exact_match(pred, ref) == 0.0
    assert qa.recall_strict(pred, ref) == 1.0
    assert qa.substring_match(pred, ref) == 1.0
    # max over references, each metric separately
    refs2 = ["Paris France", "the tower"]
    assert qa.token_recall("Paris", refs2) == 0.5
    assert qa.exact_match("The Paris!", ["paris"]) == 1.0
    # multiset overlap: "x x y" vs "x y y" -> common = 2
    assert qa.token_precision("x x y", "x y y") == pytest.approx(2 / 3)


def test_empty_conventions_follow_instruct_qa():
    assert qa.token_f1("", [""]) == 1.0  # both empty: they agree
    assert qa.token_f1("a", ["paris"]) == 0.0  # prediction normalises to nothing
    assert qa.token_precision("", ["paris"]) == 0.0
    assert qa.token_recall("paris", ["the"]) == 1.0  # empty reference: recall 1
    assert qa.substring_match("anything", ["the"]) == 1.0
    assert qa.substring_match("party", ["art"]) == 1.0  # character-level, as instruct-qa's RecallEM
    with pytest.raises(ValueError):
        qa.token_f1("x", [])


def test_recall_strict_vs_substring():
    # all reference tokens present but not contiguous: strict recall yes, substring no
    assert qa.recall_strict("eiffel big tower", ["eiffel tower"]) == 1.0
    assert qa.substring_match("eiffel big tower", ["eiffel tower"]) == 0.0
    assert qa.recall_strict("tower", ["eiffel tower"]) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(text, refs), min_size=1, max_size=12))
def test_batch_equals_scalar(items):
    preds = [p for p, _ in items]
    rl = [r for _, r in items]
    out = qa.token_metrics_batch(preds, rl)
    fns = {
        "exact_match": qa.exact_match,
        "f1": qa.token_f1,
        "precision": qa.token_precision,
        "recall": qa.token_recall,
        "recall_strict": qa.recall_strict,
        "substring_match": qa.substring_match,
    }
    for key, fn in fns.items():
        np.testing.assert_allclose(out[key], [fn(p, r) for p, r in items], err_msg=key)
    np.testing.assert_allclose(qa.rouge_l_batch(preds, rl), [qa.rouge_l(p, r) for p, r in items])


@settings(max_examples=60, deadline=None)
@given(text, refs, st.randoms(use_true_random=False))
def test_scores_in_range_and_reference_order_invariant(pred, rs, rnd):
    shuffled = list(rs)
    rnd.shuffle(shuffled)
    for fn in (
        qa.exact_match,
        qa.token_f1,
        qa.token_precision,
        qa.token_recall,
        qa.recall_strict,
        qa.substring_match,
        qa.rouge_l,
    ):
        v = fn(pred, rs)
        assert 0.0 <= v <= 1.0
        assert fn(pred, shuffled) == v


def _lcs_dp(a, b):
    dp = np.zeros((len(a) + 1, len(b) + 1), dtype=int)
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            dp[i, j] = dp[i - 1, j - 1] + 1 if a[i - 1] == b[j - 1] else max(dp[i - 1, j], dp[i, j - 1])
    return int(dp[-1, -1])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=70), st.lists(st.integers(0, 4), max_size=70))
def test_lcs_bit_parallel_equals_dynamic_programming(a, b):
    assert qa.lcs_length(a, b) == _lcs_dp(a, b)


def test_rouge_l_hand_computed():
    # pred: [police, killed, gunman], ref: [police, kill, gunman] -> LCS 2: P = R = F = 2/3
    assert qa.rouge_l("police killed the gunman", ["the police kill the gunman"]) == pytest.approx(2 / 3)
    assert qa.rouge_l("", ["x"]) == 0.0
    # P = 2/4, R = 2/2 -> F = 2/3
    assert qa.rouge_l("x y z w", ["x w"]) == pytest.approx(2 * 0.5 * 1 / 1.5)


def _wordnet_or_skip():
    try:
        qa._meteor_fn()
    except LookupError:
        pytest.skip("WordNet for nltk is not installed (bash scripts/install_wordnet.sh PYTHON)")


def test_meteor_exact_stem_and_synonym():
    _wordnet_or_skip()
    assert qa.meteor("paris", ["paris"]) == pytest.approx(0.5)  # 1 match, 1 chunk: penalty .5*(1/1)^3
    assert qa.meteor("cat sat mat", ["cat sat mat"]) > 0.9
    # WordNet synonym stage: "auto" ~ "car", "sick" ~ "ill" (nltk looks synonyms up after the
    # stem stage, on stemmed words, so pairs whose stems are not words -- "automobil" -- miss)
    assert qa.meteor("auto", ["car"]) == pytest.approx(0.5)
    assert qa.meteor("he is sick", ["he is ill"]) == pytest.approx(qa.meteor("he is ill", ["he is ill"]))
    assert qa.meteor("banana", ["car"]) == 0.0
    assert qa.meteor("", ["car"]) == 0.0
    # max over references
    assert qa.meteor("car", ["x", "car"]) == qa.meteor("car", ["car"])
    np.testing.assert_allclose(qa.meteor_batch(["car", "x"], [["car"], ["y"]]), [qa.meteor("car", ["car"]), 0.0])


def test_meteor_against_nltk_directly():
    _wordnet_or_skip()
    from nltk.translate.meteor_score import meteor_score

    pred, ref = "the quick brown fox jumped", "a fast brown fox leaps"
    want = meteor_score([qa.get_tokens(ref)], qa.get_tokens(pred))
    assert qa.meteor(pred, ref) == pytest.approx(want)


@pytest.fixture(scope="module")
def scorer():
    return qa.default_scorer()  # one encoder per test session (loading it takes seconds)


def test_bertscore_properties(scorer):
    same = qa.bertscore("The Eiffel Tower is in Paris.", ["The Eiffel Tower is in Paris."], scorer=scorer)
    assert same.precision == pytest.approx(1.0, abs=1e-5) and same.f1 == pytest.approx(1.0, abs=1e-5)
    near = qa.bertscore("It is in Paris", ["Paris"], scorer=scorer)
    far = qa.bertscore("bananas are yellow", ["Paris"], scorer=scorer)
    assert near.recall > far.recall
    # a longer candidate containing the reference: recall high, precision lower
    assert near.recall > near.precision
    empty = qa.bertscore("", ["Paris"], scorer=scorer)
    assert (empty.precision, empty.recall, empty.f1) == (0.0, 0.0, 0.0)
    # max over references, invariant to their order
    a = qa.bertscore("Paris", ["London", "Paris"], scorer=scorer)
    b = qa.bertscore("Paris", ["Paris", "London"], scorer=scorer)
    assert a == b and a.f1 == pytest.approx(1.0, abs=1e-5)


def test_bertscore_formula_by_hand(scorer):
    c, r = "red apples", "green apples grow"
    ec, er = scorer.embed([c, r])
    sim = ec @ er.T
    p, rec = sim.max(axis=1).mean(), sim.max(axis=0).mean()
    got = qa.bertscore(c, [r], scorer=scorer)
    assert got.precision == pytest.approx(p, abs=1e-6)
    assert got.recall == pytest.approx(rec, abs=1e-6)
    assert got.f1 == pytest.approx(2 * p * rec / (p + rec), abs=1e-6)
    batch = qa.bertscore_batch([c, "x"], [[r], ["y", "x"]], scorer=scorer)
    assert batch.f1[0] == pytest.approx(got.f1, abs=1e-6)


def test_bertscore_long_text_is_windowed(scorer):
    long = " ".join(["word"] * 700)
    (emb,) = scorer.embed([long])
    assert emb.shape[0] == 700  # every token kept across windows (512-token window)
