"""Issue 50, items 4 and 5: a threshold fitted on one's own labels in one step (`verirag verify LOG
--label-field F --fit-precision P`, `verirag calibrate OUT`), a threshold that cannot be certified
said in every result, the CLI and the report, and outputs that say what happened (a model only
where an LLM judged, malformed rows keeping what parsed, one count, only the fields a log has).

The log verifier runs with vanilla+k_precision (token overlap: no model at all), so these tests
are fast and their scores exact: a right answer's words all occur in its context (score 1), a
wrong one names a colour the context does not have."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

from verirag import Verifier, fit_threshold
from verirag.answer_log import read_answer_log
from verirag.answer_log.calibrate import fit_log_threshold
from verirag.answer_log.formats import MAX_LINE_BYTES
from verirag.answer_log.summary import summarize, write_summary
from verirag.api import ThresholdWarning
from verirag.cli import main
from verirag.errors import InputError
from verirag.learned.threshold import ThresholdController

METHOD = "vanilla+k_precision"
TOWNS = ["Varnholt", "Ostby", "Kleve", "Marden", "Sundal", "Trelle", "Brenna", "Lofsted", "Haugen", "Rimdal"]
THINGS = ["bridge", "tower", "ferry", "gate", "mill"]
COLOURS = ["green", "red", "blue", "yellow", "white", "black", "grey", "orange"]


def labelled_rows(n: int = 50) -> list[dict]:
    """n answers in RAGAS field names, every other one wrong, labelled in `human` (yes / no)."""
    rows = []
    for i in range(n):
        town, thing = TOWNS[i % len(TOWNS)], THINGS[i // len(TOWNS) % len(THINGS)]
        colour = COLOURS[i % len(COLOURS)]
        right = i % 2 == 0
        said = colour if right else COLOURS[(i + 3) % len(COLOURS)]
        rows.append(
            {
                "id": f"q{i}",
                "user_input": f"What colour is the {thing} in {town}?",
                "response": f"The {thing} in {town} is {said}.",
                "retrieved_contexts": [f"The {thing} in {town} is painted {colour} every spring."],
                "human": "yes" if right else "no",
            }
        )
    return rows


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]


def verify(log: Path, out: Path, *extra: str) -> int:
    return main(["verify", str(log), "--out", str(out), "--method", METHOD, "--preset", "tiny", *extra])


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    """A labelled log of 50 answers verified and calibrated in one step."""
    tmp = tmp_path_factory.mktemp("calibrated")
    log = write_jsonl(tmp / "answers.jsonl", labelled_rows())
    out = tmp / "verified"
    assert verify(log, out, "--label-field", "human", "--fit-precision", "0.7") == 0
    return log, out


# ---------------------------------------------------------------- the threshold from one's own labels
def test_verify_with_fit_precision_writes_a_threshold_that_names_its_method(calibrated, capsys):
    _, out = calibrated
    rows = records(out)
    assert [r["label"] for r in rows] == [1 - i % 2 for i in range(50)]  # the label is kept
    fitted = ThresholdController.load(out / "threshold.json")
    scores = np.array([r["score"] for r in rows])
    want = ThresholdController(precision=0.7, delta=0.1).fit(scores, [r["label"] for r in rows])
    assert fitted.certified_ and fitted.threshold_ == want.threshold_ and fitted.n_fit_ == 50
    assert scores[::2].min() >= fitted.threshold_ > scores[1::2].max()  # it answers exactly the right ones
    assert fitted.fingerprints == {"method": METHOD, "dataset": "answers.jsonl"}  # no LLM judged: no model
    assert fitted.provenance["label_field"] == "human" and fitted.provenance["labelled"] == 50
    assert fitted.provenance["fit"] == {"precision": 0.7, "delta": 0.1, "ltt_method": "bonferroni"}
    assert "<th>label</th>" in (out / "report.html").read_text()  # a labelled log: its labels shown

    # later, from the folder alone: the same fit; a file for a method the folder was not verified with is refused
    assert main(["calibrate", str(out), "--precision", "0.7", "--save", str(out / "again.json")]) == 0
    assert f"threshold {fitted.threshold_:.4g} for precision 0.7 on 50 examples (method {METHOD})" in (
        " ".join(capsys.readouterr().out.split())
    )
    assert ThresholdController.load(out / "again.json").threshold_ == fitted.threshold_
    assert main(["calibrate", str(out), "--method", "vanilla+verifier", "--precision", "0.7"]) == 2
    said = " ".join(capsys.readouterr().err.split())
    assert f"verified with '{METHOD}', not 'vanilla+verifier'" in said
    assert main(["calibrate", str(out), "--model", "qwen2.5-1.5b", "--precision", "0.7"]) == 2
    assert "no LLM judged" in capsys.readouterr().err


def test_calibrate_refuses_a_folder_without_labels_with_a_hint(tmp_path, capsys):
    log = write_jsonl(tmp_path / "answers.jsonl", labelled_rows(6))
    assert verify(log, tmp_path / "out") == 0
    capsys.readouterr()
    assert main(["calibrate", str(tmp_path / "out"), "--precision", "0.9"]) == 2
    assert "--label-field" in " ".join(capsys.readouterr().err.split())
    assert main(["calibrate", str(tmp_path / "nothing"), "--precision", "0.9"]) == 2
    assert "--model and --method" in " ".join(capsys.readouterr().err.split())
    assert verify(log, tmp_path / "out2", "--fit-precision", "0.9") == 2  # no labels to fit on
    assert "--label-field" in capsys.readouterr().err


def test_a_threshold_for_another_method_warns_in_the_cli_summary_and_python(calibrated, tmp_path, capsys):
    log, out = calibrated
    fitted = ThresholdController.load(out / "threshold.json")
    fitted.fingerprints["method"] = "vanilla+nli"
    other = fitted.save(tmp_path / "nli.json")
    assert verify(log, tmp_path / "out", "--threshold", str(other)) == 0
    said = capsys.readouterr()
    assert "fitted for method 'vanilla+nli', not 'vanilla+k_precision'" in " ".join(said.err.split())
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert any("vanilla+nli" in w for w in summary["warnings"])
    assert "vanilla+nli" in (tmp_path / "out" / "report.html").read_text()
    with pytest.warns(ThresholdWarning, match="vanilla\\+nli"):
        Verifier(METHOD, other, preset="tiny")
    unnamed = fit_threshold([0.2, 0.9] * 20, [0, 1] * 20, precision=0.7)  # names no method: cannot be checked
    with pytest.warns(ThresholdWarning, match="names no method"):
        Verifier(METHOD, unnamed, preset="tiny")
    named = fit_threshold([0.2, 0.9] * 20, [0, 1] * 20, precision=0.7, method=METHOD)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Verifier(METHOD, named, preset="tiny")


# ---------------------------------------------------------------- a threshold that cannot be certified
def test_an_uncertified_threshold_is_a_warning_in_every_result_the_cli_and_the_report(calibrated, tmp_path, capsys):
    log, out = calibrated
    capsys.readouterr()
    assert main(["calibrate", str(out), "--precision", "0.99", "--save", str(tmp_path / "t.json")]) == 0
    assert "warning: not certified" in " ".join(capsys.readouterr().out.split())
    assert verify(log, tmp_path / "out", "--threshold", str(tmp_path / "t.json")) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "no threshold is certified for the target precision 0.99 on 50 labelled examples" in shown
    assert "(no threshold certified)" in shown
    rows = records(tmp_path / "out")
    assert all(r["threshold"] is None and not r["supported"] for r in rows)
    assert all(any("no threshold is certified" in w for w in r["warnings"]) for r in rows)
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.count("no threshold is certified") == len(rows) + 1  # each answer and the summary

    with pytest.warns(ThresholdWarning, match="no threshold is certified"):
        verifier = Verifier(METHOD, tmp_path / "t.json", preset="tiny")
    r = verifier.verify("Q?", "It is green.", ["It is green."])
    assert r.score == 1.0 and not r.faithful and r.threshold is None
    assert any("precision 0.99" in w for w in r.warnings)


# ---------------------------------------------------------------- outputs that say what happened
def test_one_count_no_model_without_an_llm_and_only_the_fields_the_log_has(calibrated, capsys):
    _, out = calibrated
    bad = ['{"id": "torn", "user_input": "Q?"', {"id": "nothing", "user_input": "Where?", "response": "Here."}]
    mixed = write_jsonl(out.parent / "mixed.jsonl", [*labelled_rows(3), *bad])
    assert verify(mixed, out.parent / "mixed") == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert "5 of 5 lines done now, 0 were already done" in shown
    assert "5 lines: 3 answers (3 verified, 0 unverified, 0 failed to verify) and 2 malformed" in shown
    assert "answers verified now" not in shown
    summary = json.loads((out.parent / "mixed" / "summary.json").read_text())
    assert "model" not in summary["verifier"] and summary["verifier"]["method"] == METHOD
    assert summary["fields"]["references"] == [] and summary["fields"]["history"] is None
    page = (out.parent / "mixed" / "report.html").read_text()
    assert "<td>model</td>" not in page and "history" not in page and "reference" not in page
    assert "<th>label</th>" not in page  # no label field in this log: no column of dashes
    assert "answer score" in page and "passage support" in page  # its two numbers, named
    rows = {r["id"]: r for r in records(out.parent / "mixed")}
    assert all("model" not in r for r in rows.values())
    # a malformed row keeps what parsed: the question and the answer, shown in the report
    assert (rows["nothing"]["question"], rows["nothing"]["answer"]) == ("Where?", "Here.")
    assert "no &#x27;retrieved_contexts&#x27; field" in page and "<b>Q:</b> Where?" in page


def test_the_summary_names_the_model_only_where_an_llm_judged(tmp_path):
    log = read_answer_log(write_jsonl(tmp_path / "log.jsonl", labelled_rows(2)))
    base = {"status": "verified", "score": 0.9, "supported": True, "method": "vanilla+nli", "threshold": 0.5}
    plain = [{**base, "key": f"k{i}", "id": f"q{i}", "line": i + 1} for i in range(2)]
    assert "model" not in summarize(log, plain, n_resamples=10)["verifier"]
    judged = [{**r, "model": "qwen2.5-1.5b"} for r in plain]
    (tmp_path / "out").mkdir()
    summary, report = write_summary(log, judged, tmp_path / "out", n_resamples=10)
    assert summary["verifier"]["model"] == "qwen2.5-1.5b" and "qwen2.5-1.5b" in report.read_text()


def test_a_row_of_10_mb_is_a_clear_error_for_that_row_only(tmp_path, capsys):
    rows = labelled_rows(4)
    huge = {**labelled_rows(5)[4], "retrieved_contexts": ["word " * 2_000_000]}  # 10 MB of context
    log = write_jsonl(tmp_path / "log.jsonl", [*rows[:2], huge, *rows[2:]])
    assert log.stat().st_size > 10_000_000 > MAX_LINE_BYTES
    assert verify(log, tmp_path / "out", "--label-field", "human") == 0
    got = {r["id"]: r for r in records(tmp_path / "out")}
    assert got["q4"]["status"] == "malformed" and "10.0 MB" in got["q4"]["error"]
    assert got["q4"]["question"] == huge["user_input"]  # what parsed is kept, not the 10 MB
    assert len(json.dumps(got["q4"])) < 5000
    assert [got[f"q{i}"]["status"] for i in range(4)] == ["verified"] * 4
    assert "1 malformed" in " ".join(capsys.readouterr().out.split())


def test_labels_that_are_not_booleans_are_a_clear_error(tmp_path, capsys):
    graded = [{**r, "grade": "A" if i % 2 else "C"} for i, r in enumerate(labelled_rows(4))]
    log = write_jsonl(tmp_path / "graded.jsonl", graded)
    with pytest.raises(InputError, match=r"'grade' .* holds no label verirag reads \(values seen: \"C\", \"A\"\)"):
        read_answer_log(log, label_field="grade")
    assert verify(log, tmp_path / "out", "--label-field", "grade") == 2
    assert "map yours to these" in " ".join(capsys.readouterr().err.split())
    with pytest.raises(InputError, match="'verdict' is on no line"):
        read_answer_log(log, label_field="verdict")
    # the documented spellings map; one odd value makes only its line malformed
    words = [{**r, "grade": w} for r, w in zip(labelled_rows(4), ["Correct", "incorrect", "faithful", "maybe"])]
    entries = read_answer_log(write_jsonl(tmp_path / "words.jsonl", words), label_field="grade").entries
    assert [e.label for e in entries[:3]] == [1, 0, 1] and "label 'maybe'" in entries[3].error
    with pytest.raises(InputError, match="1 or 0"):
        fit_log_threshold(
            [{"status": "verified", "score": 0.5, "label": 2, "method": METHOD}], precision=0.9, log="x.jsonl"
        )


def test_calibrate_refuses_records_of_several_methods():
    rows = [{"status": "verified", "score": 0.5, "label": 1, "method": m} for m in (METHOD, "vanilla+nli")]
    with pytest.raises(InputError, match="methods vanilla\\+k_precision, vanilla\\+nli"):
        fit_log_threshold(rows, precision=0.9)
    with pytest.raises(InputError, match="--label-field"):
        fit_log_threshold([{"status": "verified", "score": 0.5, "method": METHOD}], precision=0.9)


def test_the_docs_show_the_threshold_step():
    page = (Path(__file__).resolve().parents[1] / "docs" / "how-to" / "verify-existing-rag.md").read_text()
    assert re.search(r"--label-field \w+ --fit-precision", page) and "verirag calibrate" in page
    # it leads with them: the batch doors and the threshold step come before any one-answer door
    lead = page[: page.index("## From Python")]
    for step in ("verify_many", "verirag verify LOG", "/v1/verify/batch", "--label-field F --fit-precision P"):
        assert step in lead, step
    assert "verirag calibrate verified/" in lead
