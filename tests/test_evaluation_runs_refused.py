"""No threshold, cascade band or stack is fitted on an eval run over the evaluation data
(instruct_qa_human): by its dataset's name, and, for the learned parts of the lab, by its questions
when they come under another dataset name (a jsonl copy of the dev set)."""

from __future__ import annotations

import pytest

from verirag.errors import InputError
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
