"""The facade (`from verirag import Verifier, evaluate, fit_threshold`) and the one answer core under
every entry point: the same default method in Python, the CLI and HTTP, the same score for a declined
answer in a grid record and in `ask`, and a new stage as one class."""

from __future__ import annotations

import json
import math
import warnings

import pytest
from doubles import ScriptedLLM

import verirag
from verirag import AskResult, Passage, Pipeline, PipelineConfig, Verifier, VerifyResult, evaluate, fit_threshold
from verirag.awf.core import DECLINED, AnswerCore, AnswerRules, AnswerState, PassagesRecord, VerifyGiven
from verirag.awf.defaults import DEFAULT_METHOD
from verirag.errors import InputError
from verirag.learned.threshold import ThresholdController
from verirag.retrieval import Index

QUESTION = "Who designed the lighthouse?"
CONTEXTS = ["The lighthouse on Varnholt was designed by Ada Brennan in 1887.", "Puffins nest on the cliffs in April."]


@pytest.fixture(scope="module")
def verifier():
    return Verifier()  # the shipped trained verifier: a real model read from disk, no LLM


def test_the_package_exports_the_facade():
    for name in ("Verifier", "evaluate", "fit_threshold", "Passage", "AskResult", "VerifyResult", "Pipeline"):
        assert name in verirag.__all__ and getattr(verirag, name) is not None
    assert AskResult.__module__ == VerifyResult.__module__ == Passage.__module__ == "verirag.types"


def test_verifier_with_plain_strings(verifier):
    assert verifier.method == DEFAULT_METHOD and verifier.threshold == 0.5
    r = verifier.verify(QUESTION, "Ada Brennan designed it.", CONTEXTS)
    assert isinstance(r, VerifyResult) and r.method == DEFAULT_METHOD
    assert [e.id for e in r.evidence] == ["p0", "p1"]  # plain strings: ids by place, as /v1/verify gives
    assert r.supporting_passage.id == "p0" and r.faithful and r.score > 0.5
    assert [s.text for s in r.sentences] == ["Ada Brennan designed it."]
    wrong = verifier.verify(QUESTION, "Puffins designed it in April.", CONTEXTS)
    assert wrong.score < r.score


def test_verifier_with_passages_gives_the_same_scores(verifier):
    by_text = verifier.verify(QUESTION, "Ada Brennan designed it.", CONTEXTS)
    given = [Passage("lh", CONTEXTS[0], title="Lighthouse"), Passage("pf", CONTEXTS[1])]
    by_passage = verifier.verify(QUESTION, "Ada Brennan designed it.", given)
    assert by_passage.supporting_passage.id == "lh"
    assert by_passage.score == pytest.approx(by_text.score, abs=0.05)  # the title is read too


def test_verifier_refuses_bad_input_clearly(verifier):
    with pytest.raises(InputError, match="given bare"):
        verifier.verify(QUESTION, "Ada.", CONTEXTS[0])
    with pytest.raises(InputError, match="no passages"):
        verifier.verify(QUESTION, "Ada.", [])
    with pytest.raises(InputError, match="passage 1 is a int"):
        verifier.verify(QUESTION, "Ada.", ["text", 3])
    with pytest.raises(InputError, match="cannot verify|scores only the answers it generates"):
        Verifier(method="intrinsic", preset="tiny")


def test_verify_many_keeps_a_bad_row_in_its_place(verifier):
    rows = [
        {"question": QUESTION, "answer": "Ada Brennan.", "contexts": CONTEXTS},
        {"question": QUESTION, "answer": "", "contexts": CONTEXTS},
        (QUESTION, "Ada Brennan.", [Passage("x", CONTEXTS[0])]),
        {"question": QUESTION},
    ]
    seen = []
    out = verifier.verify_many(rows, on_progress=seen.append)
    assert len(out) == 4 and seen == [1, 2, 3, 4]
    assert out[0].score is not None and out[2].supporting_passage.id == "x"
    assert out[1].score is None and not out[1].faithful and "row 2" in out[1].error and "empty" in out[1].error
    assert "missing answer, contexts" in out[3].error and out[3].method == DEFAULT_METHOD


def test_a_declined_answer_is_never_supported(verifier):
    r = verifier.verify(QUESTION, "I don't know.", CONTEXTS)
    assert r.score == 0.0 and not r.faithful and any("declines" in w for w in r.warnings)


