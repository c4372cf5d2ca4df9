"""calibrate-retrieval end to end on our own fixture (real BM25, no model), and the pipeline's trust
stage: only trusted chunks reach the model; an empty trusted set is the user's chosen action."""

from __future__ import annotations

import json

import pytest
from doubles import ScriptedLLM, yes_no

from verirag.errors import InputError
from verirag.learned.trust_filter import ConformalTrustFilter
from verirag.retrieval import Index
from verirag.types import Example, Passage
from verirag_lab.train.trust_calibration import calibrate_retrieval, reference_sources

TOWNS = ["Varnholt", "Ostby", "Kleve", "Marden", "Sundal", "Trelle", "Haldor", "Brekka", "Lunde", "Vik"]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange", "purple", "brown"]


def fixture_rows():
    rows = []
    for t, c in zip(TOWNS, COLOURS):
        rows.append(
            {
                "question": f"What colour is the bridge in {t}?",
                "references": [c],
                "source": t,
                "passages": [
                    {"id": f"{t}-bridge", "title": t, "text": f"The bridge in {t} is painted {c}."},
                    {"id": f"{t}-market", "title": t, "text": f"The market of {t} opens on Saturdays."},
                    {
                        "id": f"{t}-weather",
                        "title": f"{t} weather",
                        "text": f"It rains often in the valley around {t} in autumn.",
                    },
                ],
            }
        )
    return rows


@pytest.fixture()
def data_file(tmp_path):
    p = tmp_path / "towns.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in fixture_rows()))
    return p


def examples():
    from verirag_lab.datasets.jsonl import parse_line

    return [parse_line(r, i, "fixture") for i, r in enumerate(fixture_rows(), 1)]


def pooled_index(kind="bm25"):
    return Index.build([p for ex in examples() for p in ex.passages], kind=kind, chunk_words=None)


def test_reference_sources_from_the_source_field_or_the_relevant_passages():
    ex = examples()[0]
    assert reference_sources(ex) == ["Varnholt"]
    labelled = Example(
        id="x",
        question="q",
        passages=[Passage("a", "t", title="Gold"), Passage("b", "u", title="Other")],
        relevance=[1, 0],
    )
    assert reference_sources(labelled) == ["Gold"]
    assert reference_sources(Example(id="y", question="q")) == []


def test_calibration_on_a_pooled_bm25_index():
    idx = pooled_index()
    cal = calibrate_retrieval(examples(), idx, k=3, alpha=0.2)
    f = cal.filter
    assert f.fingerprints["retriever"] == "bm25" and f.fingerprints["corpus"] == idx.fingerprint and f.k_ == 3
    assert f.n_questions_ == 10 and f.n_correct_ >= 10  # the bridge chunk of each town is of its source
    assert 0.0 < f.calibration_.m1 <= 1.0 and 0.0 < f.calibration_.m2 <= 1.0
    # the top chunk of every question is its own town's bridge: trusted, and what is kept is a subset
    hits = idx.search("What colour is the bridge in Ostby?", k=3)
    mask = f.trusted([h.score for h in hits])
    assert mask[0] and hits[0].passage.id == "Ostby-bridge"
    with pytest.raises(InputError, match="nothing to calibrate"):
        calibrate_retrieval([Example(id="z", question="q", references=["a"])], idx, k=3)


def test_the_cli_writes_a_filter_that_ask_loads(tmp_path, data_file, capsys):
    from verirag.cli import main

    out = tmp_path / "trust.json"
    assert main(["calibrate-retrieval", str(data_file), "--out", str(out), "--k", "3", "--alpha", "0.2"]) == 0
    printed = capsys.readouterr().out
    assert "10 questions" in printed and "m1 =" in printed
    f = ConformalTrustFilter.load(out)
    assert f.alpha == 0.2 and f.fingerprints["retriever"] == "bm25"
    assert main(["calibrate-retrieval", str(tmp_path / "none.jsonl"), "--out", str(out)]) == 2
    assert main(["calibrate-retrieval", str(data_file), "--out", str(out), "--alpha", "1.5"]) == 2


def pipeline_with_trust(monkeypatch, tmp_path, on_untrusted):
    """With a stand-in LLM: these tests are about the pipeline's trust stage, not about a model."""
    from verirag.awf.pipeline import Pipeline, PipelineConfig

    llm = ScriptedLLM("green", next_token=yes_no(0.9), name="standin", backend="standin")
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: llm)
    idx = pooled_index()
    cal = calibrate_retrieval(examples(), idx, k=3, alpha=0.2)
    path = cal.filter.save(tmp_path / "trust.json")
    p = Pipeline(PipelineConfig(model="standin", k=3, trust=str(path), on_untrusted=on_untrusted), index=idx)
    return p, llm


def test_ask_keeps_only_trusted_chunks_and_reports_m1_m2(monkeypatch, tmp_path):
    p, _llm = pipeline_with_trust(monkeypatch, tmp_path, "abstain")
    r = p.ask("What colour is the bridge in Varnholt?")
    assert r.trust["m1"] is True and 0 < r.trust["m2"] <= 1
    assert [e.id for e in r.evidence] == r.trust["trusted"] and "Varnholt-bridge" in r.trust["trusted"]
    assert r.to_dict()["trust"]["threshold"] == pytest.approx(p.trust_filter.threshold_)


@pytest.mark.parametrize("action", ["abstain", "no-context", "keep-top"])
def test_an_empty_trusted_set_is_the_chosen_action_never_a_crash(monkeypatch, tmp_path, action):
    p, _llm = pipeline_with_trust(monkeypatch, tmp_path, action)
    # a question only the weather chunks match, weakly: retrieved, none trusted
    r = p.ask("Does it rain in autumn?")
    assert r.trust["m1"] is False and r.trust["trusted"] == [] and r.trust["empty_action"] == action
    if action == "abstain":
        assert r.action == "abstained" and r.evidence == [] and "trusted" in r.error
    elif action == "no-context":
        assert r.action == "fallback" and r.answer == "green" and r.evidence == []
    else:
        assert len(r.evidence) == 1 and r.action in ("answered", "abstained")


def test_on_untrusted_is_checked():
    from verirag.awf.pipeline import PipelineConfig

    with pytest.raises(InputError, match="on_untrusted"):
        PipelineConfig(on_untrusted="shrug").validate()


def test_the_cli_checks_the_guarantee_on_held_out_questions(tmp_path, data_file, capsys):
    from verirag.cli import main

    out = tmp_path / "trust.json"
    assert (
        main(
            ["calibrate-retrieval", str(data_file), "--out", str(out), "--k", "3", "--alpha", "0.2", "--holdout", "0.3"]
        )
        == 0
    )
    printed = " ".join(capsys.readouterr().out.split())
    assert "7 questions" in printed and "held out (3 questions" in printed and "95% CI" in printed
    assert main(["calibrate-retrieval", str(data_file), "--out", str(out), "--holdout", "1.0"]) == 2
