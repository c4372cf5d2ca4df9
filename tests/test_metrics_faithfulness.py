"""Faithfulness metrics (verirag.metrics.faithfulness)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verirag.metrics import faithfulness as F
from verirag.types import Passage

WORDS = ["paris", "france", "capital", "is", "of", "the", "tower", "x", "y", "what"]
text = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)


def test_hand_computed():
    passages = ["Paris is the capital of France.", "The tower is tall."]
    # K = "paris is capital of france tower is tall" (8 tokens); u = [paris, is, capital] -> common 3
    assert F.k_precision("Paris is capital", passages) == 1.0
    assert F.k_recall("Paris is capital", passages) == pytest.approx(3 / 8)
    assert F.k_f1("Paris is capital", passages) == pytest.approx(2 * 1 * 3 / 8 / (1 + 3 / 8))
    assert F.k_precision("Lyon is capital", passages) == pytest.approx(2 / 3)


def test_evidence_accepts_passage_objects_and_dicts():
    ps = [Passage(id="1", text="Paris is in France"), {"text": "x y"}]
    assert F.evidence_text(ps) == "Paris is in France x y"
    assert F.k_precision("Paris x", ps) == 1.0


def test_plus_plus_drops_question_tokens():
    q = "What is the capital of France?"
    passages = ["Paris is the capital of France."]
    # u = [capital, of, france, is, lyon] -> minus question tokens -> [lyon]: precision 0
    assert F.k_precision("Capital of France is Lyon", passages) == pytest.approx(4 / 5)
    assert F.k_precision_pp("Capital of France is Lyon", passages, q) == 0.0
    assert F.k_precision_pp("The capital of France is Paris", passages, q) == 1.0
    # nothing left after the discount: the convention gives 1 for all three
    assert F.k_precision_pp("capital of France", passages, q) == 1.0
    assert F.k_recall_pp("capital of France", passages, q) == 1.0
    assert F.k_f1_pp("capital of France", passages, q) == 1.0
    # conversation history: list of turns
    assert F.k_precision_pp("Lyon", passages, ["who are you", "Lyon"]) == 1.0


def test_empty_conventions():
    assert F.k_precision("", ["x"]) == 0.0
    assert F.k_recall("x", [""]) == 1.0
    assert F.k_f1("", [""]) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(text, st.lists(text, min_size=1, max_size=3), text), min_size=1, max_size=10))
def test_batch_equals_scalar(items):
    us = [u for u, _, _ in items]
    ps = [p for _, p, _ in items]
    hs = [h for _, _, h in items]
    out = F.k_metrics_batch(us, ps, hs)
    for name, fn in [("k_precision", F.k_precision), ("k_recall", F.k_recall), ("k_f1", F.k_f1)]:
        np.testing.assert_allclose(out[name], [fn(u, p) for u, p in zip(us, ps)], err_msg=name)
    for name, fn in [("k_precision_pp", F.k_precision_pp), ("k_recall_pp", F.k_recall_pp), ("k_f1_pp", F.k_f1_pp)]:
        np.testing.assert_allclose(out[name], [fn(u, p, h) for u, p, h in zip(us, ps, hs)], err_msg=name)
    for v in out.values():
        assert ((v >= 0) & (v <= 1)).all()


def test_k_bertscore_uses_joined_evidence():
    from verirag.metrics.qa import default_scorer

    s = default_scorer()
    a = F.k_bertscore("Paris", ["Paris is nice.", "France too."], scorer=s)
    b = s.score("Paris", "Paris is nice. France too.")
    assert a == b
    batch = F.k_bertscore_batch(["Paris"], [["Paris is nice.", "France too."]], scorer=s)
    assert batch.precision[0] == pytest.approx(a.precision)
