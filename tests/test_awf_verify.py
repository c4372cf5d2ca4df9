"""Post-Answering NLI, the LLM yes/no judge, and the action policy."""

from __future__ import annotations

import math

import pytest

from verirag.awf.entailment.base import EntailmentModel, Judgement
from verirag.awf.entailment.llm_judge import LLMJudgeEntailment
from verirag.awf.predictors.nli import PostAnsweringNLI
from verirag.awf.registry import get, names
from verirag.metrics.judges import yes_no_mass, yes_probability
from verirag.types import Passage


def test_registry_names():
    assert {"vanilla", "no_context"} <= set(names("generator"))
    assert {"llm", "hf_nli"} <= set(names("entailment"))
    assert get("predictor", "nli") is PostAnsweringNLI
    with pytest.raises(KeyError, match="known"):
        get("generator", "nope")


def test_yes_no_probability_sums_spellings():
    lps = {"Yes": math.log(0.5), " yes": math.log(0.1), "No": math.log(0.2), "Maybe": math.log(0.1)}
    p_yes, p_no = yes_no_mass(lps)
    assert p_yes == pytest.approx(0.6) and p_no == pytest.approx(0.2)
    assert yes_probability(lps)[0] == pytest.approx(0.75)
    p, _, error = yes_probability({"Maybe": 0.0})
    assert math.isnan(p) and "saw: Maybe" in error


class KeywordEntailment(EntailmentModel):
    """Stand-in entailment model (this test is about chunking and aggregation, not about NLI):
    a premise entails the hypothesis when it contains the answer word; "FAIL" cannot be judged."""

    name = "keyword"

    def __init__(self, max_words: int):
        self.max_words = max_words
        self.seen: list[str] = []

    def max_premise_words(self, hypothesis):
        return self.max_words

    def judge(self, pairs):
        out = []
        for premise, hyp in pairs:
            self.seen.append(premise)
            if "FAIL" in premise:
                out.append(Judgement(prob=math.nan, error="cannot judge"))
            else:
                answer = hyp.rsplit(":", 1)[1].strip()
                out.append(Judgement(prob=0.9 if answer in premise.split() else 0.1))
        return out


def test_nli_hypothesis_chunks_and_max():
    words = [f"w{i}" for i in range(100)]
    words[90] = "Oslo"
    long = Passage(id="long", text=" ".join(words))
    short = Passage(id="short", text="Bergen is rainy")
    ent = KeywordEntailment(max_words=40)
    v = PostAnsweringNLI(ent).verify("Which city?", "Oslo", [short, long])
    assert (
        PostAnsweringNLI(ent).hypothesis("Which city?", "Oslo") == 'The answer to the question "Which city?" is: Oslo'
    )
    # the long passage became overlapping 40-word chunks sharing 20 words
    chunks = [s.split() for s in ent.seen[1:]]
    assert len(chunks) == 4 and all(len(c) <= 40 for c in chunks)
    assert chunks[0][-20:] == chunks[1][:20]
    assert v.score == pytest.approx(0.9) and v.best == 1
    assert v.per_passage == [pytest.approx(0.1), pytest.approx(0.9)]


def test_nli_records_failures_and_never_drops_them():
    ent = KeywordEntailment(max_words=50)
    v = PostAnsweringNLI(ent).verify("q", "Oslo", [Passage("a", "FAIL here"), Passage("b", "Oslo")])
    assert v.ok and v.per_passage[0] is None and v.warnings and "a:" in v.warnings[0]
    v = PostAnsweringNLI(ent).verify("q", "Oslo", [Passage("a", "FAIL here")])
    assert not v.ok and math.isnan(v.score) and "could not judge" in v.error
    v = PostAnsweringNLI(ent).verify("q", "Oslo", [])
    assert not v.ok and "no passages" in v.error
    v = PostAnsweringNLI(ent).verify("q", "  ", [Passage("a", "x")])
    assert not v.ok and "empty answer" in v.error


@pytest.mark.slow
def test_llm_judge_with_real_model(smollm):
    judge = LLMJudgeEntailment(smollm)
    hyp = 'The answer to the question "What colour is the tower?" is: red'
    j = judge.judge(
        [
            ("The tower is painted red with a white band.", hyp),
            ("Puffins nest on the cliffs from April to August.", hyp),
        ]
    )
    assert all(x.ok and 0.0 <= x.prob <= 1.0 for x in j)
    assert j[0].raw["p_yes"] + j[0].raw["p_no"] > 0.05  # the model does answer Yes/No
    assert 32 <= judge.max_premise_words(hyp) < smollm.context_window
