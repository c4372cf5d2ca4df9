"""The issue-36 label recipes (multihop, followup, doc_claims) on tiny made-up data written here:
each recipe's supported and unsupported examples, the held-out split, determinism, and that the
documentation recipe never reads a licence text."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from verirag.errors import InputError
from verirag_lab.train.verifier_labels import doc_corpus, label_verifier, read_records, resolve
from verirag_lab.train.verifier_labels.heldout import split_of

DISTRACTORS = [
    ("Piet Lund", ["Piet Lund was a sailor and harbour master of Harwick."]),
    ("Edda Morn", ["Edda Morn was a painter who founded a museum."]),
    ("Selma Hart", ["Selma Hart built railways in the Amber valley."]),
    ("Amber Valley", ["Amber Valley is a valley with orchards and a railway."]),
    ("Ivo Brandt", ["Ivo Brandt painted the harbour at dawn."]),
    ("Dellport", ["Dellport is a village on the river Dell."]),
]
HOTPOT = [
    {
        "_id": "b1",
        "type": "bridge",
        "question": "What year was the architect of Gallo Hall born?",
        "answer": "1850",
        "gold": [
            ("Gallo Hall", ["Gallo Hall is a concert hall in Harwick.", " It was designed by Nora Vell."]),
            ("Nora Vell", ["Nora Vell (born 1850) was an architect from Dellport."]),
        ],
    },
    {
        "_id": "c1",
        "type": "comparison",
        "question": "Which is older, the Orrin waterway or the Kelby bridge?",
        "answer": "Kelby bridge",
        "gold": [
            ("Orrin waterway", ["The Orrin waterway opened in 1902."]),
            ("Kelby bridge", ["The Kelby bridge was completed in 1871."]),
        ],
    },
    {
        "_id": "c2",
        "type": "comparison",
        "question": "Are Mara Quill and Tobias Fenn both engineers?",
        "answer": "yes",
        "gold": [
            ("Mara Quill", ["Mara Quill was an engineer of lighthouses."]),
            ("Tobias Fenn", ["Tobias Fenn was an engineer of canals."]),
        ],
    },
    {
        "_id": "x1",
        "type": "bridge",
        "question": "Who founded the museum of Wexmoor town?",
        "answer": "Edda Morn",
        "gold": [
            ("Wexmoor", ["Wexmoor is a town with the Wexmoor Museum."]),
            ("Wexmoor Museum", ["The Wexmoor Museum was founded by Edda Morn."]),
        ],
    },
]
EXCLUDED = "Who founded the museum of Wexmoor town?"
NQ_ROWS = [
    (
        "who designed the tallbridge lighthouse",
        ["Mara Quill"],
        "Tallbridge Lighthouse",
        "The Tallbridge Lighthouse is a stone tower on the Wexmoor coast. It was designed by Mara Quill.",
    ),
    (
        "when was the song holm road released",
        ["1983"],
        "Holm Road (song)",
        "Holm Road is a 1983 single by the Harwick band Grey Tide.",
    ),
    ("when was the orrin canal opened", ["1902"], "Orrin Canal", "The Orrin Canal was opened in 1902 by Tobias Fenn."),
    ("who built the kelby viaduct", ["Selma Hart"], "Kelby Viaduct", "The Kelby Viaduct was built by Selma Hart."),
    (
        "who painted the harbour at dawn",
        ["Ivo Brandt"],
        "Harbour at Dawn",
        "Harbour at Dawn is a painting by Ivo Brandt.",
    ),
]


def write_data(root: Path) -> Path:
    (root / "lost_in_the_middle_nq").mkdir(parents=True)
    with gzip.open(root / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "wt", encoding="utf-8") as f:
        for q, answers, title, text in NQ_ROWS:
            ctx = [{"title": title, "text": text, "hasanswer": True, "isgold": True}]
            f.write(json.dumps({"question": q, "answers": answers, "ctxs": ctx}) + "\n")
    (root / "hotpotqa_amor_subset").mkdir()
    with open(root / "hotpotqa_amor_subset" / "dev.json", "w", encoding="utf-8") as f:
        for h in HOTPOT:
            context = [[t, s] for t, s in h["gold"]] + [[t, s] for t, s in DISTRACTORS if t != h["answer"]]
            rec = {k: h[k] for k in ("_id", "type", "question", "answer")}
            f.write(json.dumps({**rec, "context": context, "supporting_facts": [[t, 0] for t, _ in h["gold"]]}) + "\n")
    folder = root / "instruct_qa_human"
    folder.mkdir()
    row = {"model": "m", "response": "r", "references": ["x"], "gold_passages": [], "label_correct": 1}
    row["human_correctness"] = "correct"
    (folder / "correctness_nq_corrected_396.jsonl").write_text(
        json.dumps({**row, "dataset": "natural_questions", "id": 1, "question": "who is nobody"}) + "\n"
    )
    (folder / "correctness_human_eval_1200.jsonl").write_text(
        json.dumps({**row, "dataset": "hotpot_qa", "id": 2, "question": EXCLUDED}) + "\n"
    )
    return root


POLICY = """\
Maintainer scripts
==================

