"""benchmarks/own_answers_support.py: the held-out multi-hop questions written as twins, every
supporting paragraph in the answerable one among distractors, `k` paragraphs each, as eval reads them."""

from __future__ import annotations

import json

from benchmark_module import load_benchmark

from verirag.types import Passage
from verirag_lab.train.verifier_labels.heldout import split_of
from verirag_lab.train.verifier_labels.sources import Question


class _Source:
    """What the writer reads of a labelling source: its questions, passages and distractors."""

    def __init__(self, n_distractors: int):
        self.n = n_distractors
        self.questions = {}

    def distractors(self, q, k):
        return [f"d{i}" for i in range(min(k, self.n))]

    def passage(self, key):
        return Passage(id=key, text=f"text of {key}", title=key.upper())


def test_the_twins_hold_every_supporting_paragraph_or_none():
    bench = load_benchmark("own_answers_support")
    q = Question("hotpotqa_support", "abc", "Who?", ("Ada",), ("g0", "g1"), kind="bridge")
    unanswerable, answerable = bench.twins(_Source(8), q, k=8)
    assert [p["id"] for p in unanswerable["passages"]] == [f"d{i}" for i in range(8)]
    assert unanswerable["answerable"] is False and sum(unanswerable["relevance"]) == 0
    ids = [p["id"] for p in answerable["passages"]]
    assert (
        len(ids) == 8 and {"g0", "g1"} <= set(ids) and answerable["relevance"] == [int(i in ("g0", "g1")) for i in ids]
    )
    assert answerable["group"] == unanswerable["group"] == "abc" and answerable["answers"] == ["Ada"]
    assert bench.twins(_Source(8), q, k=8) == [unanswerable, answerable]  # the positions are the question's own
    assert bench.twins(_Source(5), q, k=8) == []  # too few distractors: left out, and counted by main
    json.dumps([unanswerable, answerable])  # a JSONL row each, as the `jsonl` loader reads


def test_only_the_held_out_bucket_is_written():
    bench = load_benchmark("own_answers_support")
    source = _Source(8)
    for i in range(200):
        qid = f"q{i:03d}"
        source.questions[qid] = Question("hotpotqa_support", qid, "Who?", ("Ada",), ("g0", "g1"))
    held = bench.held_out_questions(source)
    assert held and all(split_of("hotpotqa_support", q.id) == "heldout" for q in held)
    assert len(held) < 60  # a tenth by hash, give or take
    assert [q.id for q in held] == sorted(q.id for q in held)


def test_the_eval_reads_the_rows_as_twins(tmp_path):
    from verirag_lab.datasets import load_dataset

    bench = load_benchmark("own_answers_support")
    q = Question("hotpotqa_support", "abc", "Who?", ("Ada",), ("g0", "g1"))
    path = tmp_path / "examples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in bench.twins(_Source(8), q, k=8)))
    unanswerable, answerable = load_dataset("jsonl", path=path)
    assert (unanswerable.id, unanswerable.answerable, unanswerable.group) == ("abc:unanswerable", False, "abc")
    assert answerable.answerable is True and answerable.references == ["Ada"] and len(answerable.passages) == 8
    assert {p.title for p in answerable.passages} >= {"G0", "G1"}


def test_a_second_set_leaves_out_the_questions_of_a_committed_run(tmp_path):
    bench = load_benchmark("own_answers_support")
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"group": "q1", "example_id": "q1:answerable"}, {"group": "q1"}, {"group": "q2"}, {"example_id": "x"}]
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert bench.run_groups(run) == {"q1", "q2"}
    try:
        bench.run_groups(tmp_path / "nowhere")
    except SystemExit as e:
        assert "results.jsonl" in str(e)
    else:
        raise AssertionError("a missing export must stop the writer")
