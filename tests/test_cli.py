"""The real CLI, in a subprocess, on the shipped demo corpus with the smallest real model."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from verirag.demo import corpus_path

pytestmark = pytest.mark.slow


def run(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "verirag", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )


def test_ask_json():
    r = run(
        "ask", "How long does the ferry crossing take?", "--corpus", str(corpus_path()), "--preset", "tiny", "--json"
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("answer", "score", "faithful", "threshold", "action", "evidence", "model", "timings"):
        assert key in out
    assert 0.0 <= out["score"] <= 1.0 and out["threshold"] == 0.5
    assert out["action"] in {"answered", "abstained", "fallback"}
    assert {"id", "text", "retrieval_score", "support_score"} <= set(out["evidence"][0])
    assert out["evidence"][0]["id"] == "ferry.md"


def test_index_then_ask_index(tmp_path):
    r = run("index", str(corpus_path()), "--out", str(tmp_path / "idx"), "--retrieval", "bm25")
    assert r.returncode == 0, r.stderr
    r = run(
        "ask",
        "Who designed the lighthouse?",
        "--index",
        str(tmp_path / "idx"),
        "--preset",
        "tiny",
        "--json",
        "--threshold",
        "0.0",
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["action"] == "answered" and out["threshold"] == 0.0


def test_models_list():
    r = run("models", "list", "--json")
    assert r.returncode == 0, r.stderr
    names = {m["name"] for m in json.loads(r.stdout)}
    assert {"qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2-135m", "gemma3-270m", "all-MiniLM-L6-v2"} <= names


@pytest.mark.parametrize(
    "args, message",
    [
        (("ask", "   ", "--corpus", "CORPUS", "--preset", "tiny"), "question is empty"),
        (("ask", "q", "--corpus", "/nonexistent/place", "--preset", "tiny"), "/nonexistent/place"),
        (("ask", "q", "--preset", "tiny"), "--corpus"),
        (("ask", "q", "--corpus", "CORPUS", "--model", "/nonexistent/model.gguf"), "model"),
        (("ask", "q", "--corpus", "CORPUS", "--preset", "tiny", "--threshold", "2"), "threshold"),
        (("ask", "q", "--index", "/nonexistent/index", "--preset", "tiny"), "index"),
        (("ask", "q", "--corpus", "CORPUS", "--preset", "tiny", "--method", "nope"), "unknown method"),
        (("ask", "q", "--corpus", "CORPUS", "--preset", "tiny", "--fallback", "escalate"), "escalate"),
    ],
)
def test_user_errors_are_clear(args, message):
    args = tuple(str(corpus_path()) if a == "CORPUS" else a for a in args)
    r = run(*args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert message in r.stderr


def test_binary_only_corpus_is_an_error(tmp_path):
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "latin.md").write_bytes("caf\xe9".encode("latin-1"))
    r = run("ask", "q", "--corpus", str(tmp_path), "--preset", "tiny")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "blob.txt" in r.stderr and "latin.md" in r.stderr


EVAL_FIXTURE = [
    {
        "id": "q1",
        "question": "What colour is the bridge in Varnholt?",
        "passages": ["The bridge in Varnholt is painted green every spring."],
        "references": ["green"],
    },
    {
        "id": "q2",
        "question": "How many mills stand in Varnholt?",
        "passages": ["Three mills stand beside the river in Varnholt."],
        "references": ["three"],
    },
    {
        "id": "q3",
        "question": "Who founded Varnholt?",
        "passages": ["The market of Varnholt opens on Saturdays."],
        "references": ["Ida Berg"],
    },
]


def test_eval_report_calibrate_then_ask_with_the_fitted_threshold(tmp_path):
    data = tmp_path / "v.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in EVAL_FIXTURE))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        f"name: cli\ndatasets: [{{name: jsonl, path: {data}}}]\nmodels: [smollm2-135m]\n"
        "methods: [vanilla, vanilla+k_precision]\ngeneration: {max_tokens: 24}\n"
    )
    out_dir = tmp_path / "run"
    r = run("eval", str(cfg), "--out", str(out_dir))
    assert r.returncode == 0, r.stderr
    assert "6 records written" in r.stdout and (out_dir / "report.html").exists()
    (out_dir / "report.html").unlink()
    r = run("report", str(out_dir))
    assert r.returncode == 0 and (out_dir / "report.html").exists(), r.stderr
    r = run("eval", str(cfg), "--out", str(out_dir), "--no-report")  # resumes: nothing to do
    assert "0 records written, 6 already done" in r.stdout, r.stdout
    r = run(
        "calibrate",
        str(out_dir),
        "--model",
        "smollm2-135m",
        "--method",
        "vanilla+k_precision",
        "--action-rate",
        "0.34",
        "--save",
        str(tmp_path / "t.json"),
    )
    assert r.returncode == 0, r.stderr
    fitted = json.loads((tmp_path / "t.json").read_text())
    assert fitted["settings"]["action_rate"] == 0.34 and fitted["state"]["n_fit_"] == 3
    assert fitted["fingerprints"]["method_digest"] and fitted["provenance"]["method_options"]["max_tokens"] == 24
    r = run(
        "ask",
        "How long does the ferry crossing take?",
        "--corpus",
        str(corpus_path()),
        "--preset",
        "tiny",
        "--method",
        "vanilla+k_precision",
        "--json",
        "--threshold",
        str(tmp_path / "t.json"),
    )
    assert r.returncode == 0, r.stderr
    # the run answered in 24 tokens, ask at Vanilla's own 96: the threshold's basis differs, and is said
    assert "max_tokens 24 (fitted) vs 96 (now)" in " ".join(r.stderr.split()), r.stderr
    assert json.loads(r.stdout)["threshold"] == pytest.approx(float(fitted["state"]["threshold_"]))


def test_eval_config_errors_are_one_line(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("datasets: [nope]\nmodels: [smollm2-135m]\nmethods: [vanilla+nope]\n")
    r = run("eval", str(cfg), "--out", str(tmp_path / "run"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "datasets[0].name" in r.stderr and "methods[0]" in r.stderr


def test_demo_reports_its_total_time_and_where_it_went():
    r = run("demo", "--preset", "tiny")
    assert r.returncode == 0, r.stderr
    text = " ".join(r.stdout.split())  # the console wraps long lines
    assert "of 4 questions, in " in text and "per question: generate " in text and "verify " in text, text
