"""The pipeline end to end with the smallest real model, the real embedder and the real cache."""

from __future__ import annotations

from dataclasses import replace

import pytest

from verirag import Pipeline
from verirag.awf.pipeline import PRESETS
from verirag.demo import corpus_path, questions
from verirag.errors import InputError
from verirag.types import Passage

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipe():
    p = Pipeline.from_preset("tiny")
    p.index(corpus_path())
    return p


def _check_contract(r):
    assert r.action in {"answered", "abstained", "fallback"}
    assert 0.0 <= r.score <= 1.0
    assert r.faithful == (r.action == "answered")
    # answered exactly when an answer with no error scores at least the threshold
    supported = r.error is None and bool(r.retrieved_answer.strip()) and r.score >= r.threshold
    assert (r.action == "answered") == supported
    # pruning is on by default: the evidence is the retrieved passages the pruner kept any sentence of
    pruned = r.stages["prune"]["passages"]
    assert len(pruned) == 5 and len(r.evidence) == sum(bool(p["kept"]) for p in pruned) >= 1
    assert [e.id for e in r.evidence] == [p["id"] for p in pruned if p["kept"]]
    scores = [e.retrieval_score for e in r.evidence]
    assert scores == sorted(scores, reverse=True)
    for e in r.evidence:
        assert e.support_score is None or 0.0 <= e.support_score <= 1.0
    assert set(r.timings) >= {"retrieve", "generate", "verify", "total"}


def test_ask_answerable(pipe):
    r = pipe.ask(questions()[0]["question"])
    _check_contract(r)
    assert r.retrieved_answer.strip()
    assert r.supporting_passage is not None
    assert r.supporting_passage.support_score == max(e.support_score for e in r.evidence if e.support_score is not None)
    assert any("lighthouse" in e.id for e in r.evidence)
    assert r.model == "smollm2-135m"


def test_ask_names_each_stage_as_it_starts(pipe):
    stages = []
    r = pipe.ask(questions()[2]["question"], threshold=1.0, fallback="no-rag", on_stage=stages.append)
    assert stages[0] == "retrieving"
    assert stages[1] == "pruning 5 passages"  # on by default, before the model reads anything
    assert stages[2] == f"reading {len(r.evidence)} passages and answering (vanilla)"
    assert any(s.startswith("verifying") for s in stages[2:])
    assert r.score < 1.0 and r.action == "fallback"  # forced: no score reaches a threshold of 1
    assert stages[-1] == "answering without the passages"


def test_threshold_controls_the_action(pipe):
    q = questions()[1]["question"]
    low = pipe.ask(q, threshold=0.0)
    high = pipe.ask(q, threshold=1.0)
    assert low.action == "answered" and low.answer == low.retrieved_answer
    assert high.score == low.score  # same request, from the cache
    assert high.score < 1.0 and high.action == "abstained"  # forced: no score reaches a threshold of 1
    assert high.answer != high.retrieved_answer and "don't know" in high.answer


def test_no_rag_fallback(pipe):
    r = pipe.ask(questions()[3]["question"], threshold=1.0, fallback="no-rag")
    assert r.score < 1.0 and r.action == "fallback"  # forced: no score reaches a threshold of 1
    assert "fallback" in r.timings and r.answer.strip()
    no_ctx = pipe.policy("no-rag").generator.answer(r.question)
    assert r.answer == no_ctx.text


def test_bad_input(pipe):
    with pytest.raises(InputError, match="empty"):
        pipe.ask("   ")
    with pytest.raises(InputError, match="threshold"):
        pipe.ask("q", threshold=1.5)
    with pytest.raises(InputError, match="no index"):
        Pipeline.from_preset("tiny").ask("q")
    with pytest.raises(InputError, match="empty"):
        Pipeline.from_preset("tiny").index([])
    with pytest.raises(InputError):
        Pipeline.from_preset("nope")


def test_index_from_passages_and_reuse(tmp_path):
    p = Pipeline.from_preset("tiny", retrieval="bm25", k=2)
    p.index(
        [Passage("a", "The museum café sells waffles."), Passage("b", "The ferry takes 25 minutes.")],
        save_to=tmp_path / "idx",
    )
    q = Pipeline.from_preset("tiny", retrieval="bm25", k=2)
    q.load_index(tmp_path / "idx")
    assert next(h.passage.id for h in q.retrieve("How long is the ferry ride?")) == "b"


def test_other_methods_and_escalation():
    p = Pipeline.from_preset(
        "tiny", method="intrinsic", fallback="escalate", escalate_model="smollm2-135m", max_answer_tokens=24
    )
    p.index(corpus_path())
    r = p.ask(questions()[1]["question"], threshold=1.0)
    assert r.method == "intrinsic" and r.score in (0.0, 1.0)
    # intrinsic's hard label decides: 1 answers at threshold 1, 0 escalates to the second model
    if r.score == 1.0:
        assert r.action == "answered" and "fallback" not in r.timings
    else:
        assert r.action == "escalated" and r.answer.strip() and "fallback" in r.timings
    q = Pipeline(
        replace(PRESETS["tiny"], method="vanilla+k_precision", max_answer_tokens=24), index=p.search_index
    )  # same corpus, no second index build
    r2 = q.ask(questions()[1]["question"])
    assert r2.method == "vanilla+k_precision" and 0.0 <= r2.score <= 1.0
    assert all(e.support_score is None or 0.0 <= e.support_score <= 1.0 for e in r2.evidence)


def test_verify_and_act_acts_on_another_systems_answer_by_the_asks_policies():
    p = Pipeline.from_preset("tiny", method="vanilla+nli")
    passages = [
        Passage(id="fr", text="Paris is the capital of France."),
        Passage(id="de", text="Berlin is in Germany."),
    ]
    q, a = "What is the capital of France?", "Paris"
    v = p.verify(q, a, passages)
    low = p.verify_and_act(q, a, passages, threshold=0.0)
    assert low.action == "answered" and low.answer == low.retrieved_answer == a and low.score == v.score
    assert low.supporting_passage.id == v.supporting_passage.id
    high = p.verify_and_act(q, a, passages, threshold=1.0)
    assert high.action == "abstained" and high.answer != a and high.retrieved_answer == a
    stages = []
    fb = p.verify_and_act(q, a, passages, threshold=1.0, fallback="no-rag", on_stage=stages.append)
    assert fb.action == "fallback" and fb.answer == p.policy("no-rag").generator.answer(q).text
    assert "fallback" in fb.timings and fb.usage["calls"] >= 1
    assert stages[0].startswith("verifying") and stages[-1] == "answering without the passages"
    with pytest.raises(InputError, match="fallback"):
        p.verify_and_act(q, a, passages, fallback="pray")
