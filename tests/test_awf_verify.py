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


def _norway_passages() -> list[Passage]:
    filler = " ".join(f"Bergen is a city on the west coast with many bridges number {i}." for i in range(12))
    return [
        Passage("weather", "Rain falls on Bergen on most days of the year. " * 4),
        Passage("cities", filler + " The capital of Norway is Oslo and it lies on a fjord."),
    ]


def test_nli_over_the_evidence_reads_only_the_verifiers_chunks():
    ent = KeywordEntailment(max_words=400)
    passages = _norway_passages()
    nli = PostAnsweringNLI(ent, premise="evidence")
    premise, lent = nli.evidence("What is the capital of Norway?", "Oslo", passages)
    v = nli.verify("What is the capital of Norway?", "Oslo", passages)
    assert ent.seen == [premise]  # one judgement, over the evidence alone
    assert "Oslo" in premise.split()
    assert len(premise.split()) < sum(len(p.text.split()) for p in passages) / 2
    assert lent == [1]
    assert v.ok and v.score == pytest.approx(0.9) and v.best == 1
    assert v.per_passage == [None, pytest.approx(0.9)]  # the unread passage has no score, not a 0


def test_nli_over_the_evidence_records_a_failed_judgement():
    class Failing(KeywordEntailment):
        def judge(self, pairs):
            return [Judgement(prob=math.nan, error="cannot judge") for _ in pairs]

    v = PostAnsweringNLI(Failing(400), premise="evidence").verify("Capital?", "Oslo", _norway_passages())
    assert not v.ok and math.isnan(v.score) and "could not judge the evidence" in v.error
    v = PostAnsweringNLI(KeywordEntailment(400), premise="evidence").verify("Capital?", "Oslo", [])
    assert not v.ok and "no passages" in v.error


def test_nli_premise_options_are_checked_and_named():
    from verirag.errors import InputError

    with pytest.raises(InputError, match="premise is one of passages, evidence"):
        PostAnsweringNLI(KeywordEntailment(40), premise="summary")
    with pytest.raises(InputError, match="premise=evidence"):
        PostAnsweringNLI(KeywordEntailment(40), verifier="some/dir")
    with pytest.raises(InputError, match="premise=evidence"):
        PostAnsweringNLI(KeywordEntailment(40), evidence_chunks=2)
    with pytest.raises(InputError, match="at least 1"):
        PostAnsweringNLI(KeywordEntailment(40), premise="evidence", evidence_chunks=0)
    full, evidence = (
        PostAnsweringNLI(KeywordEntailment(40)),
        PostAnsweringNLI(KeywordEntailment(40), premise="evidence"),
    )
    assert full.digest != evidence.digest  # cached judgements of one never answer for the other
    # nli over the passages names itself as before these options: the shipped cascade band and fitted
    # stacks hold its digest
    assert full.identity()["options"] == {"overlap_words": 20, "hypothesis_template": None}
    assert evidence.options["premise"] == "evidence" and evidence.name.endswith("(evidence)")


def test_nli_evidence_is_a_method_option():
    from verirag.awf.compose import build_method

    m = build_method("vanilla+nli(premise=evidence)", None, entailment=KeywordEntailment(400))
    assert m.predictor.options["premise"] == "evidence"
    m = build_method("vanilla+nli(premise=evidence,evidence_chunks=2)", None, entailment=KeywordEntailment(400))
    assert m.predictor.evidence_chunks == 2 and m.predictor.evidence_finder.model.read_top >= 2


def test_the_verifiers_evidence_per_sentence():
    from verirag.awf.predictors.verifier import loaded_verifier
    from verirag.learned.shipped import shipped_verifier_dir

    v = loaded_verifier(shipped_verifier_dir())
    texts = [p.text for p in _norway_passages()] + ["Oslo has a large harbour and an opera house by the water."]
    answer = "The capital of Norway is Oslo. Oslo has an opera house."
    one = v.evidence("What is the capital of Norway?", answer, texts)
    two = v.evidence("What is the capital of Norway?", answer, texts, per_sentence=2)
    assert {i for i, _ in one} == {1, 2}  # each sentence's support, from the passage that holds it
    assert set(one) <= set(two) and len(two) > len(one)
    assert len(set(two)) == len(two) and [i for i, _ in two] == sorted(i for i, _ in two)  # once each, in order
    with pytest.raises(Exception, match="at least 1"):
        v.evidence("q", answer, texts, per_sentence=0)


