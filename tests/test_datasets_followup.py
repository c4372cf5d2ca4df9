"""Questions asked as follow-ups (issue 47, items 3 and 6): the rule the `followup` labelling recipe
and the nq / hotpotqa loaders' `followup` option share, on tiny examples and files written here."""

from __future__ import annotations

import logging
import random
from pathlib import Path

from tests.test_datasets_hotpotqa import record, write_lines
from tests.test_datasets_nq import write_shared_layout
from verirag.types import Example, Passage
from verirag_lab.datasets import load_dataset
from verirag_lab.datasets.followup import as_followup, followups

MONA = Passage(
    id="p1",
    title="Mona Lisa",
    text="The Mona Lisa is a portrait painting by Leonardo da Vinci. It hangs in the Louvre.",
)
THRILLER = Passage(id="p2", title="Thriller (album)", text="Thriller is the sixth studio album by Michael Jackson.")


def ask(question: str, references=("Leonardo da Vinci",), group: str = "g") -> Example:
    return Example(id=group, question=question, references=list(references), group=group)


def test_the_mention_becomes_a_reference_back_and_the_history_names_the_entity():
    f = as_followup(ask("who painted the mona lisa"), [MONA], random.Random(0))
    assert f.question in ("who painted it", "who painted the above")
    assert f.history == [
        "User: Tell me about Mona Lisa.",
        "Agent: The Mona Lisa is a portrait painting by Leonardo da Vinci.",
    ]
    assert f.meta["followup"] == {"phrase": f.question.split("painted ")[1], "entity": "p1"}
    assert f.references == ["Leonardo da Vinci"] and f.id == "g"  # the answer and the id stay
    # a noun the question said, a possessive and a first word keep their grammar
    g = as_followup(ask("when was the album Thriller's cover shot", ["1982"]), [THRILLER], random.Random(0))
    assert g.question == "when was that album's cover shot"
    h = as_followup(ask("Thriller sold how many copies", ["70 million"]), [THRILLER], random.Random(0))
    assert h.question == "That album sold how many copies"  # the title says the kind


def test_no_follow_up_where_the_question_names_no_entity_or_the_entity_is_the_answer():
    assert as_followup(ask("who painted the starry night"), [MONA], random.Random(0)) is None
    assert as_followup(ask("what is the mona lisa", ["Mona Lisa"]), [MONA], random.Random(0)) is None
    assert as_followup(ask("who painted the mona lisa"), [], random.Random(0)) is None


def test_twins_read_alike_and_what_is_left_out_is_counted(caplog):
    twins = [ask("who painted the mona lisa", group="q1"), ask("who painted the mona lisa", group="q1")]
    other = ask("who painted the starry night", group="q2")
    with caplog.at_level(logging.WARNING):
        out = followups([*twins, other], lambda e: [MONA], "toy")
    assert len(out) == 2 and out[0].question == out[1].question
    assert "1 of 3 examples left out" in caplog.text


def test_the_loaders_ask_follow_ups_over_the_same_passages(tmp_path: Path):
    root = write_shared_layout(tmp_path / "nq")
    plain = {e.id: e for e in load_dataset("nq", root, k=3)}
    asked = load_dataset("nq", root, k=3, followup=True)
    # only "who painted the mona lisa" names its gold passage's title ("Moby-Dick" is written
    # "moby dick", "RMS Titanic" is not named, "Canberra" is the answer)
    assert [e.id for e in asked] == ["3"]
    e = asked[0]
    assert (
        e.question in ("who painted it", "who painted the above") and e.history[0] == "User: Tell me about Mona Lisa."
    )
    assert [p.id for p in e.passages] == [
        p.id for p in plain["3"].passages
    ]  # retrieved for the question as asked first

    rec = record("q1", answer="France")
    rec["question"] = "Which country is Gold A in?"
    f = write_lines(tmp_path / "hotpot.jsonl", [rec, record("q2")])
    twins = load_dataset("hotpotqa", f, followup=True)
    assert [t.id for t in twins] == ["q1:unanswerable", "q1:answerable"]
    assert {t.question for t in twins} == {"Which country is it in?"} or {t.question for t in twins} == {
        "Which country is the above in?"
    }
    assert twins[0].history == twins[1].history == ["User: Tell me about Gold A.", "Agent: Alpha is in France."]
