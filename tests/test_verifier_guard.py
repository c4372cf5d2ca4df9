"""The verifier's training guard (issue 47, item 6): held-out and own-answer questions, man pages,
the final test's Info manuals and a held-out question's evidence or answers are refused, whatever
the labels files and options say; the labelling recipes never lend them to training items."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag_lab.train.guard import TrainingGuard
from verirag_lab.train.verifier import read_examples, read_labels, train_verifier
from verirag_lab.train.verifier_examples import VerifierExample
from verirag_lab.train.verifier_labels import label_verifier, read_records
from verirag_lab.train.verifier_labels.heldout import hash_split, own_answer_groups, split_of
from verirag_lab.train.verifier_labels.heldout_index import (
    FINAL_DOCUMENT,
    HELD_DOCUMENT,
    HELD_EVIDENCE,
    HELD_QUESTION,
    OWN_QUESTION,
)
from verirag_lab.train.verifier_labels.run import select_questions
from verirag_lab.train.verifier_labels.sources import load_sources

NAMES = ["Mara Quill", "Tobias Fenn", "Selma Hart", "Ivo Brandt", "Nora Vell", "Piet Lund"]
TOWNS = ["Harwick", "Dellport", "Wexmoor", "Kelby", "Orrin", "Tallbridge"]
N_NQ, N_HOTPOT = 12, 6  # nq rows 4, 9 and 11 and hotpotqa h3 and h5 fall in the held-out buckets;
# nq rows 0, 5 and 8 (and 11) are own-answer groups: held out too
INFO = (
    "\x1f\nFile: toy.info,  Node: Top,  Next: Intro,  Up: (dir)\n\nToy\n***\n\n"
    "The toy program copies each input file to the standard output, and it stops at the first error "
    "unless the user asks it to go on.\n\n"
    "When the toy program reads from a pipe, it waits for the writer to close the pipe before it exits, "
    "so the caller always receives every byte.\n"
)
MAN = (
    ".TH BAR 2 2024-01-01\n.SH NAME\nbar \\- do bar\n.SH DESCRIPTION\n"
    "The bar call returns 0 when the caller owns the file, and the kernel does not copy it unless the process asks.\n"
    ".PP\nIt may fail with 5 distinct errors, if the file is locked by another process at the time of the call.\n"
)
POLICY = (
    "Scripts\n=======\n\nThe maintainer must keep the package working in 3 releases, and the user should "
    "never edit files in the package directory.\n\nA package is removed after 30 days unless the maintainer "
    "objects to its removal in writing to the team.\n"
)


def write_data(root: Path) -> Path:
    (root / "lost_in_the_middle_nq").mkdir(parents=True)
    with gzip.open(root / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "wt", encoding="utf-8") as f:
        for i in range(N_NQ):
            name, town = NAMES[i % 6], f"{TOWNS[i % 6]} {i}"
            text = f"The tower of {town} is a stone tower by the sea. It was built by {name} in {1800 + i}."
            ctx = [{"title": f"Tower of {town}", "text": text, "hasanswer": True, "isgold": True}]
            f.write(json.dumps({"question": f"who built the tower of {town}", "answers": [name], "ctxs": ctx}) + "\n")
    (root / "hotpotqa_amor_subset").mkdir()
    with open(root / "hotpotqa_amor_subset" / "dev.json", "w", encoding="utf-8") as f:
        for i in range(N_HOTPOT):
            hall, person = f"Hall {TOWNS[i]}", f"{NAMES[i]} {i}"
            context = [
                [hall, [f"{hall} is a concert hall.", f" It was designed by {person}."]],
                [person, [f"{person} (born {1850 + i}) was an architect."]],
                ["Piet Lund", ["Piet Lund was a sailor and harbour master of Harwick."]],
                ["Edda Morn", ["Edda Morn was a painter who founded a museum."]],
            ]
            rec = {"_id": f"h{i}", "type": "bridge", "answer": str(1850 + i)}
            rec["question"] = f"What year was the architect of {hall} born?"
            f.write(json.dumps({**rec, "context": context, "supporting_facts": [[hall, 1], [person, 0]]}) + "\n")
    folder = root / "instruct_qa_human"
    folder.mkdir()
    row = {"model": "m", "response": "r", "references": ["x"], "gold_passages": [], "label_correct": 1}
    row["human_correctness"] = "correct"
    for name in ("correctness_nq_corrected_396.jsonl", "correctness_human_eval_1200.jsonl"):
        (folder / name).write_text(
            json.dumps({**row, "dataset": "natural_questions", "id": 1, "question": "who is nobody"}) + "\n"
        )
    return root


def write_docs(root: Path) -> Path:
    for rel, text in (
        ("usr/share/doc/debian-policy/policy.html/_sources/ch-scripts.rst.txt", POLICY),
        ("usr/share/man/man2/bar.2.gz", MAN),
        ("usr/share/info/toy.info.gz", INFO),
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".gz"):
            with gzip.open(root / rel, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            (root / rel).write_text(text, encoding="utf-8")
    return root


def guard_data(tmp_path: Path, monkeypatch) -> Path:
    """A data folder the verifier's guard reads, and no documentation, set in the environment:
    what a test that trains the verifier needs."""
    root = write_data(tmp_path / "guard-data")
    (tmp_path / "no-docs").mkdir()
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(root))
    monkeypatch.setenv("VERIRAG_DOC_ROOT", str(tmp_path / "no-docs"))
    return root


@pytest.fixture()
def data(tmp_path, monkeypatch) -> Path:
    root = write_data(tmp_path / "data")
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(root))
    return root


@pytest.fixture()
def docs(tmp_path, monkeypatch) -> Path:
    root = write_docs(tmp_path / "docroot")
    monkeypatch.setenv("VERIRAG_DOC_ROOT", str(root))
    return root


def labels(tmp_path, data, name, **kw) -> Path:
    kw.setdefault("datasets", ["nq", "hotpotqa", "docs"])
    kw.setdefault("recipes", ["swap", "followup", "multihop", "doc_claims", "evidence_removal"])
    label_verifier(tmp_path / name, data_root=data, n=None, models=[], **kw)
    return tmp_path / name


def example(group: str, question: str = "who built it", passages=("Some passage about a tower.",)) -> VerifierExample:
    return VerifierExample(question, "An answer.", tuple(passages), 1, "test", group)


def test_the_fixture_has_held_out_questions():
    assert [i for i in range(N_NQ) if hash_split("nq", str(i)) == "heldout"] == [4, 9, 11]
    assert [f"h{i}" for i in range(N_HOTPOT) if hash_split("hotpotqa", f"h{i}") == "heldout"] == ["h3", "h5"]


def test_training_refuses_the_held_out_split_whatever_the_options(tmp_path, data, docs):
    path = labels(tmp_path, data, "all.jsonl")  # no --split: what the CLI labels by default
    records = [r for r in read_records(path) if "skip" not in r]
    held = {
        (r["dataset"], str(r["example"]).rsplit("#", 1)[0])
        for r in records
        if split_of(r["dataset"], str(r["example"])) != "train"
    }
    assert {d for d, _ in held} == {"nq", "hotpotqa", "docs"}  # the file does hold held-out questions and man pages
    guard = TrainingGuard.for_verifier(data)
    kept = read_examples(
        [path], read=lambda p: read_labels(p, guard), guard=guard, exclude_groups={"nq:1"}, max_examples=10_000
    )
    assert guard.refused[HELD_QUESTION] > 0 and guard.refused[HELD_DOCUMENT] > 0
    assert sum(guard.refused.values()) + len(kept) + sum(
        r["dataset"] == "nq" and r["example"] == "1" for r in records
    ) == len(records)
    assert all(split_of(*e.group.split(":", 1)) == "train" for e in kept if not e.group.startswith("docs:"))
    assert not any(e.group.startswith(("docs:manpages", "docs:info-manuals")) for e in kept)
    # the same refusals through the command line: they are printed, whatever --exclude-groups says
    from verirag.cli import main

    only_held = tmp_path / "held-only.jsonl"
    only_held.write_text(
        "".join(json.dumps(r) + "\n" for r in records if split_of(r["dataset"], str(r["example"])) != "train")
    )
    groups = tmp_path / "groups.txt"
    groups.write_text("nq:1\n")
    args = ["train", "verifier", str(only_held), "--out", str(tmp_path / "v"), "--exclude-groups", str(groups)]
    assert main([*args, "--max-examples", "5"]) != 0  # nothing left to train on
    with pytest.raises(InputError, match="no examples the guard allows.*held-out"):
        train_verifier(only_held, data_root=data)


def test_an_own_answer_group_is_refused_even_where_its_hash_says_train(data):
    own = sorted(g for g in own_answer_groups() if g.startswith("nq:") and hash_split("nq", g[3:]) == "train")[0]
    assert split_of("nq", own[3:]) == "heldout"
    guard = TrainingGuard.for_verifier(data)
    kept = guard.keep_by([example(own), example("nq:1")], guard.example_refusal)
    assert [e.group for e in kept] == ["nq:1"] and guard.refused == {OWN_QUESTION: 1}
    with pytest.raises(InputError, match="own-answer"):
        train_verifier("x", read=lambda p: iter([example(own)] * 4), data_root=data)
    with pytest.raises(InputError, match="own-answer"):
        guard.check_by([example(own)], guard.example_refusal, lambda e: e.question)


def test_man_pages_and_info_manuals_are_refused_by_group_and_by_text(data, docs):
    from verirag_lab.train.verifier_labels.doc_corpus import load_doc_source

    source = load_doc_source(docs)
    man = next(t for k, (_, t) in source.passages.items() if k.startswith("manpages-dev:"))
    info = next(t for k, (_, t) in source.passages.items() if k.startswith("info-manuals:"))
    policy = next(t for k, (_, t) in source.passages.items() if k.startswith("debian-policy:"))
    guard = TrainingGuard.for_verifier(data)
    cases = [
        example("docs:manpages-dev:usr/share/man/man2/bar.2.gz"),
        example("docs:my-docs:usr/share/man/man1/ls.1.gz"),  # a man page under another package's name
        example("docs:info-manuals:usr/share/info/toy.info.gz"),
        example("mine:1", passages=(f"bar\n{man}",)),  # a resolved example whose group says nothing
        example("mine:2", passages=(info,)),
        example("mine:3", passages=(policy,)),
    ]
    kept = guard.keep_by(cases, guard.example_refusal)
    assert [e.group for e in kept] == ["mine:3"]
    assert guard.refused == {HELD_DOCUMENT: 3, FINAL_DOCUMENT: 2}


def test_the_final_documents_are_labelled_only_when_asked(tmp_path, data, docs):
    default = {r["example"].split(":")[0] for r in read_records(labels(tmp_path, data, "d.jsonl", datasets=["docs"]))}
    final = {
        r["example"].split(":")[0]
        for r in read_records(labels(tmp_path, data, "f.jsonl", datasets=["docs"], split="final"))
    }
    assert "info-manuals" not in default and final == {"info-manuals"}
    guard = TrainingGuard.for_verifier(data)
    made = [r for r in read_records(tmp_path / "f.jsonl") if "skip" not in r]
    assert made and not guard.keep_by(made, guard.record_refusal)
    assert guard.refused == {FINAL_DOCUMENT: len(made)}


def test_a_held_out_questions_evidence_or_answer_is_refused_in_a_training_question(tmp_path, data, docs):
    guard = TrainingGuard.for_verifier(data)
    nq = load_sources(data, ["nq"])["nq"]
    held_gold = nq.questions["4"].gold[0]
    base = {"id": "swap/nq/1/x/s0", "recipe": "swap", "dataset": "nq", "example": "1", "qh": "x", "label": 0}
    borrowed_passage = {**base, "passages": ["1", held_gold], "answer": {"answer_from": ["nq", "1", 0]}}
    borrowed_answer = {**base, "passages": ["1"], "answer": {"answer_from": ["nq", "4", 0]}}
    borrowed_turn = {
        **base,
        "passages": ["1"],
        "answer": "x",
        "history": [{"join": ["User: ", {"question_of": ["nq", "5"]}]}],
    }
    clean = {**base, "passages": ["1", "2"], "answer": {"answer_from": ["nq", "2", 0]}}
    kept = guard.keep_by([borrowed_passage, borrowed_answer, borrowed_turn, clean], guard.record_refusal)
    assert kept == [clean]
    assert guard.refused == {HELD_EVIDENCE: 1, "answer or turn drawn from a held-out question": 2}
    title, text = nq.passages[held_gold]
    assert guard.example_refusal(example("mine:1", passages=(f"{title}\n{text}",))) == HELD_EVIDENCE
    assert guard.example_refusal(example("mine:1", question="Who built the tower of Orrin 4?")) == HELD_QUESTION


def test_labelling_lends_only_the_splits_own_questions(tmp_path, data, docs):
    nq = load_sources(data, ["nq"])["nq"]
    _, lenders, _ = select_questions(nq, set(), None, 0)
    assert lenders and all(split_of("nq", i) == "train" for i in lenders)
    assert {nq.questions[i].gold[0] for i in ("4", "9", "11", "0")} <= nq.banned  # hashed out, own-answer
    _, lenders, _ = select_questions(nq, set(), None, 0, "heldout")
    assert sorted(lenders) == ["0", "11", "4", "5", "8", "9"] and nq.questions["1"].gold[0] in nq.banned
    # every record a --split train run makes passes the guard: nothing of the held-out split leaks in
    path = labels(tmp_path, data, "train.jsonl", split="train")
    guard = TrainingGuard.for_verifier(data)
    records = read_records(path)
    assert len(guard.keep_by(records, guard.record_refusal)) == len(records) and not guard.refused
    examples = list(read_labels(path, guard))
    assert examples and len(guard.keep_by(examples, guard.example_refusal)) == len(examples)