def test_a_threshold_file_fitted_for_another_method_warns_from_python(tmp_path):
    fitted = ThresholdController(precision=0.8, delta=0.1).fit([0.2, 0.4, 0.6, 0.8, 0.9] * 20, [0, 0, 1, 1, 1] * 20)
    fitted.fingerprints.update(model="qwen2.5-1.5b", method="vanilla+nli", dataset="*", method_digest="")
    path = fitted.save(tmp_path / "nli-threshold")
    with pytest.warns(verirag.api.ThresholdWarning, match="vanilla\\+nli"):
        v = Verifier(threshold=path)
    assert v.threshold == fitted.threshold_ and any("vanilla+nli" in w for w in v.warnings)
    fitted.fingerprints.update(method=DEFAULT_METHOD)
    same = fitted.save(tmp_path / "verifier-threshold")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fitted for this model and method: silent
        Verifier(threshold=same)


def test_fit_threshold_is_the_controller_fit():
    scores = [i / 100 for i in range(100)]
    labels = [int(s > 0.3) for s in scores]
    got = fit_threshold(scores, labels, precision=0.9, delta=0.1)
    want = ThresholdController(precision=0.9, delta=0.1).fit(scores, labels)
    assert got.threshold_ == want.threshold_ and got.certified_
    assert fit_threshold(scores, action_rate=0.2).threshold_ == pytest.approx(0.2)
    with pytest.raises(InputError, match="exactly one"):
        fit_threshold(scores, labels)
    with pytest.raises(InputError, match="needs labels"):
        fit_threshold(scores, precision=0.9)


def test_evaluate_an_answer_log(tmp_path):
    log = tmp_path / "answers.jsonl"
    rows = [
        {"question": QUESTION, "answer": "Ada Brennan.", "contexts": CONTEXTS, "label": True},
        {"question": QUESTION, "answer": "Puffins.", "contexts": CONTEXTS, "label": False},
        {"question": QUESTION, "answer": "Ada Brennan.", "contexts": []},  # malformed: kept and counted
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = evaluate(log, tmp_path / "out", label_field="label")
    assert got.kind == "answer_log" and got.report.is_file()
    records = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert len(records) == 3 and {r["method"] for r in records if r["status"] == "verified"} == {DEFAULT_METHOD}
    assert json.loads((tmp_path / "out" / "summary.json").read_text()) == json.loads(json.dumps(got.summary))
    with pytest.raises(InputError, match="nothing to evaluate"):
        evaluate(tmp_path / "missing.jsonl", tmp_path / "out2")


@pytest.mark.slow
def test_evaluate_an_experiment_config_through_the_labs_door(tmp_path):
    """`verirag.evaluate(CONFIG)` runs the grid (the lab's `experiments.evaluate`), its report written."""
    data = tmp_path / "q.jsonl"
    row = {"id": "q1", "question": QUESTION, "passages": [{"title": "t", "text": CONTEXTS[0]}], "references": ["Ada"]}
    data.write_text(json.dumps(row) + "\n")
    config = tmp_path / "grid.yaml"
    config.write_text(
        f"name: tiny\ndatasets: [{{name: jsonl, path: {data}}}]\nmodels: [smollm2-135m]\nmethods: [vanilla]\n"
        "generation: {max_tokens: 8}\n"
    )
    got = evaluate(config, tmp_path / "run")
    assert got.kind == "experiment" and got.summary["written"] == 1 and got.report.is_file()
    again = evaluate(config, tmp_path / "run")  # resumed: nothing written again
    assert again.summary["written"] == 0 and again.summary["skipped"] == 1


# ---- one default everywhere --------------------------------------------------------------------
@pytest.mark.slow
def test_the_default_is_the_same_in_python_the_cli_and_http(tmp_path):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from verirag.cli import app
    from verirag.server.app import create_app
    from verirag.server.service import ServiceConfig, VeriragService

    python = Verifier().verify(QUESTION, "Ada Brennan.", CONTEXTS)
    passage = tmp_path / "lighthouse.txt"
    passage.write_text(CONTEXTS[0])
    cli = CliRunner().invoke(
        app, ["verify", "--question", QUESTION, "--answer", "Ada Brennan.", "--passages", str(passage), "--json"]
    )
    assert cli.exit_code == 0, cli.output
    service = VeriragService(ServiceConfig(preset="tiny", warm_up=False))
    with TestClient(create_app(service)) as client:
        methods = client.get("/v1/methods").json()
        http = client.post("/v1/verify", json={"question": QUESTION, "answer": "Ada Brennan.", "passages": CONTEXTS})
    assert http.status_code == 200, http.text
    assert python.method == json.loads(cli.stdout)["method"] == methods["verify_default"] == DEFAULT_METHOD
    assert http.json()["method"] == DEFAULT_METHOD


# ---- one answer core ---------------------------------------------------------------------------
def _declining(monkeypatch):
    """A model that declines, and a judge that would call the refusal supported (P(Yes) 0.9)."""
    llm = ScriptedLLM("I don't know.", next_token={"Yes": math.log(0.9), "No": math.log(0.1)})
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: llm)
    return llm


