"""CalibRAG (issue 11): label generation with a real model (SmolLM2), the forecaster's training,
persistence and bad input, and the rerank / re-query stage."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from doubles import FailingLLM, ScriptedLLM
from test_train_trust_calibration import examples

from verirag.awf.calibrag import (
    LINGUISTIC_SCALE,
    Guidance,
    parse_linguistic_confidence,
    parse_number_confidence,
    reformulate_query,
)
from verirag.awf.stages import ForecastRerankStage, run_stages
from verirag.errors import BackendError, InputError, NotFittedError
from verirag.learned.calibration import fit_temperature
from verirag.learned.forecaster import Forecaster, load_forecaster
from verirag.learned.splits import split_by_group
from verirag.llm.metered import MeteredLLM
from verirag.llm.usage import metering
from verirag.retrieval import Index
from verirag.retrieval.index import pooled_passages
from verirag.types import Passage, ScoredPassage
from verirag_lab.train.forecaster import train_forecaster
from verirag_lab.train.forecaster_labels import label_pairs, read_labels


def toy_pairs(n_things: int = 12, per_thing: int = 8):
    """A separable task: the document either states the thing's colour or is about bananas."""
    colours = ["red", "blue", "green", "yellow", "purple", "orange", "black", "white"]
    things = ["car", "house", "bird", "flower", "shirt", "boat", "lamp", "door", "cup", "kite", "hat", "ball"]
    rng = random.Random(0)
    q, d, y, g = [], [], [], []
    for t in things[:n_things]:
        for j in range(per_thing):
            pos = j % 2 == 0
            q.append(f"what colour is the {t} number {j}?")
            d.append(
                f"The {t} number {j} is painted {rng.choice(colours)}."
                if pos
                else f"Bananas grow in warm places and taste sweet ({j})."
            )
            y.append(int(pos))
            g.append(t)  # one question per thing, several documents each: validation holds out whole questions
    return q, d, y, g


@pytest.fixture(scope="module")
def toy_forecaster():
    q, d, y, g = toy_pairs()
    return Forecaster(epochs=3, learning_rate=5e-5, val_share=0.25).fit(q, d, y, g)


# ---- the forecaster ------------------------------------------------------------------------
def test_forecaster_learns_a_separable_task(toy_forecaster):
    f = toy_forecaster
    assert f.fitted and f.metrics_["auroc"] > 0.9
    assert f.n_train_ + f.n_val_ == 96 and f.n_val_ == 24  # 3 of the 12 questions, each with its 8 documents
    # fresh pairs of the same kind, never seen in training
    probs = f.predict_proba(
        ["what colour is the tram number 3?", "what colour is the tram number 3?"],
        ["The tram number 3 is painted blue.", "Bananas grow in warm places and taste sweet."],
    )
    assert probs[0] > probs[1]
    assert [h["epoch"] for h in f.history_] == list(range(1, len(f.history_) + 1))


def test_save_load_gives_identical_scores(toy_forecaster, tmp_path):
    q, d, _, _ = toy_pairs(3, 4)
    toy_forecaster.save(tmp_path / "f")
    meta = json.loads((tmp_path / "f" / "forecaster.json").read_text())
    assert meta["format"] == "verirag.learned.forecaster/2"
    assert meta["fingerprints"]["data"] == toy_forecaster.fingerprints["data"]
    assert not list((tmp_path / "f").rglob("*.pkl")) and not list((tmp_path / "f").rglob("*.bin"))
    loaded = load_forecaster(tmp_path / "f")
    np.testing.assert_array_equal(loaded.predict_proba(q, d), toy_forecaster.predict_proba(q, d))
    assert loaded.temperature_ == toy_forecaster.temperature_ and loaded.metrics_ == toy_forecaster.metrics_


def test_load_rejects_what_is_not_the_saved_forecaster(toy_forecaster, tmp_path):
    with pytest.raises(InputError, match="no forecaster at .*verirag train forecaster"):
        Forecaster.load(tmp_path)
    with pytest.raises(InputError, match="not a forecaster"):
        load_forecaster(tmp_path)
    toy_forecaster.save(tmp_path / "f")
    meta_path = tmp_path / "f" / "forecaster.json"
    meta = json.loads(meta_path.read_text())
    with pytest.raises(InputError, match="fitted for encoder 'all-MiniLM-L6-v2'.*verirag train forecaster"):
        load_forecaster(tmp_path / "f", encoder="sentence-transformers/other-encoder")
    meta_path.write_text(json.dumps({**meta, "format": "verirag.learned.forecaster_probe/2"}))
    with pytest.raises(InputError, match="not a forecaster of format verirag.learned.forecaster/2"):
        Forecaster.load(tmp_path / "f")
    meta_path.write_text(json.dumps(meta))
    weights = tmp_path / "f" / "encoder" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    with pytest.raises(InputError, match="weights differ"):
        Forecaster.load(tmp_path / "f")


