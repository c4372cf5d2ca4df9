"""Cross-fitting the stack (issue 47, item 7): the distillation's question groups fall into folds by a
stable hash; a fold verifier holds one fold out (every example of its groups, any recipe) before
sampling; `verirag train stack --cross-fit` checks the fold verifiers and scores each answer with the
one that never saw its question, while the stack names the verifier read at answer time."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import pytest
from test_stack_labels import labelled  # noqa: F401  (the fixture: a scripted model's distill labels)

from verirag.awf.compose import build_predictor
from verirag.errors import InputError
from verirag.learned.shipped import META_FILE, shipped_verifier_dir
from verirag.types import Passage
from verirag_lab.train.cross_fit import PROVENANCE_KEY, fold_of, fold_verifiers, hold_out_fold
from verirag_lab.train.guard import TrainingGuard
from verirag_lab.train.stack_labels import label_table, train_stack_from_labels
from verirag_lab.train.verifier import read_examples
from verirag_lab.train.verifier_labels import read_records, resolve


@dataclass(frozen=True)
class Ex:
    group: str
    recipe: str


def test_a_groups_fold_is_stable_and_the_folds_are_about_even():
    groups = [f"nq:{i}" for i in range(2000)]
    first = [fold_of(g, 2) for g in groups]
    assert first == [fold_of(g, 2) for g in groups]  # no per-process salt (Python's hash has one)
    assert 0.45 < sum(first) / len(first) < 0.55
    assert {fold_of(g, 3) for g in groups} == {0, 1, 2}
    with pytest.raises(InputError, match="at least 2 folds"):
        fold_of("nq:1", 1)


def test_holding_out_a_fold_drops_every_example_of_its_distillation_groups():
    distilled = [Ex(f"hotpotqa:{i}", "distill") for i in range(40)]
    held = {e.group for e in distilled if fold_of(e.group, 2) == 0}
    replay_of_held = [Ex(g, "real") for g in sorted(held)[:3]]  # the replay may hold the same question
    other = [Ex("nq:x", "swap"), Ex("nq:y", "real")]
    kept, record = hold_out_fold(distilled + replay_of_held + other, fold=0, folds=2)
    assert not {e.group for e in kept} & held
    assert set(other) <= set(kept) and all(fold_of(e.group, 2) == 1 for e in kept if e.recipe == "distill")
    assert record == {"fold": 0, "folds": 2, "groups": len(held), "examples": len(held) + 3}
    with pytest.raises(InputError, match="--distill-fold"):
        hold_out_fold(distilled, fold=2, folds=2)


def test_the_fold_is_held_out_before_sampling():
    examples = [Ex(f"nq:{i}", "distill") for i in range(100)]
    held_out = {"fold": 1, "folds": 2}
    kept = read_examples(["x"], max_examples=30, read=lambda _p: examples, held_out=held_out)
    # 30 drawn from the other fold's groups, not 30 drawn first and then thinned
    assert len(kept) == 30 and all(fold_of(e.group, 2) == 0 for e in kept)
    assert held_out["examples"] == sum(fold_of(e.group, 2) == 1 for e in examples)


def _copy_verifier(to, *, held=None, distilled=0, temperature=None):
    shutil.copytree(shipped_verifier_dir(), to)
    meta = json.loads((to / META_FILE).read_text(encoding="utf-8"))
    if held is not None:
        meta["provenance"][PROVENANCE_KEY] = held
    if distilled:
        meta["provenance"]["label_summary"]["recipes"]["distill"] = {"examples": distilled, "supported": 1}
    if temperature is not None:
        meta["state"]["temperature_"] = temperature  # other scores from the same layers
    (to / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    return str(to)


def test_fold_verifiers_are_checked_and_put_in_fold_order(tmp_path):
    f0 = _copy_verifier(tmp_path / "f0", held={"fold": 0, "folds": 2, "groups": 5, "examples": 9})
    f1 = _copy_verifier(tmp_path / "f1", held={"fold": 1, "folds": 2, "groups": 5, "examples": 9})
    assert fold_verifiers([f1, f0]).dirs == (f0, f1)
    with pytest.raises(InputError, match="held no fold"):
        fold_verifiers([f0, str(shipped_verifier_dir())])
    with pytest.raises(InputError, match="one per fold"):
        fold_verifiers([f0])
    twice = _copy_verifier(tmp_path / "twice", held={"fold": 0, "folds": 2, "groups": 5, "examples": 9})
    with pytest.raises(InputError, match="each of 0..1 once"):
        fold_verifiers([f0, twice])


def test_a_cross_fitted_stack_scores_each_answer_with_the_verifier_that_never_saw_it(labelled, tmp_path):
    path, data, llm = labelled
    taught = _copy_verifier(tmp_path / "taught", distilled=12)  # learned from these answers: alone, refused
    f0 = _copy_verifier(tmp_path / "f0", held={"fold": 0, "folds": 2, "groups": 1, "examples": 1})
    f1 = _copy_verifier(tmp_path / "f1", held={"fold": 1, "folds": 2, "groups": 1, "examples": 1}, temperature=4.0)
    with pytest.raises(InputError, match="in-sample"):
        train_stack_from_labels(path, tmp_path / "s.json", data_root=data, verifier=taught, llm_loader=lambda _m: llm)
    train_stack_from_labels(  # the data's guard: this fixture labels held-out questions on purpose
        path,
        tmp_path / "s.json",
        data_root=data,
        verifier=taught,
        cross_fit=[f1, f0],
        llm_loader=lambda _m: llm,
        guard=TrainingGuard.for_data(data),
    )
    saved = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    source = saved["settings"]["sources"]["verifier"]
    assert source["options"] == {"verifier": taught}  # the one the stack reads at answer time
    assert source["digest"] == build_predictor("verifier", None, options={"verifier": taught}).digest
    assert [f["verifier"] for f in source["cross_fit"]] == [f0, f1]

    records = read_records(path)
    table = label_table(records, data, model_fingerprint=llm.fingerprint, cross_fit=fold_verifiers([f0, f1]))
    examples = resolve([r for r in records if "skip" not in r], data)
    assert {fold_of(e.group, 2) for e in examples} == {0, 1}  # the fixture's questions fall in both folds
    scorers = {k: build_predictor("verifier", None, options={"verifier": f}) for k, f in enumerate([f0, f1])}
    column = table.column("verifier")
    checked = 0
    for i, e in enumerate(examples):
        if e.history:
            continue  # a follow-up is scored in its conversation (the stack's own test checks that)
        passages = [Passage(str(j), t) for j, t in enumerate(e.passages)]
        want = scorers[fold_of(e.group, 2)].verify(e.question, e.answer, passages).score
        assert column[i] == pytest.approx(want, abs=1e-5)  # batched float32 against one at a time
        checked += 1
    assert checked and sum(f["answers"] for f in table.sources["verifier"]["cross_fit"]) == len(examples)
