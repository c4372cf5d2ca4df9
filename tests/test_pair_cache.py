"""The trained verifier's pair logits as one shared statistic (issue 49, item 5): inside a
`shared_pair_logits()` block (the grid opens one per example), the verifier as a judge, the cascade's
cheap judge and nli's evidence finder read each (claim, chunk) logit of one saved verifier once;
outside one, nothing is kept."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from verirag.learned.pair_cache import PairLogitCache, active_pair_logits, shared_pair_logits


def _counting():
    seen = []

    def compute(claims, chunks):
        seen.append(list(zip(claims, chunks)))
        return np.array([len(a) + 0.5 * len(b) for a, b in zip(claims, chunks)], dtype=float)

    return compute, seen


def test_a_pair_is_computed_once_and_read_back_in_place():
    cache, (compute, seen) = PairLogitCache(), _counting()
    first = cache.logits("v1", ["a", "bb", "a"], ["x", "y", "x"], compute)
    assert first.tolist() == [1.5, 2.5, 1.5]
    # a first call hands the network exactly what it would get without the cache
    assert seen == [[("a", "x"), ("bb", "y"), ("a", "x")]]
    again = cache.logits("v1", ["bb", "ccc", "a"], ["y", "z", "x"], compute)
    assert again.tolist() == [2.5, 3.5, 1.5]
    assert seen[-1] == [("ccc", "z")] and (cache.hits, cache.misses) == (2, 3)  # read back; computed


def test_another_verifier_identity_never_reads_these_logits():
    cache, (compute, seen) = PairLogitCache(), _counting()
    cache.logits("v1", ["a"], ["x"], compute)
    cache.logits("v2", ["a"], ["x"], compute)
    assert len(seen) == 2


def test_the_cache_is_bounded_least_recently_used_first():
    cache, (compute, seen) = PairLogitCache(max_pairs=2), _counting()
    cache.logits("v", ["a", "b"], ["x", "x"], compute)
    cache.logits("v", ["a"], ["x"], compute)  # a is now the most recent
    cache.logits("v", ["c"], ["x"], compute)  # b goes
    assert len(cache) == 2
    cache.logits("v", ["a", "b"], ["x", "x"], compute)
    assert seen[-1] == [("b", "x")]


def test_threads_share_it_without_losing_an_entry():
    cache, (compute, _) = PairLogitCache(), _counting()
    claims = [f"claim {i}" for i in range(200)]

    def work():
        out = cache.logits("v", claims, ["chunk"] * len(claims), compute)
        assert out.tolist() == [len(c) + 2.5 for c in claims]

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 200


def test_a_block_inside_another_shares_the_outer_one_and_nothing_outlives_it():
    assert active_pair_logits() is None
    with shared_pair_logits() as outer:
        with shared_pair_logits() as inner:
            assert inner is outer
        assert active_pair_logits() is outer
    assert active_pair_logits() is None


@pytest.mark.slow
def test_the_verifier_cascade_part_and_evidence_finder_score_pairs_once():
    from verirag.awf.predictors.verifier import TrainedVerifierPredictor
    from verirag.types import Passage

    passages = [
        Passage(id="p0", text="Marie Curie was born in Warsaw in 1867. She studied physics in Paris."),
        Passage(id="p1", text="The Eiffel Tower was finished in 1889 for the World's Fair in Paris."),
    ]
    question, answer = "Where was Marie Curie born?", "Marie Curie was born in Warsaw. She won two Nobel prizes."
    judge = TrainedVerifierPredictor()  # vanilla+verifier
    cascade_part = TrainedVerifierPredictor()  # what vanilla+cascade builds for its cheap judge
    finder = TrainedVerifierPredictor(read_top=1)  # nli(premise=evidence)'s finder, reading fewer chunks
    alone = judge.verify(question, answer, passages)  # outside a block: computed, nothing kept

    with shared_pair_logits() as cache:
        first = judge.verify(question, answer, passages)
        computed = cache.misses
        assert computed > 0
        again = cascade_part.verify(question, answer, passages)
        finder.model.evidence(question, answer, [p.text for p in passages])
        finder.verify(question, answer, passages)
        assert cache.misses == computed  # nothing scored twice
    # a block's first computation is the network's own, to the bit
    assert again.score == first.score == alone.score


def test_a_verifier_being_trained_shares_nothing():
    from verirag.learned.verifier import TrainedVerifier

    assert TrainedVerifier().pair_cache_key is None  # not loaded from saved weights