def test_merged_spans_join_what_overlaps_or_touches():
    from verirag.awf.predictors.nli import merged_spans

    text = "a b c d e f g h i j"
    assert merged_spans(text, ["e f g", "a b c d", "c d e"]) == ["a b c d e f g"]  # overlaps and a touch
    assert merged_spans(text, ["i j", "a b"]) == ["a b", "i j"]  # apart: two spans, in text order
    assert merged_spans(text, ["x y", "a b"]) == ["a b", "x y"]  # not a slice of it: kept, never dropped


def test_nli_evidence_falls_back_to_every_passage():
    from verirag.errors import InputError

    passages = _norway_passages()
    question, answer = "What is the capital of Norway?", "Oslo"
    # short passages: the evidence would be most of them, so the judge reads every passage
    ent = KeywordEntailment(400)
    short = [Passage("a", "Oslo is the capital of Norway."), Passage("b", "Bergen is rainy.")]
    v = PostAnsweringNLI(ent, premise="evidence").verify(question, answer, short)
    assert ent.seen == [p.text for p in short] and v.per_passage == [pytest.approx(0.9), pytest.approx(0.1)]
    # no evidence at all: read every passage rather than judge an empty premise
    ent = KeywordEntailment(400)
    nli = PostAnsweringNLI(ent, premise="evidence")
    nli.evidence = lambda *a: ("", [])
    assert nli.verify(question, answer, passages).ok and ent.seen == [p.text.strip() for p in passages]

    # the verifier cannot read the question: every passage is read, and the answer says why
    def unreadable(*a, **k):
        raise InputError("the question takes 900 tokens")

    ent = KeywordEntailment(400)
    nli = PostAnsweringNLI(ent, premise="evidence")
    nli.evidence_finder.model.evidence = unreadable
    v = nli.verify(question, answer, passages)
    assert v.ok and ent.seen == [p.text.strip() for p in passages]
    assert any("could not pick the evidence" in w and "900 tokens" in w for w in v.warnings)


def test_nli_evidence_merges_overlapping_chunks_and_reads_short_passages_in_full():
    from verirag.awf.predictors import nli as nli_module

    passages = _norway_passages()
    nli = PostAnsweringNLI(KeywordEntailment(400), premise="evidence", evidence_chunks=3)
    premise, lent = nli.evidence("What is the capital of Norway?", "The capital of Norway is Oslo.", passages)
    assert 1 in lent  # the passage that holds the answer
    for piece in premise.split("\n\n"):  # each piece is one span of one passage, overlaps merged
        assert any(piece in p.text for p in passages)
    assert len(premise.split()) <= sum(len(p.text.split()) for p in passages)
    # short passages: the evidence would be most of them, so the judge reads every passage
    ent = KeywordEntailment(400)
    short = [Passage("a", "Oslo is the capital of Norway."), Passage("b", "Bergen is rainy.")]
    v = PostAnsweringNLI(ent, premise="evidence").verify("Capital of Norway?", "Oslo", short)
    assert ent.seen == [p.text for p in short] and v.per_passage == [pytest.approx(0.9), pytest.approx(0.1)]
    assert 0 < nli_module.EVIDENCE_MAX_SHARE < 1


def test_the_verifiers_evidence_covers_every_piece_of_a_long_sentence(monkeypatch):
    import copy

    import numpy as np

    from verirag.awf.predictors.verifier import loaded_verifier
    from verirag.learned.shipped import shipped_verifier_dir
    from verirag.learned.verifier_inputs import Reading

    v = copy.copy(loaded_verifier(shipped_verifier_dir()))
    # one sentence read as two claims (pieces): the first best supported by chunk 0, the second by chunk 2;
    # chunk 3 joins chunks 1 and 2 (a joint premise); -inf: a premise the claim was not read against
    reading = Reading("q", ("s",), ("q p1", "q p2"), (0, 0), ("c0", "c1", "c2", "c1 c2"), (0, 1, 1, 1), ((1, 2),))
    table = np.array([[3.0, 1.0, -np.inf, 0.0], [-2.0, -np.inf, 1.0, 2.0]])
    monkeypatch.setattr(type(v), "reader", property(lambda self: type("R", (), {"read": lambda *a: reading})()))
    monkeypatch.setattr(v, "_tables", lambda readings: ([reading], [table]))
    assert v.evidence("q", "a", ["x"]) == [(0, "c0"), (1, "c1"), (1, "c2")]  # the weak piece's joint premise too
    assert v.evidence("q", "a", ["x"], per_sentence=2) == [(0, "c0"), (1, "c1"), (1, "c2")]
