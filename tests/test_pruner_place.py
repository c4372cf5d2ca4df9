"""benchmarks/pruner_place.py: what a pruner keeps of the pages that do not answer, as they are and
with the place's name replaced, computed from its sentence scores."""

from __future__ import annotations

import pytest
from benchmark_module import load_benchmark


@pytest.fixture(scope="module")
def place():
    return load_benchmark("pruner_place")


class ScoresByPlace:
    """A sentence scores high when it names the island: the measure reads scores, not a network
    (the network is what the benchmark itself measures)."""

    def named_threshold(self, name):
        assert name == "conservative"
        return 0.5

    def sentence_scores(self, question, passages):
        split = [[s.strip() + "." for s in p.split(".") if s.strip()] for p in passages]
        return [(ss, [0.9 if "Skarvøy" in s or "25 minutes" in s else 0.1 for s in ss]) for ss in split]


PAGES = [
    "The ferry to Skarvøy runs hourly. The crossing takes 25 minutes.",
    "Puffins nest on Skarvøy. The birds leave in August.",
]


def test_the_pages_without_the_answer_are_measured_as_they_are_and_with_the_place_replaced(place):
    questions = [
        {"question": "How long is the crossing?", "answers": ["25 minutes"]},
        {"question": "What is the wifi password?"},
    ]
    rows = place.measure(ScoresByPlace(), PAGES, questions, "Skarvøy", "the island")
    ferry, wifi = rows
    # the bird page: "Puffins nest on Skarvøy." (4 words) of its 9 kept while it names the island, none after
    assert ferry["named"] == {"mean_score": pytest.approx(0.5), "words_kept": 4 / 9, "answer_kept": True}
    assert ferry["replaced"] == {"mean_score": pytest.approx(0.1), "words_kept": 0.0, "answer_kept": True}
    # no page answers: every page is measured, and there is no answer to keep
    assert wifi["named"]["answer_kept"] is None
    assert wifi["named"]["words_kept"] == pytest.approx(15 / 20)  # all but "The birds leave in August."


def test_an_answer_the_pruner_drops_is_reported(place):
    class Drops(ScoresByPlace):
        def sentence_scores(self, question, passages):
            return [(ss, [0.0] * len(ss)) for ss, _ in super().sentence_scores(question, passages)]

    (row,) = place.measure(Drops(), PAGES, [{"question": "q", "answers": ["25 minutes"]}], "Skarvøy", "x")
    assert row["named"]["answer_kept"] is False and row["named"]["words_kept"] == 0.0
