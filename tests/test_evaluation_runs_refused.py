"""No threshold, cascade band or stack is fitted on the evaluation data (instruct_qa_human): an eval
run by its dataset's name, and an eval run or a verified answer log by its questions when they come
under another name (a jsonl copy of the dev set), where $VERIRAG_DATA_DIR holds instruct_qa_human."""

from __future__ import annotations

import json

import pytest

from verirag.errors import InputError
from verirag.evaluation_data import INSTRUCT_QA_HUMAN, INSTRUCT_QA_HUMAN_FILES, evaluation_refusal
from verirag.records import ResultRecord, ResultStore


def write_run(folder, dataset: str, questions: list[str], methods=("vanilla+nli",)) -> None:
    store = ResultStore(folder)
    for i, q in enumerate(questions):
        for method in methods:
            store.append(
                ResultRecord.from_dict(
                    {
                        "dataset": dataset,
                        "model": "m",
                        "method": method,
                        "example_id": f"q{i}",
                        "question": q,
                        "answer": "a",
                        "score": 0.2 + 0.6 * (i % 2),
                        "raw_score": 0.2 + 0.6 * (i % 2),
                        "hard": False,
                        "answerable": 1,
                        "correct": i % 2,
                        "faithful": i % 2,
                        "details": {"generator": "vanilla", "predictor": method.split("+")[1], "generation": f"g{i}"},
                    }
                )
            )


def test_calibrate_refuses_a_run_over_the_evaluation_data(tmp_path, capsys):
    from verirag import cli

    write_run(tmp_path / "run", "instruct_qa_human", [f"question {i}?" for i in range(12)])
    code = cli.main(
        ["calibrate", str(tmp_path / "run"), "--model", "m", "--method", "vanilla+nli", "--action-rate", "0.25"]
    )
    captured = capsys.readouterr()
    assert code != 0
    assert "instruct_qa_human is evaluation data" in " ".join((captured.out + captured.err).split())
    # the same run under another dataset name calibrates: the refusal is about the data, not the run
    write_run(tmp_path / "other", "nq", [f"question {i}?" for i in range(12)])
    code = cli.main(
        ["calibrate", str(tmp_path / "other"), "--model", "m", "--method", "vanilla+nli", "--action-rate", "0.25"]
    )
    assert code == 0 and "threshold" in capsys.readouterr().out


def test_cascade_and_stack_refuse_the_evaluation_data_by_name(tmp_path):
    from verirag_lab.train.cascade import paired_scores
    from verirag_lab.train.stack import train_stack_from_run

    write_run(
        tmp_path / "run",
        "instruct_qa_human",
        [f"question {i}?" for i in range(12)],
        ("vanilla+verifier", "vanilla+nli"),
    )
    with pytest.raises(InputError, match="instruct_qa_human is evaluation data; a cascade is never fitted"):
        paired_scores([tmp_path / "run"])
    with pytest.raises(InputError, match="instruct_qa_human is evaluation data; a stack is never fitted"):
        train_stack_from_run(tmp_path / "run", tmp_path / "stack.json")
    assert not (tmp_path / "stack.json").exists()


def test_cascade_and_stack_refuse_its_questions_under_another_name(tmp_path, shared_data_dir):
    from verirag_lab.datasets.registry import load_dataset
    from verirag_lab.train.cascade import paired_scores
    from verirag_lab.train.stack import train_stack_from_run

    dev = [ex.question for ex in load_dataset("instruct_qa_human", shared_data_dir / "instruct_qa_human", file="1200")]
    long_one = next(q for q in dev if len(q.split()) >= 8)
    questions = [f"made-up question {i}?" for i in range(11)] + [long_one]
    write_run(tmp_path / "run", "jsonl", questions, ("vanilla+verifier", "vanilla+nli"))
    with pytest.raises(InputError, match="instruct_qa_human question.*a cascade is never fitted"):
        paired_scores([tmp_path / "run"])
    with pytest.raises(InputError, match="instruct_qa_human question.*a stack is never fitted"):
        train_stack_from_run(tmp_path / "run", tmp_path / "stack.json")
    # without the dev question the same run pairs; a short follow-up the dev set also asks names
    # no dev question by itself, so it does not refuse a run
    short = next(q for q in dev if len(q.split()) <= 3)
    write_run(tmp_path / "clean", "jsonl", [*questions[:-1], short], ("vanilla+verifier", "vanilla+nli"))
    assert len(paired_scores([tmp_path / "clean"])) == 12


# ------------------------------------------ the core's test, on an instruct_qa_human folder of its own
DEV_QUESTION = "Which river runs past the old mill in Trelle?"


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A data folder whose instruct_qa_human holds DEV_QUESTION and a short follow-up ('why?')."""
    folder = tmp_path / "data" / INSTRUCT_QA_HUMAN
    folder.mkdir(parents=True)
    rows = [{"question": DEV_QUESTION}, {"question": "why?"}]
    for name in INSTRUCT_QA_HUMAN_FILES.values():
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_the_refusal_by_name_by_question_and_not_for_short_follow_ups(data_dir, monkeypatch):
    assert evaluation_refusal(["nq", "instruct_qa_human"]) == "instruct_qa_human is evaluation data"
    # spacing, case and punctuation do not hide a copy
    assert "instruct_qa_human question" in evaluation_refusal(
        questions=["which river runs past the  old mill in TRELLE"]
    )
    assert evaluation_refusal(["nq"], ["why?", "What colour is the ferry in Ostby?"]) is None
    # a folder without the files is an error, not an empty set of questions
    for name in INSTRUCT_QA_HUMAN_FILES.values():
        (data_dir / INSTRUCT_QA_HUMAN / name).unlink()
    with pytest.raises(InputError, match="instruct_qa_human not found"):
        evaluation_refusal(questions=[DEV_QUESTION])
    # a machine without the benchmark folder has no benchmark question to refuse
    monkeypatch.delenv("VERIRAG_DATA_DIR")
    assert evaluation_refusal(questions=[DEV_QUESTION]) is None


def test_calibrate_refuses_a_verified_log_and_a_run_that_copy_a_dev_question(data_dir, tmp_path, capsys):
    from test_verify_log_calibrate import labelled_rows, verify, write_jsonl

    from verirag import cli

    rows = labelled_rows()
    rows[7]["user_input"] = DEV_QUESTION
    log = write_jsonl(tmp_path / "answers.jsonl", rows)
    # in one step (--fit-precision) and later (verirag calibrate OUT) alike
    assert verify(log, tmp_path / "verified", "--label-field", "human", "--fit-precision", "0.7") != 0
    assert "instruct_qa_human question" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "verified" / "threshold.json").exists()
    assert cli.main(["calibrate", str(tmp_path / "verified"), "--precision", "0.7"]) != 0
    assert "a threshold is never fitted on it" in " ".join(capsys.readouterr().err.split())
    # an eval run under another dataset name
    write_run(tmp_path / "run", "jsonl", [f"question {i}?" for i in range(11)] + [DEV_QUESTION])
    code = cli.main(
        ["calibrate", str(tmp_path / "run"), "--model", "m", "--method", "vanilla+nli", "--action-rate", "0.25"]
    )
    assert code != 0 and "instruct_qa_human question" in " ".join(capsys.readouterr().err.split())
    # the same log without the dev question calibrates
    rows[7] = labelled_rows()[7]
    log = write_jsonl(tmp_path / "clean.jsonl", rows)
    assert verify(log, tmp_path / "clean", "--label-field", "human", "--fit-precision", "0.7") == 0
    assert (tmp_path / "clean" / "threshold.json").is_file()