def test_bad_training_input_is_a_clear_error():
    q, d, y, g = toy_pairs(2, 4)
    with pytest.raises(InputError, match="both correct and incorrect"):
        Forecaster(epochs=1).fit(q, d, [1] * len(q), g)
    with pytest.raises(InputError, match="document is empty"):
        Forecaster(epochs=1).fit(q, d[:-1] + ["  "], y, g)
    with pytest.raises(InputError, match="at least two questions"):
        Forecaster(epochs=1).fit(q, d, y, ["same"] * len(q))
    with pytest.raises(NotFittedError, match="Forecaster is not fitted"):
        Forecaster().save("/tmp/never-written")


def test_validation_holds_out_whole_questions():
    groups = [f"q{i // 5}" for i in range(50)]
    train, val = split_by_group(groups, 0.2, seed=3)  # 10 questions: 2 held out
    assert {groups[i] for i in np.flatnonzero(train)}.isdisjoint({groups[i] for i in np.flatnonzero(val)})
    assert val.sum() == 10


def test_temperature_scaling_against_a_grid_search():
    rng = np.random.default_rng(0)
    z = rng.normal(0, 4, 400)  # overconfident logits of a true logit z / 3
    y = (rng.random(400) < 1 / (1 + np.exp(-z / 3))).astype(int)
    t = fit_temperature(z, y)
    grid = np.exp(np.linspace(-2, 2, 2001))
    nll = [np.mean(np.logaddexp(0, -z / g) * y + np.logaddexp(0, z / g) * (1 - y)) for g in grid]
    assert t == pytest.approx(grid[int(np.argmin(nll))], rel=1e-2)
    assert 2.0 < t < 4.5
    assert fit_temperature(z, np.ones(400)) == 1.0


# ---- verbalized confidence ------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, value",
    [
        ("8", 0.8),
        ("Certainty: 10", 1.0),
        ("7/10", 0.7),
        ("0.", 0.0),
        ("I am sure", None),
        ("12", None),
        ("0.8", 0.8),
        ("80%", 0.8),
        ("On a scale of 0 to 10: 8", 0.8),
        ("8 out of 10", 0.8),
        ("150%", None),
        ("3.5", None),
    ],
)
def test_number_confidence(text, value):
    assert parse_number_confidence(text) == value


def test_linguistic_confidence_uses_the_stated_scale():
    assert parse_linguistic_confidence("Certainty: Probable.") == LINGUISTIC_SCALE["probable"]
    assert parse_linguistic_confidence("not sure") is None
    assert parse_linguistic_confidence("Not certain, possible.") == LINGUISTIC_SCALE["possible"]  # negation skipped
    assert parse_linguistic_confidence("not certain") is None
    assert list(LINGUISTIC_SCALE)[4:7] == ["probable", "likely", "possible"]  # the paper's order (appendix E)
    assert sorted(LINGUISTIC_SCALE.values()) == list(LINGUISTIC_SCALE.values())  # listed in order of certainty


# ---- label generation with a real model -----------------------------------------------------
def test_labelling_resumes_with_zero_repeated_backend_calls(smollm, tmp_path):
    exs = examples()[:4]
    idx = Index.build(pooled_passages(exs), kind="bm25", chunk_words=None)
    llm = MeteredLLM(smollm)  # uncached: every backend call is counted
    out = tmp_path / "labels.jsonl"
    with metering() as first:
        ls = label_pairs(exs, idx, llm, k=2, mode="decision", out=out)
    assert len(ls.records) == 8 and ls.computed == 8 and first.calls == 8 * 3
    assert all(r.label in (0, 1) or r.error for r in ls.records)
    assert {r.rank for r in ls.records} == {0, 1}
    with metering() as again:
        ls2 = label_pairs(exs, idx, llm, k=2, mode="decision", out=out)
    assert again.calls == 0 and ls2.computed == 0
    assert [r.key for r in ls2.records] == [r.key for r in ls.records]
    # a killed run leaves a torn last line: only that pair is labelled again
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    with metering() as resumed:
        ls3 = label_pairs(exs, idx, llm, k=2, mode="decision", out=out)
    assert resumed.calls == 3 and ls3.computed == 1 and ls3.unreadable_lines == 1
    records, bad = read_labels(out)
    assert bad == 0 and len(records) == 8 and len({r.key for r in records}) == 8  # the torn line is gone
    # another mode is another label: nothing is reused across modes
    with metering() as other:
        label_pairs(exs, idx, llm, k=1, mode="answer", out=out)
    assert other.calls == 4


