"""What the distilled answers teach (issue 47, item 1): `verirag train verifier --distill-target`
gold | judge | agree | soft, from the gold grade and the LLM judge's score each `distill` answer
carries; what is dropped is counted."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

pytest.importorskip("verirag_lab")

from verirag.errors import InputError
from verirag.learned.verifier import TrainedVerifier
from verirag_lab.train.distill_targets import TARGETS, distill_targets
from verirag_lab.train.value_swaps import value_swap_negatives
from verirag_lab.train.verifier import example_from_json, train_verifier
from verirag_lab.train.verifier_examples import VerifierExample
from verirag_lab.train.verifier_labels.resolve import judge_score

PASSAGE = "Marie Curie was born in Warsaw in 1867. She won a second Nobel Prize in 1911."


def distilled(i: int, label: int, judge: float | None) -> VerifierExample:
    return VerifierExample(
        "Where was Marie Curie born?", f"She was born in Warsaw ({i}).", (PASSAGE,), label, "distill", f"nq:{i}",
        source=f"distill/nq/{i}", judge=judge,
    )  # fmt: skip


OTHER = VerifierExample("q", "She was born in 1867.", (PASSAGE,), 1, "swap", "nq:99", source="swap/nq/99")
# gold and judge agree on 0 and 1; disagree on 2 and 3; 4 has no judge score
EXAMPLES = [
    OTHER,
    distilled(0, 1, 0.9),
    distilled(1, 0, 0.2),
    distilled(2, 1, 0.3),
    distilled(3, 0, 0.7),
    distilled(4, 1, None),
]


def test_each_target_teaches_what_it_says_and_counts_what_it_drops():
    gold, counts = distill_targets(EXAMPLES, "gold")
    assert gold == EXAMPLES and counts["distilled"] == 5 and counts["kept"] == 5
    judge, counts = distill_targets(EXAMPLES, "judge")
    assert [e.label for e in judge] == [1, 1, 0, 0, 1]  # the judge's verdicts at 0.5; OTHER untouched
    assert judge[0] is OTHER and counts["no_judge_score"] == 1 and counts["relabelled"] == 2
    agree, counts = distill_targets(EXAMPLES, "agree")
    assert [e.source for e in agree] == ["swap/nq/99", "distill/nq/0", "distill/nq/1"]
    assert counts["disagree"] == 2 and counts["no_judge_score"] == 1 and counts["kept"] == 2
    soft, counts = distill_targets(EXAMPLES, "soft")
    assert [e.target for e in soft] == [None, 0.9, 0.2, 0.3, 0.7]
    assert [e.label for e in soft] == [1, 1, 0, 1, 0]  # the gold grade stays the label validation ranks by
    assert counts == {"mode": "soft", "distilled": 5, "kept": 4, "no_judge_score": 1, "disagree": 0, "relabelled": 0}


def test_a_bad_mode_or_score_is_refused_with_the_option_named():
    with pytest.raises(InputError, match="--distill-target must be one of"):
        distill_targets(EXAMPLES, "teacher")
    with pytest.raises(InputError, match="judge score must be in"):
        distill_targets([distilled(0, 1, 1.5)], "soft")
    # before any labels file is read: a typo does not cost minutes of reading
    with pytest.raises(InputError, match="--distill-target"):
        train_verifier("no-such-file.jsonl", distill_target="Soft")
    assert set(TARGETS) == {"gold", "judge", "agree", "soft"}


def test_the_judge_score_is_read_from_records_and_resolved_examples():
    record = {"recipe": "distill", "meta": {"judge": {"evidence": 0.8215, "read": "evidence"}}}
    assert judge_score(record) == pytest.approx(0.8215)
    assert judge_score({"recipe": "distill", "meta": {"judge": {"evidence": None, "errors": ["too long"]}}}) is None
    assert judge_score({"recipe": "swap"}) is None
    line = {"question": "q", "answer": "a", "passages": ["p"], "label": 1, "group": "nq:1", "judge": 0.4, "target": 0.4}
    e = example_from_json(line, "x:1")
    assert e.judge == e.target == 0.4
    for bad in (1.2, "0.5", True):
        with pytest.raises(InputError, match="`target` must be null or a number in"):
            example_from_json({**line, "target": bad}, "x:2")


def test_a_changed_value_negative_does_not_inherit_the_judge_of_the_answer_it_changed():
    soft, _ = distill_targets([distilled(0, 1, 0.9)], "soft")
    negatives = value_swap_negatives(soft, share=1.0)
    assert negatives and all(n.label == 0 and n.target is None and n.judge is None for n in negatives)


def test_a_soft_target_is_what_the_loss_reads(tmp_path, monkeypatch):
    """Targets equal to the labels train exactly as the labels do; the judge's own scores train
    otherwise, and the provenance says which target was used and what it kept."""
    import torch

    from tests.test_verifier_guard import guard_data
    from tests.test_verifier_joint import two_hop

    torch.set_num_threads(1)
    guard_data(tmp_path, monkeypatch)
    toy = [replace(two_hop(i // 2, "both" if i % 2 == 0 else "broken"), recipe="distill") for i in range(16)]

    def fit(judge, mode):
        examples = [replace(e, judge=judge(e)) for e in toy]
        v = train_verifier(
            "x", read=lambda _: iter(examples), distill_target=mode, verifier=TrainedVerifier(epochs=1, val_share=0.3)
        )
        return v.history_[0]["train_loss"], v

    gold_loss, gold = fit(lambda e: None, "gold")
    same_loss, same = fit(lambda e: float(e.label), "soft")
    judged_loss, judged = fit(lambda e: 0.5, "soft")
    assert same_loss == pytest.approx(gold_loss, rel=1e-5)
    assert abs(judged_loss - gold_loss) > 1e-3
    assert judged.provenance["distill_target"]["mode"] == "soft" and judged.provenance["distill_target"]["kept"] == 16
    assert "distill_target" in json.dumps(same.provenance) and gold.provenance["distill_target"]["mode"] == "gold"
    assert gold.fingerprints["data"] != judged.fingerprints["data"]  # what was learned differs, and says so
