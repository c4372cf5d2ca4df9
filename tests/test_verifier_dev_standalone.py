"""benchmarks/verifier_dev.py's standalone rewrites (issue 47, item 3): each follow-up rewritten once
and resumably, a first question left as it is, a bad rewrite kept as the question with its reason,
and the log of rewritten questions refusing a question without one. A scripted model stands in:
these tests are about the plumbing, not about what a model writes."""

from __future__ import annotations

import json

import pytest
from benchmark_module import load_benchmark
from doubles import ScriptedLLM


@pytest.fixture(scope="module")
def dev():
    return load_benchmark("verifier_dev")


def _row(qid: str, question: str, history: list[str]) -> dict:
    return {
        "dataset": "topiocqa",
        "id": qid,
        "model": "m",
        "question": question,
        "response": "It opened in 1931.",
        "gold_passages": [{"title": "Bridge", "text": "The Halvorsen bridge opened in 1931."}],
        "references": ["1931"],
        "human_correctness": "correct",
        "history": history,
    }


@pytest.fixture
def data(tmp_path):
    source = tmp_path / "instruct_qa_human" / "correctness_human_eval_1200.jsonl"
    source.parent.mkdir()
    rows = [
        _row("1", "when did it open?", ["tell me about the Halvorsen bridge", "It crosses the fjord."]),
        _row("2", "what is the Halvorsen bridge?", []),
    ]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_a_rewrite_is_read_from_the_first_line_and_a_bad_one_keeps_the_question(dev):
    history = ["tell me about the Halvorsen bridge", "It crosses the fjord."]
    llm = ScriptedLLM('Rewritten question: "When did the Halvorsen bridge open?"\nIt opened in 1931.')
    assert dev.standalone_rewrite(llm, "when did it open?", history) == ("When did the Halvorsen bridge open?", None)
    assert dev.standalone_rewrite(ScriptedLLM("  \n"), "when did it open?", history) == (
        "when did it open?",
        "the model returned no question",
    )
    assert dev.standalone_rewrite(ScriptedLLM("x"), "what is it?", []) == ("what is it?", None)  # no call


def test_rewrite_resumes_and_the_log_uses_the_rewrites_without_history(dev, data, tmp_path, monkeypatch):
    llm = ScriptedLLM(["When did the Halvorsen bridge open?"])  # one follow-up: one call, then none
    monkeypatch.setattr("verirag.llm.factory.load_llm", lambda *a, **k: llm)
    out = tmp_path / "standalone.jsonl"
    assert dev.main(["rewrite", "--data", str(data), "--out", str(out)]) == 0
    assert dev.main(["rewrite", "--data", str(data), "--out", str(out)]) == 0  # all there: nothing asked
    made = {d["group"]: d["standalone"] for d in map(json.loads, out.read_text().splitlines())}
    assert made == {"topiocqa:1": "When did the Halvorsen bridge open?", "topiocqa:2": "what is the Halvorsen bridge?"}

    log = tmp_path / "log.jsonl"
    args = ["log", "--data", str(data), "--dataset", "topiocqa", "--out", str(log)]
    assert dev.main([*args, "--standalone", str(out)]) == 0
    rows = {r["group"]: r for r in map(json.loads, log.read_text().splitlines())}
    assert rows["topiocqa:1"]["user_input"] == "When did the Halvorsen bridge open?"
    assert all("history" not in r for r in rows.values())

    out.write_text(out.read_text().splitlines()[0] + "\n")  # one question without a rewrite
    assert dev.main([*args, "--standalone", str(out)]) == 1
