"""The training guard (issue 48, item 1; issue 47, item 6): evaluation questions and licence texts
never reach a learned part's training data, whatever the command line says."""

from __future__ import annotations

import json

import pytest

from verirag.errors import InputError
from verirag.learned.pruner import PrunerExample
from verirag_lab.train.guard import TrainingGuard, licence_shingles
from verirag_lab.train.verifier_labels.exclusion import question_key

GRANT = (
    "Everyone is permitted to copy and distribute verbatim copies of this license document, "
    "but changing it is not allowed, and the lighthouse keeper says so."
)


def _example(question: str, text: str) -> PrunerExample:
    return PrunerExample(question, "T", (text,), (1,), question, "test")


def _guard(tmp_path, questions=()):
    licences = tmp_path / "licences"
    licences.mkdir()
    (licences / "GPL-3").write_text(
        "GNU GENERAL PUBLIC LICENSE Version 3. Everyone is permitted to copy and distribute verbatim copies "
        "of this license document, but changing it is not allowed."
    )
    return TrainingGuard(frozenset(question_key(q) for q in questions), licence_shingles(licences))


def test_the_guard_refuses_an_evaluation_question_and_a_licence_paragraph(tmp_path):
    guard = _guard(tmp_path, ["Who wrote the novel 'Solaris'?"])
    kept = guard.keep(
        [
            _example("who wrote the novel Solaris", "Stanislaw Lem wrote it."),  # same question, other spelling
            _example("Where is Cape Arrow?", GRANT),  # shares eight words with a licence file
            _example("Where is Cape Arrow?", "This program comes WITHOUT ANY WARRANTY."),  # a grant's wording
            _example("Where is Cape Arrow?", "Cape Arrow is on the west coast of the island."),
        ],
        question=lambda e: e.question,
        texts=lambda e: e.sentences,
    )
    assert [e.sentences[0] for e in kept] == ["Cape Arrow is on the west coast of the island."]
    assert guard.refused == {"instruct_qa_human question": 1, "licence text": 2}
    with pytest.raises(InputError, match="evaluation data"):
        guard.check([_example("Where is Cape Arrow?", GRANT)], lambda e: e.question, lambda e: e.sentences)


def test_ordinary_prose_is_not_mistaken_for_a_licence():
    guard = TrainingGuard(frozenset(), licence_shingles())  # the machine's own licence files, where present
    assert (
        guard.refusal("Who built it?", ["The lighthouse at Cape Arrow was built in 1874 by the harbour board."]) is None
    )


def test_pruner_examples_pass_the_guard_whatever_the_caller_asks(tmp_path):
    from verirag_lab.train.pruner_examples import pruner_examples

    root = tmp_path / "data"
    root.mkdir()
    from tests.test_pruner import _write_fixture

    _write_fixture(root)
    with pytest.raises(InputError, match="instruct_qa_human"):  # without the evaluation data, no training data
        pruner_examples(root)
    folder = root / "instruct_qa_human"
    folder.mkdir()
    row = {
        "dataset": "nq",
        "id": 3,
        "model": "m",
        "question": "when was lighthouse 3 built",
        "references": ["1803"],
        "gold_passages": [{"title": "Lighthouse 3", "text": "It was built in 1803."}],
    }
    for name in ("correctness_human_eval_1200.jsonl", "correctness_nq_corrected_396.jsonl"):
        (folder / name).write_text(json.dumps(row) + "\n")
    guard = TrainingGuard.for_data(root)
    examples = pruner_examples(root, guard=guard)
    assert "when was lighthouse 3 built" not in {e.question for e in examples}
    assert guard.refused.get("instruct_qa_human question", 0) >= 1


@pytest.mark.shared_data
def test_the_shipped_data_holds_no_evaluation_question(shared_data):
    from verirag_lab.train.pruner_examples import pruner_examples

    guard = TrainingGuard.for_data(shared_data)
    examples = pruner_examples(shared_data, guard=guard)
    assert guard.refused.get("instruct_qa_human question", 0) > 0  # the first pruner read 65 of them
    assert not any(question_key(e.question) in guard.questions for e in examples)


def test_the_forecaster_trust_filter_and_lookback_fit_only_what_the_guard_allows(tmp_path, monkeypatch):
    """The parts a user may also fit on their own data (issue 47, item 6): with a benchmark folder,
    its instruct_qa_human questions are refused; without one, licence texts still are."""
    from tests.test_train_trust_calibration import examples, pooled_index
    from tests.test_verifier_guard import guard_data
    from verirag.types import Passage
    from verirag_lab.train.forecaster import pairs, training_records
    from verirag_lab.train.forecaster_labels import LabelRecord
    from verirag_lab.train.trust_calibration import calibrate_retrieval

    def record(i: int, question: str, text: str) -> LabelRecord:
        return LabelRecord(f"k{i}", f"q{i}", f"g{i}", question, ["x"], f"d{i}", "T", text, 0, 1.0, "m", label=i % 2)

    records = [
        record(0, "Who is nobody?", "Nobody is a sailor."),  # the toy folder's instruct_qa_human question
        record(1, "Where is Cape Arrow?", "This program comes WITHOUT ANY WARRANTY."),
        record(2, "Where is Cape Arrow?", "Cape Arrow is on the west coast."),
        record(3, "When was it built?", "It was built in 1874."),
    ]
    monkeypatch.delenv("VERIRAG_DATA_DIR", raising=False)
    guard = TrainingGuard.for_training()  # no benchmark folder: the licence texts alone
    assert [r.key for r in training_records(records, guard)] == ["k0", "k2", "k3"]
    guard_data(tmp_path, monkeypatch)
    guard = TrainingGuard.for_training()
    assert [r.key for r in training_records(records, guard)] == ["k2", "k3"]
    assert guard.refused == {"instruct_qa_human question": 1, "licence text": 1}
    q, _, y, _ = pairs(records)
    assert q == ["Where is Cape Arrow?", "When was it built?"] and y == [0, 1]

    exs = examples()
    exs[0].passages = [Passage("gpl", "This program comes WITHOUT ANY WARRANTY.", title="x"), *exs[0].passages]
    cal = calibrate_retrieval(exs, pooled_index(), k=3, alpha=0.2)
    assert cal.skipped == {"refused as evaluation data (licence text)": 1}
