"""benchmarks/pruner_recall.py: what a pruner keeps of what answers a question (words kept, answer
kept, supporting facts kept), with and without the hop rule, computed from its sentence scores."""

from __future__ import annotations

import pytest
from benchmark_module import load_benchmark

from verirag.types import Example, Passage


@pytest.fixture(scope="module")
def recall():
    return load_benchmark("pruner_recall")


class ScoresByText:
    """Sentence scores looked up by text: the measure reads scores, not a network (the network's
    own quality is measured by the benchmark itself)."""

    threshold_ = 0.5

    def __init__(self, scores: dict[str, float]):
        self.scores = scores

    def sentence_scores(self, question, passages):
        split = [[s if s.endswith(".") else s + "." for s in p.split(". ")] for p in passages]
        return [(sentences, [self.scores[s] for s in sentences]) for sentences in split]


def test_words_answers_and_support_kept_with_and_without_the_hop(recall):
    film = Passage("f", "Grey Orchard is a film by Hedda Lorne. It runs two hours.", "Grey Orchard")
    born = Passage("b", "Hedda Lorne was born in Vessby. She likes tea.", "Hedda Lorne")
    nq = Example(id="1", question="Where was she born?", passages=[born], references=["Vessby"])
    hotpot = Example(
        id="2", question="Where was the director of Grey Orchard born?", passages=[film, born], references=["Vessby"]
    )
    scores = {
        "Grey Orchard is a film by Hedda Lorne.": 0.9,
        "It runs two hours.": 0.1,
        "Hedda Lorne was born in Vessby.": 0.3,
        "She likes tea.": 0.05,
    }
    items = [
        ("nq", nq, {}),
        (
            "hotpotqa",
            hotpot,
            {
                "Grey Orchard": ["Grey Orchard is a film by Hedda Lorne."],
                "Hedda Lorne": ["Hedda Lorne was born in Vessby."],
            },
        ),
    ]
    pruner = ScoresByText(scores)
    plain = recall.measure(pruner, items, ["fitted", "0.2"], hop=False)
    assert (
        plain[("hotpotqa", "fitted")]["support_kept"] == 0.0 and plain[("hotpotqa", "fitted")]["paragraphs_kept"] == 0.5
    )
    assert plain[("hotpotqa", "fitted")]["answer_kept"] == 0.0 and plain[("hotpotqa", "fitted")]["words_kept"] == 8 / 21
    # nothing of NQ's one passage passes 0.5: as in the answer path, its best sentence is kept (the fallback)
    assert plain[("nq", "0.2")]["answer_kept"] == 1.0 and plain[("nq", "fitted")]["answer_kept"] == 1.0
    hop = recall.measure(pruner, items, ["fitted"], hop=True)[("hotpotqa", "fitted")]
    assert hop["support_kept"] == 1.0 and hop["answer_kept"] == 1.0 and hop["words_kept"] == 14 / 21
    assert hop["support_in"] == 1 and plain[("nq", "fitted")]["support_in"] == 0


def test_the_demo_questions_come_with_what_the_demo_retrieves_and_their_answers(recall):
    items = recall.demo_questions()
    assert [e.references for e in items] == [["Maren Solberg"], ["25 minutes"], ["Ola Venn"]]  # the answerable ones
    for e in items:
        assert e.passages and recall.holds(" ".join(p.text for p in e.passages), e.references)