The maintainer must keep the package working in 3 releases. The user should never edit files in the
package directory.

Packages must not ship files in /usr/local. The maintainer may upload a package only if the tests pass,
which takes 10 minutes on average.

A package is removed after 30 days unless the maintainer objects to its removal in writing to the team.

.. note::

   Directives are not prose and are left out of the corpus entirely.
"""
LICENCE_PARAGRAPH = "This program is free software; you can redistribute it under the GNU General Public License, version 3 or later, as published by the Free Software Foundation."
MAN_PAGE = """\
.\\" Copyright notice in a comment: never read as prose
.TH FOO 2 2024-01-01
.SH NAME
foo \\- do foo
.SH DESCRIPTION
The
.BR foo ()
call returns 0 when the caller owns the file, and the kernel does not copy it unless the process asks for it.
.PP
It may fail with 5 distinct errors, if the file is locked by another process at the time of the call.
"""


def write_docs(root: Path) -> Path:
    sources = root / "usr/share/doc/debian-policy/policy.html/_sources"
    sources.mkdir(parents=True)
    (sources / "ch-scripts.rst.txt").write_text(POLICY, encoding="utf-8")
    (sources / "ap-license.rst.txt").write_text(LICENCE_PARAGRAPH + "\n", encoding="utf-8")
    (root / "usr/share/common-licenses").mkdir(parents=True)
    (root / "usr/share/common-licenses/GPL-3").write_text(LICENCE_PARAGRAPH + "\n", encoding="utf-8")
    man = root / "usr/share/man/man2"
    man.mkdir(parents=True)
    with gzip.open(man / "foo.2.gz", "wt", encoding="utf-8") as f:
        f.write(MAN_PAGE)
    return root


@pytest.fixture()
def data(tmp_path) -> Path:
    return write_data(tmp_path / "data")


@pytest.fixture()
def docs(tmp_path, monkeypatch) -> Path:
    root = write_docs(tmp_path / "docroot")
    monkeypatch.setenv("VERIRAG_DOC_ROOT", str(root))
    return root


def label(tmp_path, data, name="labels.jsonl", **kw) -> dict[str, dict]:
    kw.setdefault("n", None)
    kw.setdefault("models", [])
    label_verifier(tmp_path / name, data_root=data, **kw)
    return {r["id"]: r for r in read_records(tmp_path / name)}


def resolved(records: dict[str, dict], data) -> dict:
    examples = [r for r in records.values() if "skip" not in r]
    return {r["id"]: e for r, e in zip(examples, resolve(examples, data), strict=True)}


def variant(records: dict[str, dict], dataset: str, example: str, name: str) -> dict:
    (r,) = [r for i, r in records.items() if i.startswith(f"{records[i]['recipe']}/{dataset}/{example}/{name}/")]
    return r


def test_multihop_supported_with_both_paragraphs_unsupported_without_one(tmp_path, data):
    records = label(tmp_path, data, datasets=["hotpotqa"], recipes=["multihop"])
    ex = resolved(records, data)
    both = variant(records, "hotpotqa", "b1", "both_mixed")
    assert both["label"] == 1 and set(both["meta"]) >= {"variant"} and len(both["passages"]) == 5
    pair = ex[variant(records, "hotpotqa", "b1", "both_pair")["id"]]
    assert pair.label == 1 and len(pair.passages) == 2 and pair.answer == "1850"
    for i in (0, 1):
        drop = variant(records, "hotpotqa", "b1", f"drop{i}")
        assert drop["label"] == 0 and len(drop["passages"]) == 5
        gold = [k for k in both["passages"] if k not in drop["passages"]]
        assert len(gold) == 1  # exactly one supporting paragraph replaced, in its place
    swap = variant(records, "hotpotqa", "b1", "bridge_swap")
    assert swap["label"] == 0 and swap["passage_edits"]
    edited = ex[swap["id"]].passages[swap["passage_edits"][0][0]]
    assert edited.startswith("Gallo Hall\n") and "Nora Vell" not in edited
    assert any(name in edited for name, _ in DISTRACTORS)
    # comparisons: the other entity's name, or yes/no flipped
    other = variant(records, "hotpotqa", "c1", "other_entity")
    assert other["label"] == 0 and ex[other["id"]].answer == "Orrin waterway"
    assert ex[variant(records, "hotpotqa", "c2", "other_entity")["id"]].answer == "no"
    assert not any(r["example"] == "x1" for r in records.values())  # an instruct_qa_human question
    # no benchmark text in the records
    text = (tmp_path / "labels.jsonl").read_text()
    assert "designed by" not in text and "Nora Vell" not in text


def test_followup_rewrites_the_question_and_carries_the_history(tmp_path, data):
    records = label(tmp_path, data, datasets=["nq", "hotpotqa"], recipes=["followup"])
    ex = resolved(records, data)
    gold = ex[variant(records, "hotpotqa", "b1", "gold")["id"]]
    assert gold.label == 1 and "Gallo Hall" not in gold.question
    assert gold.question in (
        "What year was the architect of it born?",
        "What year was the architect of the above born?",
    )
    assert gold.history[0] == "User: Tell me about Gallo Hall." and gold.history[1].startswith("Agent: Gallo Hall is")
    song = ex[variant(records, "nq", "1", "gold")["id"]]
    assert song.question == "when was that song released" and song.history[0] == "User: Tell me about Holm Road."
    swapped = ex[variant(records, "hotpotqa", "b1", "swapped")["id"]]
    assert swapped.label == 0 and swapped.answer != "1850" and swapped.question == gold.question
    other = ex[variant(records, "hotpotqa", "b1", "other_history")["id"]]
    assert other.label == 0 and other.answer == "1850" and "Gallo Hall" not in other.history[0]
    # a change of topic (TopiOCQA's kind): both entities told, "it" is the latest one
    switch = ex[variant(records, "hotpotqa", "b1", "switch")["id"]]
    back = ex[variant(records, "hotpotqa", "b1", "switch_back")["id"]]
    assert switch.label == 1 and back.label == 0 and switch.answer == back.answer == "1850"
    assert switch.question == back.question == gold.question and len(switch.history) == len(back.history) == 4
    assert switch.history[2:] == gold.history and switch.history[:2] == other.history  # the question's entity last
    assert back.history[:2] == gold.history and back.history[2:] == other.history  # the other entity last
    assert all(isinstance(t, str) for e in ex.values() for t in e.history)
    assert "Tell me about Gallo" not in (tmp_path / "labels.jsonl").read_text()


def test_same_inputs_same_examples(tmp_path, data, docs):
    kw = {"datasets": ["nq", "hotpotqa", "docs"], "recipes": ["multihop", "followup", "doc_claims"]}
    a = label(tmp_path, data, "a.jsonl", **kw)
    b = label(tmp_path, data, "b.jsonl", **kw)
    assert a == b and len(a) > 20
    assert resolved(a, data) == resolved(b, data)


def test_doc_claims_supported_sentence_and_perturbed_ones(tmp_path, data, docs):
    records = label(tmp_path, data, datasets=["docs"], recipes=["doc_claims"])
    ex = resolved(records, data)
    examples = [(r, ex[i]) for i, r in records.items() if i in ex]
    kinds = {(r["meta"]["variant"], r["label"]) for r, _ in examples}
    for expected in [("sentence", 1), ("cloze", 1), ("number", 0), ("negation", 0), ("condition", 0), ("party", 0)]:
        assert expected in kinds
    for r, e in examples:
        assert r["doc"]["package"] in ("debian-policy", "manpages-dev") and len(r["doc"]["sha"]) == 16
        source = " ".join(p.split("\n", 1)[1] for p in e.passages)
        if r["meta"]["variant"] == "sentence":
            assert e.label == 1 and e.answer in source
        elif r["meta"]["variant"] in ("number", "party", "negation", "condition"):
            assert e.label == 0 and e.answer not in source
        assert e.group.startswith("docs:")  # validation holds out whole documents
    cond = next(e for r, e in examples if r["meta"]["variant"] == "condition" and "30 days" in e.answer)
    assert cond.answer == "A package is removed after 30 days."
    assert "maintainer" not in (tmp_path / "labels.jsonl").read_text()  # references only


def test_doc_corpus_never_reads_a_licence(tmp_path, docs, monkeypatch):
    read: list[str] = []
    real = doc_corpus.read_doc_file
    monkeypatch.setattr(doc_corpus, "read_doc_file", lambda p: read.append(str(p)) or real(p))
    source = doc_corpus.load_doc_source()
    assert read and not any(doc_corpus.is_licence_path(p) for p in read)
    assert not any("common-licenses" in p or "license" in p.lower() for p in read)
    assert not any("General Public License" in text for _, text in source.passages.values())
    with pytest.raises(InputError, match="licence"):
        real(docs / "usr/share/common-licenses/GPL-3")
    # the man page's roff is read as prose, the comment with its copyright left out
    man = [t for k, (_, t) in source.passages.items() if k.startswith("manpages-dev:")]
    assert any(t.startswith("The foo() call returns 0 when the caller owns the file") for t in man)
    assert not any("Copyright" in t for t in man)


def test_heldout_split_keeps_whole_questions_and_packages_apart(tmp_path, data, docs):
    kw = {"datasets": ["nq", "hotpotqa", "docs"], "recipes": ["multihop", "followup", "doc_claims"]}
    train = label(tmp_path, data, "train.jsonl", split="train", **kw)
    held = label(tmp_path, data, "held.jsonl", split="heldout", **kw)
    groups = {s: {(r["dataset"], r["example"]) for r in recs.values()} for s, recs in (("t", train), ("h", held))}
    assert not groups["t"] & groups["h"]
    assert all(split_of(d, e) == "train" for d, e in groups["t"])
    assert all(split_of(d, e) == "heldout" for d, e in groups["h"])
    assert {e.split(":")[0] for d, e in groups["h"] if d == "docs"} == {"manpages-dev"}
    assert {e.split(":")[0] for d, e in groups["t"] if d == "docs"} == {"debian-policy"}
    summary = json.loads((tmp_path / "held.summary.json").read_text())
    assert summary["last_run"]["split"] == "heldout" and set(summary["by_split"]) <= {"heldout"}
    with pytest.raises(InputError, match="unknown split"):
        label(tmp_path, data, "x.jsonl", split="dev", **kw)


def test_a_changed_document_is_refused(tmp_path, data, docs):
    records = label(tmp_path, data, datasets=["docs"], recipes=["doc_claims"])
    path = docs / "usr/share/doc/debian-policy/policy.html/_sources/ch-scripts.rst.txt"
    path.write_text(POLICY.replace("3 releases", "4 releases"), encoding="utf-8")
    with pytest.raises(InputError, match="changed since it was labelled"):
        resolved(records, data)


def test_train_verifier_reads_the_new_labels_with_their_history(tmp_path, data, monkeypatch):
    from verirag_lab.train.verifier import read_labels

    records = label(tmp_path, data, datasets=["nq", "hotpotqa"], recipes=["multihop", "followup"])
    skip = {"id": "multihop/hotpotqa/zz/x/s0", "recipe": "multihop", "dataset": "hotpotqa", "example": "zz"}
    lines = [json.dumps({**skip, "skip": "made up", "v": 1})] + [json.dumps(r) for r in records.values()]
    path = tmp_path / "skip-first.jsonl"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(data))
    examples = list(read_labels(path))
    assert len(examples) == sum("skip" not in r for r in records.values())
    assert any(e.history for e in examples if e.recipe == "followup")
    assert {e.label for e in examples if e.recipe == "multihop"} == {0, 1}
