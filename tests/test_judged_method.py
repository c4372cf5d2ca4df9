"""`--judge` means one thing at every door (issue 49, item 2): a judge chosen without a method
selects the method that uses it (`judged_method`), in `Verifier`, `verirag verify`, `ask`, and both
routes of `serve` (/v1/ask and /v1/verify); a method named stays named."""

from __future__ import annotations

import json
import math

import pytest
from doubles import ScriptedLLM

from verirag import Verifier
from verirag.awf.defaults import DEFAULT_METHOD, JUDGED_METHOD
from verirag.awf.pipeline import Pipeline

QUESTION = "Who designed the lighthouse?"
ANSWER = "Ada Brennan designed it."
CONTEXTS = ["The lighthouse on Varnholt was designed by Ada Brennan in 1887.", "Puffins nest on the cliffs in April."]


@pytest.fixture()
def judge_llm(monkeypatch):
    """A judge that says Yes with P 0.8 (every model the pipelines load)."""
    llm = ScriptedLLM("Ada Brennan.", next_token={"Yes": math.log(0.8), "No": math.log(0.2)})
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: llm)
    return llm


def test_the_rule():
    from verirag.awf.defaults import judged_method

    assert judged_method(None, None) == DEFAULT_METHOD
    assert judged_method(None, "llm") == JUDGED_METHOD
    assert judged_method("vanilla+self_check", "llm") == "vanilla+self_check"  # a named method stands
    assert judged_method(None, None, default="vanilla+nli") == "vanilla+nli"


def test_verify_ask_and_serve_choose_the_same_method_for_a_judge(judge_llm, tmp_path):
    from fastapi.testclient import TestClient
    from typer.testing import CliRunner

    from verirag.cli import app
    from verirag.server.app import create_app
    from verirag.server.service import ServiceConfig, VeriragService

    python = Verifier(judge="llm", preset="tiny")
    assert python.verify(QUESTION, ANSWER, CONTEXTS).method == python.method

    passage = tmp_path / "lighthouse.txt"
    passage.write_text(CONTEXTS[0])
    cli = CliRunner().invoke(
        app,
        ["verify", "--question", QUESTION, "--answer", ANSWER, "--passages", str(passage)]
        + ["--judge", "llm", "--preset", "tiny", "--json"],
    )
    assert cli.exit_code == 0, cli.output
    cli_method = json.loads(cli.stdout)["method"]

    asked = Pipeline.from_preset("tiny", judge="llm").config.method

    service = VeriragService(ServiceConfig(preset="tiny", overrides={"judge": "llm"}, warm_up=False))
    with TestClient(create_app(service)) as client:
        http = client.post("/v1/verify", json={"question": QUESTION, "answer": ANSWER, "passages": CONTEXTS})
    assert http.status_code == 200, http.text

    assert python.method == cli_method == asked == JUDGED_METHOD
    assert service.pipeline.config.method == service.verify_method == http.json()["method"] == JUDGED_METHOD


def test_a_named_method_with_a_judge_it_cannot_use_is_a_clear_error(judge_llm):
    from verirag.errors import InputError

    with pytest.raises(InputError, match="uses no entailment model"):
        Verifier(method="vanilla+k_precision", judge="llm", preset="tiny")
