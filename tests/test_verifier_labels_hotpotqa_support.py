"""`hotpotqa_support`: HotpotQA questions with their supporting sentences only (no distractor
paragraphs), read from a folder, on tiny made-up files written here: paragraphs by title, retrieved
distractors, the multi-hop recipes on them, and what is left out whatever the command line says
(the shared file's questions, held-out documents, instruct_qa_human's questions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from benchmark_module import load_script
from test_verifier_labels_issue36 import DISTRACTORS, EXCLUDED, HOTPOT, label, resolved, variant, write_data

from verirag.errors import InputError
from verirag_lab.train.verifier_labels.heldout_index import HELD_QUESTION, group_reason
from verirag_lab.train.verifier_labels.hotpotqa_support import FOLDER_ENV, paragraphs, question_id
from verirag_lab.train.verifier_labels.sources import load_sources

HELD_ID = "h3"  # a shared HotpotQA id whose hash puts it in the held-out split (asserted below)
HELD_SENTENCE = "The Ketter is a schooner kept in the harbour of Harwick."
BRIDGE = "Which schooner did the harbour master of Harwick sail?"
EVALUATION = "Who is nobody?"  # an instruct_qa_human question (the fixture's NQ row)
UNTITLED = "Where was the founder of the Dell orchard school born?"
SUPPORT = [
    {  # titled, as test.json: one paragraph per title
        "question": BRIDGE,
        "answer": "Brisa",
        "type": "bridge",
        "evidence": [
            "Harwick | Harwick is a port whose harbour master was Tam Rolle.",
            "Tam Rolle | Tam Rolle sailed the schooner Brisa.",
            "Tam Rolle | He retired in 1931.",
        ],
    },
    {  # untitled, as train.jsonl: a paragraph per sentence
        "question": UNTITLED,
        "answer": "Cobb Hill",
        "type": "bridge",
        "evidence": ["The Dell orchard school was founded by Ada Brill.", "Ada Brill was born in Cobb Hill."],
    },
    {"question": HOTPOT[0]["question"], "answer": "1850", "type": "bridge", "evidence": ["a | b.", "c | d."]},
    {
        "question": "Which schooner is kept at Harwick?",
        "answer": "Ketter",
        "evidence": [f"Ketter | {HELD_SENTENCE}", "x | y."],
    },
    {
        "question": EXCLUDED,
        "answer": "Edda Morn",
        "type": "bridge",
        "evidence": ["W | Wexmoor has a museum.", "M | Edda Morn."],
    },
    {"question": EVALUATION, "answer": "Nemo", "evidence": ["Nobody | Nobody is Nemo.", "Nemo | Nemo is a name."]},
] + [
    {
        "question": f"Which painter lived in the house of {name}?",
        "answer": f"Painter {i}",
        "type": "bridge",
        "evidence": [f"{name} | {name} owned a house by the harbour.", f"House of {name} | Painter {i} lived there."],
    }
    for i, name in enumerate(["Orla Finch", "Bram Tessel", "Cato Vey", "Dana Pike", "Emil Roth", "Fern Lisk"])
]


@pytest.fixture()
def data(tmp_path) -> Path:
    root = write_data(tmp_path / "data")
    with open(root / "hotpotqa_amor_subset" / "dev.json", "a", encoding="utf-8") as f:  # a held-out question
        context = [["Ketter", ["The Ketter is a schooner", " kept in the harbour of Harwick."]]]
        context += [[t, s] for t, s in DISTRACTORS]
        rec = {"_id": HELD_ID, "type": "bridge", "question": "What is kept at Harwick?", "answer": "The Ketter"}
        f.write(json.dumps({**rec, "context": context, "supporting_facts": [["Ketter", 0]]}) + "\n")
    folder = root / "hotpotqa_support"
    folder.mkdir()
    (folder / "test.json").write_text(json.dumps(SUPPORT[:1] + SUPPORT[2:]), encoding="utf-8")
    (folder / "train.jsonl").write_text(json.dumps(SUPPORT[1]) + "\n", encoding="utf-8")
    return root


def test_paragraphs_gather_sentences_by_title():
    assert paragraphs(SUPPORT[0]["evidence"]) == [
        ("Harwick", ["Harwick is a port whose harbour master was Tam Rolle."]),
        ("Tam Rolle", ["Tam Rolle sailed the schooner Brisa.", "He retired in 1931."]),
    ]
    assert [t for t, _ in paragraphs(SUPPORT[1]["evidence"])] == ["", ""]


def test_the_source_leaves_out_shared_and_held_out_questions(data):
    assert group_reason(f"hotpotqa:{HELD_ID}") == HELD_QUESTION
    source = load_sources(data, ["hotpotqa_support"])["hotpotqa_support"]
    kept = {q.text for q in source.questions.values()}
    assert BRIDGE in kept and UNTITLED in kept and EVALUATION in kept  # labelling drops EVALUATION (below)
    assert HOTPOT[0]["question"] not in kept and EXCLUDED not in kept  # the shared file's questions
    assert "Which schooner is kept at Harwick?" not in kept  # its evidence is a held-out question's
    assert source.unusable == 3
    bridge = source.question(question_id(BRIDGE))
    assert [source.passage(k).title for k in bridge.gold] == ["Harwick", "Tam Rolle"]
    assert source.passage(bridge.gold[1]).text == "Tam Rolle sailed the schooner Brisa. He retired in 1931."
    assert source.has_evidence(bridge, bridge.gold) and not source.has_evidence(bridge, bridge.gold[:1])
    for q in source.questions.values():
        found = source.distractors(q, 5)
        assert len(found) == 5 and not set(found) & set(q.gold)
        assert not any(HELD_SENTENCE in source.passage(k).text for k in found)  # a held-out document


def test_a_held_out_document_stays_banned_after_labelling_draws_its_questions_and_the_guard_refuses_it(data):
    from verirag_lab.train.verifier_labels.heldout_index import HELD_EVIDENCE, HeldOutIndex
    from verirag_lab.train.verifier_labels.hotpotqa_support import passage_key
    from verirag_lab.train.verifier_labels.run import select_questions

    source = load_sources(data, ["hotpotqa_support"])["hotpotqa_support"]
    held = passage_key("Ketter", HELD_SENTENCE)
    assert held in source.passages and held in source.banned
    select_questions(source, set(), None, 0, "train")  # as labelling draws: it adds to what is banned
    assert held in source.banned
    for q in source.questions.values():
        assert held not in source.distractors(q, 8)
    index = HeldOutIndex.build(data)
    record = {"id": "r", "dataset": "hotpotqa_support", "example": question_id(BRIDGE), "passages": [held]}
    assert index.record_refusal(record) == HELD_EVIDENCE  # a record made before the fix, refused by key


def test_multihop_recipes_on_supporting_facts(tmp_path, data):
    records = label(tmp_path, data, datasets=["hotpotqa_support"], recipes=["multihop", "evidence_removal"])
    ex = resolved(records, data)
    qid = question_id(BRIDGE)
    both = variant(records, "hotpotqa_support", qid, "both_mixed")
    assert both["label"] == 1 and len(both["passages"]) == 5 and ex[both["id"]].answer == "Brisa"
    drop = variant(records, "hotpotqa_support", qid, "drop0")
    assert drop["label"] == 0 and len(set(both["passages"]) - set(drop["passages"])) == 1
    swap = variant(records, "hotpotqa_support", qid, "bridge_swap")
    edited = ex[swap["id"]].passages[swap["passage_edits"][0][0]]
    assert swap["label"] == 0 and edited.startswith("Harwick\n") and "Tam Rolle" not in edited
    untitled = variant(records, "hotpotqa_support", question_id(UNTITLED), "bridge_swap")
    assert untitled["skip"] == "an untitled supporting paragraph"
    assert variant(records, "hotpotqa_support", question_id(UNTITLED), "gold.drop1")["label"] == 0
    assert not any(r["example"] == question_id(EVALUATION) for r in records.values())  # instruct_qa_human
    text = (tmp_path / "labels.jsonl").read_text()
    assert "Tam Rolle" not in text and "schooner" not in text  # no benchmark text in the records


def test_held_out_split_and_a_missing_folder(tmp_path, data, monkeypatch):
    held = [i for i in (f"q{n}" for n in range(50)) if group_reason(f"hotpotqa_support:{i}")]
    assert held and all(group_reason(f"hotpotqa_support:{i}") == HELD_QUESTION for i in held)
    monkeypatch.setenv(FOLDER_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(InputError, match=FOLDER_ENV):
        load_sources(data, ["hotpotqa_support"])


def test_passage_keys_do_not_depend_on_the_folders_other_files(tmp_path, data, monkeypatch):
    """A labels record made from one copy of the snapshot resolves on a copy with one more file (ECM's
    dev.json sorts before test.json; until 2026-12-01 it shifted every key after it)."""
    records = label(tmp_path, data, datasets=["hotpotqa_support"], recipes=["multihop"])
    before = resolved(records, data)
    extra = {
        "question": "Who kept the lighthouse of Oreby?",
        "answer": "Lio Marsh",
        "evidence": ["Oreby | Lio Marsh kept it.", "Lio Marsh | A keeper."],
    }
    (data / "hotpotqa_support" / "dev.json").write_text(json.dumps([extra]), encoding="utf-8")
    after = resolved(records, data)
    assert after.keys() == before.keys() and all(after[i].passages == before[i].passages for i in before)
    assert question_id(extra["question"]) in load_sources(data, ["hotpotqa_support"])["hotpotqa_support"].questions


def test_records_with_the_old_keys_are_rewritten_from_the_files_they_were_made_from(tmp_path, data, monkeypatch):
    migrate = load_script("migrate_support_keys")
    records = label(tmp_path, data, datasets=["hotpotqa_support"], recipes=["multihop", "evidence_removal"])
    want = resolved(records, data)
    folder = data / "hotpotqa_support"
    extra = {
        "question": "Who kept the lighthouse of Oreby?",
        "answer": "Lio Marsh",
        "evidence": ["Oreby | Lio Marsh kept it.", "Lio Marsh | A keeper."],
    }
    (folder / "dev.json").write_text(json.dumps([extra]), encoding="utf-8")
    maps = migrate.variants(folder)
    made_without, made_with = maps["test.json+train.jsonl"], maps["dev.json+test.json+train.jsonl"]
    assert made_without.keys() != made_with.keys()  # the old keys shifted with the extra file
    # the same records as two runs wrote them with the old keys: the first half without dev.json, the rest with it
    back_without = {new: old for old, new in made_without.items()}
    back_with = {new: old for old, new in made_with.items()}
    lines = []
    for i, r in enumerate(records.values()):
        back = back_without if i < len(records) // 2 else back_with
        lines.append(json.dumps(migrate.rewritten(r, back)))
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError):  # the old keys do not resolve
        resolved({r["id"]: r for r in map(json.loads, lines)}, data)
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(data))
    migrate.main([str(path)])
    rewritten = {r["id"]: r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    got = resolved(rewritten, data)
    assert got.keys() == want.keys() and all(got[i].passages == want[i].passages for i in want)
    assert rewritten == records


def shared_paragraph_source(name: str):
    """Three training questions and a held-out one of `name`; the first and the held-out one share
    a paragraph. (the source, the training ids, the held-out id)"""
    from verirag_lab.train.verifier_labels.heldout import split_of
    from verirag_lab.train.verifier_labels.sources import Question, Source

    ids = [f"q{n}" for n in range(200)]
    train = [i for i in ids if split_of(name, i) == "train"][:3]
    held = next(i for i in ids if split_of(name, i) == "heldout")
    gold = {train[0]: ("shared", "a"), train[1]: ("b", "c"), train[2]: ("d", "e"), held: ("shared", "f")}
    questions = {i: Question(name, i, f"Question {i}?", ("x",), g) for i, g in gold.items()}
    passages = {k: (k, f"text {k}") for g in gold.values() for k in g}
    evidence_ids: dict[str, list[str]] = {}
    for i, g in gold.items():
        for k in g:
            evidence_ids.setdefault(k, []).append(i)
    return Source(name, questions, passages, evidence_ids=evidence_ids), train, held


def test_a_training_question_whose_own_evidence_is_a_held_out_questions_is_not_drawn():
    """Its records would all be refused by the training guard (they name a held-out document):
    labelling does not spend the LLM on it; the other training questions keep their order."""
    from verirag_lab.train.verifier_labels.run import select_questions

    source, train, held = shared_paragraph_source("hotpotqa_support")
    everything, _, _ = select_questions(shared_paragraph_source("hotpotqa_support")[0], set(), None, 0, None)
    drawn, _, _ = select_questions(source, set(), None, 0, "train")
    assert {q.id for q in drawn} == {train[1], train[2]} and "shared" in source.banned
    assert [q.id for q in drawn] == [q.id for q in everything if q.id in (train[1], train[2])]
    held_drawn, _, _ = select_questions(shared_paragraph_source("hotpotqa_support")[0], set(), None, 0, "heldout")
    assert [q.id for q in held_drawn] == [held]  # held-out label sets keep their questions
    # the nq and hotpotqa task lists are committed whole: nothing is dropped there
    source, train, _ = shared_paragraph_source("hotpotqa")
    drawn, _, _ = select_questions(source, set(), None, 0, "train")
    assert {q.id for q in drawn} == set(train) and "shared" in source.banned