def test_labelling_records_failures_and_refuses_bad_settings(smollm, tmp_path):
    exs = examples()[:2]
    idx = Index.build(pooled_passages(exs), kind="bm25", chunk_words=None)
    with pytest.raises(InputError, match="labelling mode"):
        label_pairs(exs, idx, smollm, mode="vibes")
    with pytest.raises(InputError, match="judge model"):
        label_pairs(exs, idx, smollm, match="llm")
    with pytest.raises(ValueError, match="unknown match rule"):
        label_pairs(exs, idx, smollm, match="fuzzy")
    with pytest.raises(InputError, match="no question with a reference"):
        label_pairs([type(exs[0])(id="x", question="q?", references=[])], idx, smollm)
    from verirag_lab.train.forecaster_labels import _label_one

    hit = ScoredPassage(Passage(id="blank", text="  "), 0.0, 0)  # recorded, never sent to the model
    rec = _label_one(exs[0], ["green"], hit, "k", "answer", smollm, smollm, "recall_or_substring", None, 16)
    assert rec.label is None and rec.error == "the document is empty"
    with pytest.raises(InputError, match="every labelled pair has label"):
        train_forecaster([rec.__class__(**{**rec.__dict__, "label": 1, "error": None})] * 3)


# ---- the rerank / re-query stage ------------------------------------------------------------
class _Retriever:
    def __init__(self, docs):
        self.docs, self.queries = docs, []

    def __call__(self, query, k):
        self.queries.append(query)
        return [ScoredPassage(p, 1.0 / (i + 1), i) for i, p in enumerate(self.docs[:k])]


def test_rerank_reorders_by_the_forecast(toy_forecaster):
    docs = [
        Passage(id="banana", text="Bananas grow in warm places and taste sweet."),
        Passage(id="tram", text="The tram number 3 is painted blue."),
    ]
    q = "what colour is the tram number 3?"
    step = ForecastRerankStage(toy_forecaster, epsilon=0.0)
    r = step.run(q, _Retriever(docs)(q, 2), lambda _s: None)
    assert [d["id"] for d in r.info["reranked"]] == ["tram", "banana"]
    assert r.info["reranked"][0]["retrieval_rank"] == 1 and r.kept[0].passage.id == "tram"
    assert r.confidence == r.info["confidence"] == pytest.approx(r.info["reranked"][0]["f"], abs=1e-6)
    assert not r.requery and "warning" not in r.info
    saved = toy_forecaster.provenance
    toy_forecaster.provenance = {**saved, "k": 1}  # trained on the top 1 only: scoring 2 is said
    try:
        assert "trained on the top 1" in step.run(q, _Retriever(docs)(q, 2), lambda _s: None).info["warning"]
    finally:
        toy_forecaster.provenance = saved


def test_requery_runs_at_most_once(toy_forecaster, smollm):
    docs = [Passage(id="banana", text="Bananas grow in warm places and taste sweet.")]
    retrieve = _Retriever(docs)
    calls = []
    llm = MeteredLLM(smollm)
    stages = [ForecastRerankStage(toy_forecaster, epsilon=1.0)]  # nothing reaches 1.0: asks for a re-query
    with metering() as usage:
        r = run_stages(
            "what colour is the tram number 3?",
            lambda q: retrieve(q, 1),
            stages,
            calls.append,
            reformulate=lambda q: reformulate_query(llm, q),
        )
    assert r.requery is not None and usage.calls == 1
    assert len(retrieve.queries) <= 2 and calls.count("reformulating the query") == 1
    assert r.requery["query"] and r.requery["used"] in ("original", "reformulated")


def test_reformulation_failure_keeps_the_question():
    q, err = reformulate_query(FailingLLM(BackendError("the server is down")), "who wrote hamlet?")
    assert q == "who wrote hamlet?" and "server is down" in err


def test_guidance_abstention_counts_as_no_answer():
    assert Guidance("no answer.", []).no_answer and Guidance("", []).no_answer
    assert not Guidance("Paris", []).no_answer


