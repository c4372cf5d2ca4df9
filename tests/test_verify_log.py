"""`verirag verify`: another system's answer logs (RAGAS, DeepEval, mapped fields) verified with the
smallest real model, malformed lines reported, a killed run resumed, labels -> AUROC with intervals,
the report's flagged answers first, and one answer from passage files."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from verirag.answer_log import read_answer_log
from verirag.answer_log.formats import parse_label
from verirag.answer_log.summary import entry_labels, labelled_metrics
from verirag.awf.defaults import DEFAULT_METHOD
from verirag.cli import main
from verirag.errors import InputError

REPO = Path(__file__).resolve().parents[1]
TOWNS = [
    "Varnholt",
    "Ostby",
    "Kleve",
    "Marden",
    "Sundal",
    "Trelle",
    "Brenna",
    "Lofsted",
    "Haugen",
    "Rimdal",
    "Solvik",
    "Tarnby",
]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange"]


def towns(n: int, *, wrong_every: int = 2) -> list[dict]:
    """n made-up questions: the context says the bridge's colour; every `wrong_every`-th answer names
    another colour (labelled unsupported)."""
    rows = []
    for i, town in enumerate(TOWNS[:n]):
        colour = COLOURS[i % len(COLOURS)]
        right = i % wrong_every == 0
        said = colour if right else COLOURS[(i + 3) % len(COLOURS)]
        rows.append(
            {
                "q": f"What colour is the bridge in {town}?",
                "a": f"The bridge in {town} is {said}.",
                "ctx": [f"The bridge in {town} is painted {colour} every spring."],  # one: a judge call each
                "ref": colour,
                "right": right,
            }
        )
    return rows


def write_jsonl(path: Path, rows: list, extra_lines: dict[int, str] | None = None) -> Path:
    lines = [json.dumps(r) if not isinstance(r, str) else r for r in rows]
    for at, text in sorted((extra_lines or {}).items()):
        lines.insert(at, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ragas_log(path: Path, n: int, **kw) -> Path:
    rows = [
        {
            "id": f"q{i}",
            "user_input": r["q"],
            "response": r["a"],
            "retrieved_contexts": r["ctx"],
            "reference": r["ref"],
            "human": "supported" if r["right"] else "unsupported",
        }
        for i, r in enumerate(towns(n))
    ]
    return write_jsonl(path, rows, **kw)


# ---------------------------------------------------------------- formats (no model)
def test_ragas_legacy_and_deepeval_field_names_are_detected(tmp_path):
    rows = towns(3)
    new = read_answer_log(
        write_jsonl(
            tmp_path / "new.jsonl",
            [
                {"user_input": r["q"], "response": r["a"], "retrieved_contexts": r["ctx"], "reference": r["ref"]}
                for r in rows
            ],
        )
    )
    legacy = read_answer_log(
        write_jsonl(
            tmp_path / "legacy.jsonl",
            [
                {"question": r["q"], "answer": r["a"], "contexts": r["ctx"], "ground_truths": [r["ref"], "paint"]}
                for r in rows
            ],
        )
    )
    deepeval = read_answer_log(
        write_jsonl(
            tmp_path / "deepeval.jsonl",
            [
                {
                    "input": r["q"],
                    "actual_output": r["a"],
                    "retrieval_context": r["ctx"],
                    "expected_output": r["ref"],
                    "context": ["ideal context, not what was retrieved"],
                }
                for r in rows
            ],
        )
    )
    own = read_answer_log(  # a /v1/verify body a line: passages as strings or {id, title, text}
        write_jsonl(
            tmp_path / "own.jsonl",
            [
                {"question": r["q"], "answer": r["a"], "passages": [{"id": f"d{i}", "text": t} for t in r["ctx"]]}
                for i, r in enumerate(rows)
            ],
        )
    )
    formats = (new.fields.format, legacy.fields.format, deepeval.fields.format, own.fields.format)
    assert formats == ("ragas", "ragas_legacy", "deepeval", "verirag")
    for log in (new, legacy, deepeval, own):
        assert [e.question for e in log.entries] == [r["q"] for r in rows]
        assert [e.answer for e in log.entries] == [r["a"] for r in rows]
        assert [[p.text for p in e.passages] for e in log.entries] == [r["ctx"] for r in rows]
        assert [e.id for e in log.entries] == ["line-1", "line-2", "line-3"]  # no id field: the line number
        assert not log.malformed
    assert [e.references for e in new.entries] == [[r["ref"]] for r in rows]
    assert [e.references for e in legacy.entries] == [[r["ref"], "paint"] for r in rows]
    assert [e.references for e in deepeval.entries] == [[r["ref"]] for r in rows]


def test_mapped_fields_and_contexts_as_objects(tmp_path):
    path = write_jsonl(
        tmp_path / "mine.jsonl",
        [
            {
                "id": 7,
                "query": "Who paints the bridge?",
                "output": "The council.",
                "gold": "the council",
                "ok": 1,
                "docs": [
                    {"text": "The council paints the bridge.", "title": "Council", "id": "doc-9"},
                    {"page_content": "Paint is bought in May.", "metadata": {}},
                    "",
                ],
            },
            {
                "id": "b",
                "query": "When?",
                "output": "Spring.",
                "docs": "Every spring the bridge is painted.",
                "ok": False,
            },
        ],
    )
    log = read_answer_log(
        path,
        question_field="query",
        answer_field="output",
        contexts_field="docs",
        reference_field="gold",
        label_field="ok",
    )
    assert log.fields.format == "mapped" and log.fields.label == "ok"
    first, second = log.entries
    assert (first.id, first.question, first.answer, first.references, first.label) == (
        "7",
        "Who paints the bridge?",
        "The council.",
        ["the council"],
        1,
    )
    # the one input contract (verirag.contexts): the caller's id kept, else p0, p1, ... by place
    assert [(p.id, p.title, p.text) for p in first.passages] == [
        ("doc-9", "Council", "The council paints the bridge."),
        ("p1", "", "Paint is bought in May."),
        ("p2", "", ""),
    ]
    assert first.warnings == ["passage p2 is empty: nothing in it is read"]  # kept and said, never dropped
    # one context given bare, not in a list: refused as at every door, the line kept with its reason
    assert (second.id, second.ok) == ("b", False) and "given bare" in second.error
    # one field mapped, the rest detected
    partly = read_answer_log(
        write_jsonl(tmp_path / "part.jsonl", [{"user_input": "Q?", "response": "A.", "chunks": ["C."]}]),
        contexts_field="chunks",
    )
    assert partly.fields.format == "ragas (mapped)" and partly.entries[0].passages[0].text == "C."


def test_labels_parse_from_the_usual_spellings():
    assert [parse_label(v) for v in (True, False, 1, 0, 1.0, "supported", "Unsupported", "yes", "0", None)] == [
        1,
        0,
        1,
        0,
        1,
        1,
        0,
        1,
        0,
        None,
    ]
    for bad in ("maybe", 2, [1]):
        with pytest.raises(ValueError, match="label"):
            parse_label(bad)


def test_malformed_lines_become_errors_with_line_numbers(tmp_path):
    ok = {"id": "fine", "user_input": "Q?", "response": "A.", "retrieved_contexts": ["C."], "flag": True}
    lines = [
        json.dumps(ok),  # 1
        '{"user_input": "Q?", "response": ',  # 2 torn JSON
        "",  # 3 blank
        json.dumps(["a", "list"]),  # 4
        json.dumps({"id": "x1", "user_input": "Q?", "retrieved_contexts": ["C."]}),  # 5
        json.dumps({"id": "x2", "user_input": "Q?", "response": "  ", "retrieved_contexts": ["C."]}),  # 6
        json.dumps({"id": "x3", "user_input": "Q?", "response": "A.", "retrieved_contexts": []}),  # 7
        json.dumps({"id": "x4", "user_input": "Q?", "response": "A.", "retrieved_contexts": [{"title": "t"}]}),
        json.dumps({"id": "x5", "user_input": "Q?", "response": "A.", "retrieved_contexts": ["C."], "flag": "?"}),
        json.dumps(ok),  # 10 same id
    ]
    path = tmp_path / "bad.jsonl"
    path.write_bytes("\n".join(lines).encode() + b"\n" + b'{"user_input": "\xff"}\n')  # 11 not UTF-8
    log = read_answer_log(path, label_field="flag")
    reasons = {e.line: (e.id, e.error) for e in log.entries if not e.ok}
    assert [e.line for e in log.entries] == [1, 2, 4, 5, 6, 7, 8, 9, 10, 11]  # the blank line carries nothing
    assert log.entries[0].ok and log.entries[0].label == 1
    expected = {
        2: ("line-2", "not valid JSON"),
        4: ("line-4", "expected a JSON object, got list"),
        5: ("x1", "no 'response' field"),
        6: ("x2", "field 'response' is empty"),
        7: ("x3", "no passages"),
        8: ("x4", "passage 0 has no text"),
        9: ("x5", "label '?'"),
        10: ("fine", "repeats line 1"),
        11: ("line-11", "not valid UTF-8"),
    }
    assert set(reasons) == set(expected)
    for line, (entry_id, reason) in expected.items():
        assert reasons[line][0] == entry_id and reason in reasons[line][1], (line, reasons[line])


def test_a_log_of_no_known_format_or_nothing_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"fields seen are: prompt, completion.*--question-field"):
        read_answer_log(write_jsonl(tmp_path / "other.jsonl", [{"prompt": "Q", "completion": "A"}]))
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="empty"):
        read_answer_log(tmp_path / "empty.jsonl")
    with pytest.raises(InputError, match="no log file"):
        read_answer_log(tmp_path / "missing.jsonl")


def test_labelled_metrics_agree_with_scikit_learn():
    from sklearn.metrics import average_precision_score, precision_score, recall_score, roc_auc_score

    rng = np.random.default_rng(3)
    y = rng.integers(0, 2, 60)
    s = np.clip(0.35 * y + rng.normal(0.4, 0.2, 60), 0, 1)
    v = s >= 0.5
    m = labelled_metrics(s, v, y, n_resamples=300)
    assert m["auroc"]["estimate"] == pytest.approx(roc_auc_score(y, s))
    assert m["pr_auc"]["estimate"] == pytest.approx(average_precision_score(y, s))
    assert m["precision"]["estimate"] == pytest.approx(precision_score(y, v))
    assert m["recall"]["estimate"] == pytest.approx(recall_score(y, v))
    for name in ("auroc", "pr_auc", "precision", "recall"):
        assert m[name]["low"] < m[name]["estimate"] < m[name]["high"] and m[name]["n_resamples"] == 300


def test_references_give_the_awf_faithfulness_label(tmp_path):
    path = write_jsonl(
        tmp_path / "refs.jsonl",
        [
            {
                "question": "Colour?",
                "answer": "It is painted blue.",
                "contexts": ["The bridge is blue."],
                "ground_truth": "blue",
            },
            {
                "question": "Colour?",
                "answer": "It is red.",
                "contexts": ["The bridge is blue."],
                "ground_truth": "blue",
            },
            {
                "question": "Colour?",
                "answer": "I don't know.",
                "contexts": ["The bridge is blue."],
                "ground_truth": "blue",
            },
            {"question": "Colour?", "answer": "Blue.", "contexts": ["Nothing about it."], "ground_truth": "blue"},
            {"question": "Colour?", "answer": "Blue.", "contexts": ["The bridge is blue."]},
        ],
    )
    log = read_answer_log(path)
    source, labels = entry_labels(log, log.entries)
    assert source["source"] == "reference" and source["rule"] == "recall_or_substring"
    assert labels == [1, 0, 0, 0, None]  # right; wrong; abstention; right but no context says so; no reference


# ---------------------------------------------------------------- with the smallest real model
def read_results(out: Path) -> list[dict]:
    rows = []
    for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines():
        try:  # noqa: SIM105
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line a kill cut in half
            pass
    return rows


@pytest.fixture(scope="module")
def labelled_run(tmp_path_factory):
    """A RAGAS log of 6 answers (3 right, 3 wrong, labelled) and 2 malformed lines, verified once."""
    tmp = tmp_path_factory.mktemp("labelled")
    log = ragas_log(
        tmp / "log.jsonl",
        6,
        extra_lines={
            3: "{not json",
            6: json.dumps({"id": "empty", "user_input": "Q?", "response": "A.", "retrieved_contexts": []}),
        },
    )
    out = tmp / "out"
    code = main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--label-field", "human"])
    assert code == 0
    return log, out


@pytest.mark.slow
def test_log_summary_with_labels_auroc_and_intervals(labelled_run, capsys):
    log, out = labelled_run
    rows = read_results(out)
    assert [r["id"] for r in rows] == ["q0", "q1", "q2", "line-4", "q3", "q4", "empty", "q5"]
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["lines"], summary["answers"], summary["malformed"]) == (8, 6, 2)
    assert summary["verified"] + summary["failed"] == 6 and summary["fields"]["format"] == "ragas"
    assert [(m["line"], m["id"]) for m in summary["malformed_lines"]] == [(4, "line-4"), (7, "empty")]
    scores = [r["score"] for r in rows if r["status"] == "verified"]
    assert summary["supported"] == sum(r["supported"] for r in rows)
    assert summary["scores"]["quantiles"]["median"] == pytest.approx(float(np.median(scores)))
    assert sum(summary["scores"]["histogram"]["counts"]) == len(scores)
    assert summary["verifier"]["method"] == DEFAULT_METHOD and summary["verifier"]["threshold"] == 0.5
    lab = summary["labels"]
    assert (lab["source"], lab["field"], lab["labelled"], lab["positives"]) == ("label", "human", 6, 3)
    from sklearn.metrics import roc_auc_score

    labelled = [(r["score"] if r["score"] is not None else 0.0, r["id"]) for r in rows if r["status"] != "malformed"]
    truth = [int(i[1:]) % 2 == 0 for _, i in labelled]
    assert lab["auroc"]["estimate"] == pytest.approx(roc_auc_score(truth, [s for s, _ in labelled]))
    assert lab["auroc"]["low"] <= lab["auroc"]["estimate"] <= lab["auroc"]["high"]
    assert lab["pr_auc"]["low"] <= lab["pr_auc"]["estimate"] <= lab["pr_auc"]["high"]
    assert lab["confidence"] == 0.95 and lab["n_resamples"] == 1000

    # the same log read for its references instead: nothing is verified again (the key ignores labels)
    code = main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--json"])
    assert code == 0
    again = json.loads(capsys.readouterr().out)
    assert again["labels"]["source"] == "reference" and again["labels"]["labelled"] == 6
    assert again["labels"]["positives"] == 3  # the right answers name the colour their context gives
    assert len(read_results(out)) == 8
    assert main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--limit", "3", "--json"]) == 0
    first_three = json.loads(capsys.readouterr().out)
    assert (first_three["lines"], first_three["answers"], first_three["malformed"]) == (3, 3, 0)


@pytest.mark.slow
def test_report_lists_flagged_answers_first(labelled_run, capsys):
    log, out = labelled_run
    scores = sorted(r["score"] for r in read_results(out) if r["status"] == "verified")
    cut = (scores[len(scores) // 2 - 1] + scores[len(scores) // 2]) / 2  # verdicts either side of the median
    supported = sum(s >= float(f"{cut:.6f}") for s in scores)
    assert 0 < supported < len(scores)
    code = main(["verify", str(log), "--out", str(out), "--preset", "tiny", "--threshold", f"{cut:.6f}"])
    assert code == 0
    # another threshold, another verdict: a new line per answer (the request cache answers the model's part);
    # the malformed lines do not depend on it
    assert "6 of 8 lines done now, 2 were already done" in " ".join(capsys.readouterr().out.split())
    page = (out / "report.html").read_text()
    assert "data:image/png;base64," in page and (out / "figures" / "score_histogram.png").is_file()
    badges = re.findall(r'class="badge (\w+)">(\w+)<', page)
    kinds = [k for _, k in badges]
    assert kinds.count("supported") == supported and kinds.count("malformed") == 2
    assert kinds.count("unsupported") + kinds.count("failed") == 6 - supported
    assert kinds == sorted(kinds, key=["failed", "unsupported", "malformed", "supported"].index)
    assert page.index("closest passage") < page.index("<b>evidence</b>")
    assert "not valid JSON" in page and "{not json" in page


@pytest.mark.slow
def test_one_answer_from_passage_files(tmp_path, capsys):
    (tmp_path / "bridge.txt").write_text("The bridge in Kleve is painted blue every spring.\n")
    more = write_jsonl(tmp_path / "more.jsonl", [{"id": "ferry", "title": "Ferry", "text": "The ferry is white."}])
    args = [
        "verify",
        "--question",
        "What colour is the bridge in Kleve?",
        "--answer",
        "It is blue.",
        "--passages",
        str(tmp_path / "bridge.txt"),
        "--passages",
        str(more),
        "--preset",
        "tiny",
    ]
    assert main(args + ["--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert [e["id"] for e in r["evidence"]] == ["bridge.txt", "ferry"]
    assert 0.0 <= r["score"] <= 1.0 and r["faithful"] == (r["score"] >= 0.5) and r["method"] == DEFAULT_METHOD
    assert all(0.0 <= e["support_score"] <= 1.0 for e in r["evidence"])
    assert r["supporting_passage"]["id"] in {"bridge.txt", "ferry"}
    assert main(args) == 0
    shown = capsys.readouterr().out
    assert "faithfulness" in shown and "It is blue." in shown and ("closest passage" in shown or "evidence" in shown)
    # one answer needs all three; a log needs --out
    assert main(["verify", "--question", "Q?", "--answer", "A."]) == 2
    assert main(["verify", str(more)]) == 2
    assert "--out" in capsys.readouterr().err


def verify_process(log: Path, out: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO / "src"),
        "VERIRAG_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "VERIRAG_NO_CACHE": "1",
        **(env or {}),
    }  # no request cache: a recomputed answer could not hide behind it
    return subprocess.Popen(
        [sys.executable, "-m", "verirag", "verify", str(log), "--out", str(out), "--preset", "tiny", *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.slow
def test_a_killed_run_resumes_without_recomputing(tmp_path):
    n = 6
    log = ragas_log(tmp_path / "log.jsonl", n)
    out = tmp_path / "out"
    victim = verify_process(log, out, "--block", "1")  # a block at a time: killed between blocks
    deadline = time.time() + 300
    while (not (out / "results.jsonl").exists() or len(read_results(out)) < 2) and time.time() < deadline:
        assert victim.poll() is None, victim.stderr.read().decode()[-2000:]
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    before = (out / "results.jsonl").read_bytes()
    done = read_results(out)
    assert 2 <= len(done) < n, "the run ended before it could be killed"

    again = verify_process(log, out)
    stdout, stderr = again.communicate(timeout=300)
    assert again.returncode == 0, stderr.decode()[-2000:]
    assert f"{n - len(done)} of {n} lines done now, {len(done)} were already done" in " ".join(stdout.decode().split())
    after = (out / "results.jsonl").read_bytes()
    assert after.startswith(before)  # the lines written before the kill stay as they were
    rows = read_results(out)
    assert sorted(r["id"] for r in rows) == sorted(f"q{i}" for i in range(n))  # every id once: none redone
    assert rows[: len(done)] == done
    summary = json.loads((out / "summary.json").read_text())
    assert summary["answers"] == n and summary["malformed"] == 0


@pytest.mark.slow
def test_a_backend_outage_stops_with_exit_5_keeping_what_is_done(tmp_path):
    log = write_jsonl(
        tmp_path / "log.jsonl", ["{torn", {"user_input": "Q?", "response": "A.", "retrieved_contexts": ["C."]}]
    )
    out = tmp_path / "out"
    for _ in range(2):  # the rerun finds the malformed line done and stops at the outage again
        p = verify_process(  # a judge that calls the model: the default verifier calls none
            log,
            out,
            "--method",
            "vanilla+nli",
            "--model",
            "http://127.0.0.1:9/v1#absent",
            env={"VERIRAG_OPENAI_MAX_RETRIES": "0"},
        )
        _, stderr = p.communicate(timeout=120)
        assert p.returncode == 5, stderr.decode()[-2000:]
        assert "the same command resumes" in stderr.decode()
        rows = read_results(out)
        assert [(r["line"], r["status"]) for r in rows] == [(1, "malformed")]  # kept once, not redone
