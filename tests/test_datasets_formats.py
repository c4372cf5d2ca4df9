"""Loaders of original formats (SQuAD 2.0, BioASQ, TopiOCQA, instruct_qa_human, generic JSON
lines) on tiny files written here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag_lab.datasets import load_dataset


def write_json(path: Path, data) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def write_lines(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------- SQuAD 2.0
def test_squad2(tmp_path: Path) -> None:
    f = write_json(
        tmp_path / "dev-v2.0.json",
        {
            "version": "v2.0",
            "data": [
                {
                    "title": "Normans",
                    "paragraphs": [
                        {
                            "context": "The Normans gave their name to Normandy, a region in France.",
                            "qas": [
                                {
                                    "id": "a1",
                                    "question": "In what country is Normandy?",
                                    "is_impossible": False,
                                    "answers": [
                                        {"text": "France", "answer_start": 55},
                                        {"text": "France", "answer_start": 55},
                                    ],
                                },
                                {
                                    "id": "a2",
                                    "question": "Who gave their name to Germany?",
                                    "is_impossible": True,
                                    "answers": [],
                                    "plausible_answers": [{"text": "Normans", "answer_start": 4}],
                                },
                            ],
                        }
                    ],
                }
            ],
        },
    )
    a1, a2 = load_dataset("squad2", f)
    assert (a1.id, a1.references, a1.answerable, a1.relevance) == ("a1", ["France"], True, [1])
    assert a1.passages[0].title == "Normans" and a1.passages[0].text.startswith("The Normans")
    assert (a2.references, a2.answerable, a2.relevance) == ([], False, [0])
    assert a2.meta["plausible_answers"] == ["Normans"] and a1.group == a2.group
    with pytest.raises(InputError, match="data"):
        load_dataset("squad2", write_json(tmp_path / "x.json", {"version": "v2.0"}))


# ---------------------------------------------------------------------------------- BioASQ
def test_bioasq(tmp_path: Path) -> None:
    f = write_json(
        tmp_path / "training.json",
        {
            "questions": [
                {
                    "id": "b1",
                    "type": "factoid",
                    "body": "Which gene is mutated in cystic fibrosis?",
                    "exact_answer": [["CFTR", "cystic fibrosis transmembrane conductance regulator"]],
                    "ideal_answer": ["CFTR is mutated."],
                    "snippets": [
                        {"text": "Mutations in CFTR cause cystic fibrosis.", "document": "http://x/1"},
                        {"text": "CF is autosomal recessive.", "document": "http://x/2"},
                    ],
                },
                {
                    "id": "b2",
                    "type": "yesno",
                    "body": "Is CF inherited?",
                    "exact_answer": "yes",
                    "snippets": [{"text": "CF is inherited.", "document": "http://x/3"}],
                },
            ]
        },
    )
    (b1,) = load_dataset("bioasq", f)
    assert b1.references == ["CFTR", "cystic fibrosis transmembrane conductance regulator"]
    assert next(p.text for p in b1.passages) == "Mutations in CFTR cause cystic fibrosis."
    assert b1.passages[1].meta["document"] == "http://x/2" and b1.answerable is True
    assert b1.meta["ideal_answer"] == ["CFTR is mutated."]
    assert [e.id for e in load_dataset("bioasq", f, types="all")] == ["b1", "b2"]
    assert load_dataset("bioasq", f, types=["yesno"])[0].references == ["yes"]
    with pytest.raises(InputError, match="type"):
        load_dataset("bioasq", f, types=["riddle"])


# -------------------------------------------------------------------------------- TopiOCQA
def test_topiocqa_early_release_builds_history(tmp_path: Path) -> None:
    turns = [
        {
            "Conversation_no": 1,
            "Turn_no": 1,
            "Question": "who wrote hamlet",
            "Answer": "Shakespeare",
            "Topic": "Hamlet",
            "Topic_section": "Introduction",
            "is_nq": True,
        },
        {
            "Conversation_no": 1,
            "Turn_no": 2,
            "Question": "when?",
            "Answer": "around 1600",
            "Topic": "Hamlet",
            "Topic_section": "Date",
            "is_nq": False,
        },
        {
            "Conversation_no": 2,
            "Turn_no": 1,
            "Question": "is it true?",
            "Answer": "UNANSWERABLE",
            "Topic": "X",
            "Topic_section": "Y",
            "is_nq": False,
        },
    ]
    examples = load_dataset("topiocqa", write_json(tmp_path / "t.json", turns))
    assert [e.id for e in examples] == ["1:1", "1:2", "2:1"]
    assert examples[1].history == ["User: who wrote hamlet", "Agent: Shakespeare"]
    assert examples[1].references == ["around 1600"] and examples[1].answerable is None
    assert examples[1].passages == [] and examples[0].group == examples[1].group == "1"
    assert examples[2].references == [] and examples[2].answerable is False


def test_topiocqa_full_release_gold_passage(tmp_path: Path) -> None:
    turn = {
        "Conversation_no": 5,
        "Turn_no": 2,
        "Question": "when?",
        "Answer": "1600",
        "Context": ["who wrote hamlet", "Shakespeare"],
        "Topic": "Hamlet",
        "Topic_section": "Date",
        "Rationale": "written about 1600",
        "Gold_passage": {"id": "wiki:9", "title": "Hamlet", "text": "Hamlet was written about 1600."},
        "Additional_answers": [{"Answer": "about 1600"}, {"Answer": "1600"}],
    }
    (ex,) = load_dataset("topiocqa", write_lines(tmp_path / "t.jsonl", [turn]))
    assert ex.history == ["User: who wrote hamlet", "Agent: Shakespeare"]
    assert ex.references == ["1600", "about 1600"] and ex.passages[0].id == "wiki:9"
    assert ex.answerable is True and ex.relevance == [1] and ex.meta["Rationale"]


# ------------------------------------------------------------------------ instruct_qa_human
def test_instruct_qa_human(tmp_path: Path) -> None:
    row = {
        "dataset": "topiocqa",
        "model": "flan-t5-xxl",
        "id": 7,
        "question": "when was it released?",
        "history": ["name their first album", "Boy"],
        "response": "1980.",
        "references": ["20 October 1980", "1980"],
        "gold_passages": [{"title": "Boy (album)", "text": "Boy was released on 20 October 1980."}],
        "prompt": "...",
        "human_correctness": "correct",
        "label_correct": 1,
    }
    write_lines(tmp_path / "correctness_nq_corrected_396.jsonl", [row, dict(row, model="alpaca-7b")])
    a, b = load_dataset("instruct_qa_human", tmp_path)
    assert a.id == "topiocqa:7:flan-t5-xxl" and a.group == b.group == "topiocqa:7"
    assert a.history == ["User: name their first album", "Agent: Boy"]
    assert a.passages[0].title == "Boy (album)" and a.references == ["20 October 1980", "1980"]
    assert a.meta == {
        "response": "1980.",
        "human_correctness": "correct",
        "label_correct": 1,
        "model": "flan-t5-xxl",
        "dataset": "topiocqa",
    }
    with pytest.raises(InputError, match="1200"):
        load_dataset("instruct_qa_human", tmp_path, file="1200")
    with pytest.raises(InputError, match="choose one of 396, 1200"):
        load_dataset("instruct_qa_human", tmp_path, file="all")


# ---------------------------------------------------------------------------- generic jsonl
def test_generic_jsonl(tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "mine.jsonl",
        [
            {
                "question": "q one",
                "passages": ["plain text", {"title": "T", "text": "titled", "id": "p9"}],
                "answers": "yes",
                "relevance": [0, 1],
            },
            {
                "id": "x",
                "question": "q two",
                "references": ["a", "b"],
                "history": ["earlier"],
                "answerable": False,
                "group": "g",
                "meta": {"source": "me"},
            },
        ],
    )
    one, two = load_dataset("jsonl", f)
    assert one.id == "1" and [p.id for p in one.passages] == ["1:0", "p9"]
    assert one.passages[1].title == "T" and one.references == ["yes"] and one.answerable is True
    assert (two.id, two.group, two.history, two.answerable, two.meta) == (
        "x",
        "g",
        ["earlier"],
        False,
        {"source": "me"},
    )
    assert two.passages == [] and two.relevance is None


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"passages": []}', "line 2: `question`"),
        ('{"question": "q", "passages": "text"}', "line 2: `passages`"),
        ('{"question": "q", "passages": ["a"], "relevance": [1, 0]}', "line 2: `relevance`"),
        ('{"question": "q", "answerable": "yes"}', "line 2: `answerable`"),
        ('{"question": "q", "references": [1]}', "line 2, references"),
        ('{"question": "q", oops}', "line 2: not valid JSON"),
        ('["question"]', "line 2: expected a JSON object"),
        ('{"id": "1", "question": "again"}', "'1' occurs more than once"),
    ],
)
def test_generic_jsonl_errors_name_the_line(tmp_path: Path, line: str, message: str) -> None:
    f = tmp_path / "bad.jsonl"
    f.write_text('{"question": "fine"}\n' + line + "\n")
    with pytest.raises(InputError) as err:
        load_dataset("jsonl", f)
    assert message in str(err.value)