# ---- the probe over the LLM's own hidden states ---------------------------------------------
def test_probe_learns_from_hidden_states_and_refuses_another_model(smollm, smollm_path, tmp_path):
    from verirag.learned.forecaster import ProbeForecaster
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    q, d, y, g = toy_pairs(8, 6)
    probe = ProbeForecaster(smollm, val_share=0.25).fit(q, d, y, g)
    assert probe.metrics_["auroc"] > 0.9
    probe.save(tmp_path / "p")
    again = load_forecaster(tmp_path / "p", llm=smollm)
    np.testing.assert_allclose(again.predict_proba(q[:4], d[:4]), probe.predict_proba(q[:4], d[:4]), rtol=1e-12)
    other = LlamaCppLLM(smollm_path, model_id="other", fingerprint="other-weights", n_ctx=512)
    try:
        with pytest.raises(InputError, match="fitted for model .*--kind probe"):
            load_forecaster(tmp_path / "p", llm=other)
    finally:
        other.close()
    with pytest.raises(InputError, match="needs the model it was trained on"):
        load_forecaster(tmp_path / "p")


# ---- the command line, end to end ------------------------------------------------------------
@pytest.mark.slow
def test_train_forecaster_then_ask_with_it(tmp_path):
    import os
    import subprocess
    import sys

    from test_train_trust_calibration import fixture_rows

    data = tmp_path / "towns.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in fixture_rows()))
    corpus = tmp_path / "passages.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for r in fixture_rows() for p in r["passages"]))

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "verirag", *args],
            capture_output=True,
            text=True,
            timeout=600,
            env=os.environ.copy(),
            stdin=subprocess.DEVNULL,
        )

    r = run(
        "train",
        "forecaster",
        str(data),
        "--out",
        str(tmp_path / "f"),
        "--k",
        "3",
        "--model",
        "smollm2-135m",
        "--epochs",
        "1",
    )
    assert r.returncode == 0, r.stderr
    assert "30 pairs from 10 questions" in r.stdout and "validation AUROC" in r.stdout
    assert (tmp_path / "f" / "forecaster.json").is_file() and len(
        (tmp_path / "f" / "labels.jsonl").read_text().splitlines()
    ) == 30
    r = run(
        "ask",
        "What colour is the bridge in Kleve?",
        "--corpus",
        str(corpus),
        "--preset",
        "tiny",
        "--retrieval",
        "bm25",
        "--forecaster",
        str(tmp_path / "f"),
        "--epsilon",
        "0",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    fc = json.loads(r.stdout)["forecast"]
    fs = [d["f"] for d in fc["reranked"]]
    assert 1 < len(fs) <= 20 and fs == sorted(fs, reverse=True)  # BM25 returns the passages that match at all
    assert fc["kept"] == [fc["reranked"][0]["id"]] and fc["reformulated"] is False
    assert [e["id"] for e in json.loads(r.stdout)["evidence"]] == fc["kept"]
    r = run("train", "forecaster", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "g"))
    assert r.returncode != 0 and "neither a dataset name" in r.stderr and "Traceback" not in r.stderr


# ---- the verbalized-confidence baselines as methods -----------------------------------------
@pytest.mark.parametrize("name", ["vanilla+verbal_number", "vanilla+verbal_linguistic"])
def test_verbal_confidence_methods_run_and_record_unreadable_replies(smollm, name):
    from verirag.awf.compose import build_method
    from verirag.awf.spec import method_names
    from verirag.awf.trace import Trace

    assert name in method_names()
    ex = examples()[0]
    out = build_method(name, smollm, max_tokens=16).run(Trace(ex.question, ex.passages[:1]))
    assert 0.0 <= out.score <= 1.0 and out.answer
    assert out.score in {i / 10 for i in range(11)} | set(LINGUISTIC_SCALE.values()) or out.error

    evasive = ScriptedLLM("I would rather not say.", name="evasive")  # will not state a confidence
    out = build_method(name, evasive).run(Trace(ex.question, ex.passages[:1]))
    assert out.score == 0.0 and "unreadable confidence" in out.error


def test_calibrag_method_answers_from_the_best_forecast(toy_forecaster, smollm, tmp_path):
    from verirag.awf.compose import build_method
    from verirag.awf.spec import method_names
    from verirag.awf.trace import Trace

    toy_forecaster.save(tmp_path / "f")
    assert "calibrag" in method_names()
    with pytest.raises(InputError, match="needs a trained forecaster"):
        build_method("calibrag", smollm)
    passages = [
        Passage(id="banana", text="Bananas grow in warm places and taste sweet."),
        Passage(id="tram", text="The tram number 3 is painted blue."),
    ]
    m = build_method(f"calibrag(forecaster={tmp_path / 'f'})", smollm, max_tokens=12)
    trace = Trace("what colour is the tram number 3?", passages)
    out = m.run(trace)
    assert out.details["kept"] == [1] and out.score == pytest.approx(max(out.details["forecast"]))
    assert out.score > out.details["forecast"][0] and out.answer
    n = len(trace.quantities)
    assert m.run(trace).score == out.score and len(trace.quantities) == n  # computed once per trace