def test_a_grid_record_and_ask_give_the_same_score_for_a_declined_answer(monkeypatch, tmp_path):
    from verirag.records import ResultStore
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    llm = _declining(monkeypatch)
    passages = [Passage("a", CONTEXTS[0]), Passage("b", CONTEXTS[1])]
    asked = Pipeline(
        PipelineConfig(model="scripted", method="vanilla+nli", k=2), index=Index.build(passages, kind="bm25")
    )
    r = asked.ask(QUESTION)
    assert r.retrieved_answer == "I don't know." and r.action == "abstained"

    data = tmp_path / "one.jsonl"
    data.write_text(
        json.dumps(
            {
                "id": "q1",
                "question": QUESTION,
                "references": ["Ada Brennan"],
                "passages": [p.to_dict() for p in passages],
            }
        )
        + "\n"
    )
    cfg = parse_config(
        {
            "name": "declined",
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["scripted"],
            "methods": ["vanilla+nli"],
        }
    )
    run_experiment(cfg, tmp_path / "run", llm_factory=lambda spec, n_ctx: llm, progress=False)
    (record,) = ResultStore(tmp_path / "run").load()
    assert record.score == r.score == 0.0  # the score `calibrate` fits on is the one `ask` acts on
    assert record.details["answer_rules"] == [DECLINED] and record.details["raw_score"] == pytest.approx(0.9)


class RequireTwoPassages:
    """A stage a user adds: refuse to call an answer supported that fewer than two passages back."""

    name = "two_passages"

    def run(self, state: AnswerState, say) -> None:
        backing = [s for s in state.judgement.per_passage or [] if s is not None and s >= 0.5]
        if len(backing) < 2:
            state.judgement.score = min(state.judgement.score or 0.0, 0.49)
            state.judgement.rules.append(self.name)


def test_a_new_stage_is_one_class(verifier):
    predictor = verifier.pipeline.answer_verifier()
    passages = PassagesRecord([Passage("a", CONTEXTS[0]), Passage("b", CONTEXTS[1])])
    core = AnswerCore([VerifyGiven(predictor, verifier.method), AnswerRules(), RequireTwoPassages()])
    state = core.run(AnswerState(QUESTION, answer="Ada Brennan designed it.", passages=passages))
    plain = verifier.verify(QUESTION, "Ada Brennan designed it.", CONTEXTS)
    assert plain.score > 0.5 and state.judgement.score == 0.49 and state.judgement.rules == ["two_passages"]


def test_the_readme_first_screen_runs(capsys):
    """The README's Verifier snippet, as a user copies it (the printed score is its comment's)."""
    from readme import python_block

    exec(python_block("v = Verifier()                       # the default method"), {})
    score, faithful, passage, method = capsys.readouterr().out.split()
    assert float(score) == pytest.approx(0.69, abs=0.05) and faithful == "True" and passage == "p0"
    assert method == DEFAULT_METHOD


def test_verify_many_batches_an_llm_judges_rows_a_few_at_a_time(monkeypatch):
    """An LLM judge reads one answer after another: its rows go 8 at a time (progress and results
    flow), the trained verifier's 256 at a time (one batched pass). No judge runs: this is about the
    cutting, so the pipeline's batch call is a stand-in."""
    from verirag.awf.verify_batch import JUDGE_BLOCK, VERIFY_BLOCK
    from verirag.errors import InputError as Refused

    for method, block in (("vanilla+nli", JUDGE_BLOCK), (DEFAULT_METHOD, VERIFY_BLOCK)):
        v = Verifier(method=method, preset="tiny")
        sizes = []
        monkeypatch.setattr(
            v._pipeline, "verify_many", lambda items, s=sizes: s.append(len(items)) or [Refused("x")] * len(items)
        )
        out = v.verify_many([(QUESTION, "Ada Brennan.", CONTEXTS)] * (block + 3))
        assert sizes == [block, 3] and len(out) == block + 3
