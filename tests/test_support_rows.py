"""Multi-hop rows of HotpotQA (as released and as Hugging Face stores it), 2WikiMultihopQA and MuSiQue
read as `hotpotqa_support` rows: the supporting sentences with their titles, nothing else; rows
that name no support are None; a folder mixing formats keeps the support files' copy of a question."""

from __future__ import annotations

import json

import pytest
from test_verifier_labels_hotpotqa_support import SUPPORT, data  # noqa: F401 (a fixture)

from verirag_lab.train.verifier_labels.hotpotqa_support import FOLDER_ENV, question_id
from verirag_lab.train.verifier_labels.sources import load_sources
from verirag_lab.train.verifier_labels.support_rows import row_format, support_row

QUESTION = "Which river runs through the birthplace of Ilse Varn?"
RELEASED = {  # HotpotQA or 2WikiMultihopQA as released
    "_id": "a1",
    "type": "bridge",
    "question": QUESTION,
    "answer": "Sorrel",
    "context": [
        ["Ilse Varn", ["Ilse Varn is a potter.", " She was born in Dunmere."]],
        ["Dunmere", ["Dunmere is a town.", " The Sorrel runs through Dunmere."]],
        ["Kell", ["Kell is a village."]],
    ],
    "supporting_facts": [["Ilse Varn", 1], ["Dunmere", 1], ["Dunmere", 7], ["Nowhere", 0]],
}
HUGGING_FACE = {
    "id": "a1",
    "question": QUESTION,
    "answer": "Sorrel",
    "type": "bridge",
    "level": "hard",
    "supporting_facts": {"title": ["Ilse Varn", "Dunmere"], "sent_id": [1, 1]},
    "context": {
        "title": ["Ilse Varn", "Dunmere", "Kell"],
        "sentences": [
            ["Ilse Varn is a potter.", " She was born in Dunmere."],
            ["Dunmere is a town.", " The Sorrel runs through Dunmere."],
            ["Kell is a village."],
        ],
    },
}
MUSIQUE = {
    "id": "2hop__1",
    "question": QUESTION,
    "answer": "Sorrel",
    "answerable": True,
    "paragraphs": [
        {"idx": 0, "title": "Ilse Varn", "paragraph_text": "She was born in Dunmere.", "is_supporting": True},
        {"idx": 1, "title": "Kell", "paragraph_text": "Kell is a village.", "is_supporting": False},
        {"idx": 2, "title": "Dunmere", "paragraph_text": "The Sorrel runs through Dunmere.", "is_supporting": True},
    ],
}
EVIDENCE = ["Ilse Varn | She was born in Dunmere.", "Dunmere | The Sorrel runs through Dunmere."]


@pytest.mark.parametrize(("row", "kind"), [(RELEASED, "hotpotqa"), (HUGGING_FACE, "hotpotqa_hf"), (MUSIQUE, "musique")])
def test_each_format_gives_the_supporting_sentences_with_their_titles_and_no_other(row, kind):
    assert row_format(row) == kind
    got = support_row(row)
    assert got["evidence"] == EVIDENCE  # a fact past its paragraph, or of a missing title, is left out
    assert (got["question"], got["answer"]) == (QUESTION, "Sorrel")
    assert got["type"] == ("" if kind == "musique" else "bridge")


@pytest.mark.parametrize(
    "row",
    [
        {**MUSIQUE, "answerable": False},
        {**RELEASED, "supporting_facts": [["Kell", 4]]},
        {**HUGGING_FACE, "supporting_facts": {"title": [], "sent_id": []}},
        {"question": QUESTION, "answer": "x"},
        ["not", "a", "row"],
        {**RELEASED, "supporting_facts": [["Ilse Varn", True], ["Dunmere", "1"]]},
        {**HUGGING_FACE, "supporting_facts": [["Ilse Varn", 1]]},
        {"question": QUESTION, "answer": "x", "evidence": "Ilse Varn | She was born in Dunmere."},
    ],
)
def test_a_row_that_names_no_supporting_sentence_is_none(row):
    assert support_row(row) is None


def test_musique_aliases_join_the_answers_that_grade_and_that_no_distractor_may_hold():
    row = support_row({**MUSIQUE, "answer_aliases": ["the Sorrel River", "", 7, "Sorrel"]})
    assert row["answers"] == ["Sorrel", "the Sorrel River"]
    assert support_row(RELEASED)["answers"] == ["Sorrel"]


def test_a_support_row_is_kept_as_it_is():
    assert support_row(SUPPORT[0]) is SUPPORT[0]


def test_a_folder_of_mixed_formats_adds_their_questions_and_keeps_the_support_files_copy(data, monkeypatch):
    folder = data / "hotpotqa_support"
    monkeypatch.setenv(FOLDER_ENV, str(folder))
    before = load_sources(data, ["hotpotqa_support"])["hotpotqa_support"]
    # sorts before the support files, and repeats a question of theirs with other sentences
    again = {**RELEASED, "question": SUPPORT[0]["question"], "answer": SUPPORT[0]["answer"]}
    musique = {**MUSIQUE, "question": "Which river passes Dunmere?", "answer_aliases": ["River Sorrel"]}
    (folder / "a-released.json").write_text(json.dumps([RELEASED, again, {"junk": 1}]), encoding="utf-8")
    (folder / "b-musique.jsonl").write_text(json.dumps(musique) + "\n", encoding="utf-8")
    after = load_sources(data, ["hotpotqa_support"])["hotpotqa_support"]

    assert set(after.questions) == set(before.questions) | {question_id(QUESTION), question_id(musique["question"])}
    assert after.questions[question_id(musique["question"])].answers == ("Sorrel", "River Sorrel")
    for qid, q in before.questions.items():
        assert after.questions[qid].gold == q.gold  # the support file's copy, whatever the file order
    added = after.questions[question_id(QUESTION)]
    assert added.answers == ("Sorrel",)
    assert [after.passages[k] for k in added.gold] == [
        ("Ilse Varn", "She was born in Dunmere."),
        ("Dunmere", "The Sorrel runs through Dunmere."),
    ]
    assert after.unusable == before.unusable + 2  # the repeated question and the row of no format
