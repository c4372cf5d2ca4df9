"""A stack of the trained verifier with the generator's own signals, fitted on `distill` labels (the
pipeline's answers to training questions; issue 47): the table scores each answer with a real
trained verifier (`warm`, which never read a distilled answer), keeps the signals the labels recorded, refuses another model build and labels
without signals, and the saved stack is one `vanilla+stacked(stack=FILE)` applies to that model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_verifier_labels import write_data
from test_verifier_labels_distill import model, run

from verirag.awf.compose import build_predictor
from verirag.awf.generators.base import Answer
from verirag.conversation import in_context
from verirag.errors import InputError
from verirag.types import Generation, Passage, TokenLogprob
from verirag_lab.train.guard import TrainingGuard
from verirag_lab.train.stack_labels import DEFAULT_FEATURES, JUDGE_FEATURE, label_table, train_stack_from_labels
from verirag_lab.train.verifier_labels import read_records, resolve


@pytest.fixture(scope="module", autouse=True)
def unfolded_verifier():
    """A verifier that never read a distilled answer as the shipped one (`warm`, shipped until
    2026-12-01): the shipped verifier learned from the distillation, and a stack over distillation
    answers refuses it unless cross-fitted (tests/test_cross_fit.py)."""
    from pathlib import Path

    from verirag.learned.shipped import VERIFIER_ENV

    warm = Path(__file__).resolve().parents[1] / "data" / "verifier" / "candidates" / "warm"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(VERIFIER_ENV, str(warm))
        yield warm


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """(labels file, data, the scripted model that made them: log-probabilities -0.4 a word)."""
    tmp = tmp_path_factory.mktemp("stack-labels")
    data = write_data(tmp / "data")
    llm = model(logprob=-0.4)
    llm.logprobs_assured = True  # the generator asks a backend for log-probabilities only where they are assured
    r = run(tmp, data, llm, datasets=["nq", "hotpotqa"])
    assert r.written and not r.failed
    return tmp / "labels.jsonl", data, llm


def fit_stack(path, out, data, llm, **kw):
    """`train_stack_from_labels` on the fixture. Under the data's guard: the fixture labels held-out
    questions on purpose (every split), and the verifier's guard (its refusals: tested below) would
    leave too few answers for cross-validation."""
    return train_stack_from_labels(
        path,
        out,
        data_root=data,
        folds=2,
        resamples=50,
        llm_loader=lambda _m: llm,
        guard=TrainingGuard.for_data(data),
        **kw,
    )


def test_the_table_scores_each_answer_with_the_verifier_and_keeps_its_signals(labelled):
    path, data, llm = labelled
    records = read_records(path)
    table = label_table(records, data, model_fingerprint=llm.fingerprint)
    made = [r for r in records if "skip" not in r]
    assert table.features == list(DEFAULT_FEATURES) and table.X.shape == (len(made), len(DEFAULT_FEATURES))
    assert np.isfinite(table.X).all() and table.keys == [r["id"] for r in made]
    assert table.y.tolist() == [r["label"] for r in made]
    assert table.answerable.tolist() == [int(bool(r["meta"]["evidence"])) for r in made]
    assert (table.column("logprob_mean") == -0.4).all() and (table.column("logprob_sum") < 0).all()
    # the verifier column is the shipped verifier's score of the answer over the label's passages
    shipped = build_predictor("verifier", None)
    e = resolve([made[0]], data)[0]
    again = shipped.verify(e.question, e.answer, [Passage(str(i), t) for i, t in enumerate(e.passages)])
    assert table.column("verifier")[0] == pytest.approx(again.score)
    # a follow-up's answer is verified in its conversation, as `ask` verifies it
    i = next(i for i, r in enumerate(made) if r["meta"]["condition"] == "followup")
    e = resolve([made[i]], data)[0]
    passages = [Passage(str(j), t) for j, t in enumerate(e.passages)]
    assert e.history and table.column("verifier")[i] == pytest.approx(
        shipped.verify(in_context(e.question, e.history), e.answer, passages).score
    )
    assert table.sources["verifier"]["digest"] == shipped.digest and table.model_fingerprint == llm.fingerprint
    groups = set(table.groups)
    assert len(groups) < len(table.groups)  # a question's two answers share a group (folds never split them)


def test_labels_without_signals_are_counted_and_another_build_is_refused(labelled):
    path, data, llm = labelled
    records = read_records(path)
    made = [r for r in records if "skip" not in r]
    old = json.loads(json.dumps(made[0]))
    old["id"] += "/old"
    del old["meta"]["signals"]
    table = label_table([*records, old], data, model_fingerprint=llm.fingerprint, features=["logprob_mean"])
    assert len(table.y) == len(made) and "1 distill records made before" in table.absent["without_signals"]
    with pytest.raises(InputError, match="fingerprint"):
        label_table(records, data, model_fingerprint="ffff" + llm.fingerprint)
    with pytest.raises(InputError, match="no distill record with the answer's signals"):
        label_table([old], data, model_fingerprint=llm.fingerprint)
    lacking = json.loads(json.dumps(made[1]))
    del lacking["meta"]["signals"]["logprob_min"]
    with pytest.raises(InputError, match="have no logprob_min"):
        label_table([made[0], lacking], data, model_fingerprint=llm.fingerprint)


def test_the_guard_leaves_out_a_record_of_a_held_out_question_and_counts_it(labelled):
    from verirag_lab.train.verifier_labels.heldout_index import HELD_QUESTION, group_reason

    path, data, llm = labelled
    records = read_records(path)
    made = [r for r in records if "skip" not in r]
    held_id = next(i for i in (f"{n}" for n in range(1000)) if group_reason(f"{made[0]['dataset']}:{i}"))
    held = {**made[0], "id": "held-record", "example": held_id}  # a question of the held-out bucket
    guard = TrainingGuard.for_verifier(data)
    table = label_table([*records, held], data, model_fingerprint=llm.fingerprint, guard=guard)
    # this fixture labels every split, and some of its ids are committed own-answer groups: those go too
    assert "held-record" not in table.keys and guard.refused[HELD_QUESTION] >= 1
    assert len(table.keys) + sum(guard.refused.values()) == len(made) + 1
    assert set(table.keys) < {r["id"] for r in made}


def test_train_stack_uses_the_verifiers_guard_unless_given_one(labelled, tmp_path, monkeypatch):
    path, data, llm = labelled
    built = []

    def for_verifier(root, *args, **kw):
        built.append(root)
        return TrainingGuard.for_data(root)  # this fixture's held-out questions would leave too few answers

    monkeypatch.setattr(TrainingGuard, "for_verifier", staticmethod(for_verifier))
    train_stack_from_labels(path, tmp_path / "s.json", data_root=data, folds=2, resamples=20, llm_loader=lambda _m: llm)
    assert built == [data]


def test_a_stack_fitted_on_labels_is_applied_by_the_stacked_predictor(labelled, tmp_path):
    path, data, llm = labelled
    out = tmp_path / "stack.json"
    result = fit_stack(path, out, data, llm)
    assert result.report["answers"] == len(result.out_of_fold["stacked"]) and set(result.report["weights"]) == set(
        DEFAULT_FEATURES
    )
    saved = json.loads(out.read_text())
    assert saved["provenance"]["labels"] == str(path) and saved["provenance"]["refused_as_evaluation_data"] == {}
    stacked = build_predictor("stacked", llm, options={"stack": str(out)})
    # the stacked predictor computes the signals of a fresh answer of this model, as at answer time
    gen = Generation(text="Mara Quill", tokens=[TokenLogprob("Mara", -0.4), TokenLogprob(" Quill", -0.4)])
    v = stacked.verify_answer(
        "Who designed the Tallbridge lighthouse?",
        Answer(text="Mara Quill", generation=gen),
        [Passage("p", "The Tallbridge lighthouse was designed by Mara Quill in 1899.")],
    )
    assert v.ok and 0.0 <= v.score <= 1.0, v.error


def test_the_command_takes_a_labels_file_and_refuses_options_of_eval_runs(labelled, tmp_path, capsys):
    from verirag.cli import main

    path, _, _ = labelled
    out = tmp_path / "s.json"
    assert main(["train", "stack", str(path), "--out", str(out), "--methods", "vanilla+verifier"]) != 0
    assert "are for eval runs" in " ".join(capsys.readouterr().err.split())
    for option in ("--verifier", "--cross-fit"):
        assert main(["train", "stack", str(tmp_path), "--out", str(out), option, "v"]) != 0
        assert "--verifier and --cross-fit are for a labels file" in " ".join(capsys.readouterr().err.split())
    assert not out.exists()


def _answers_a_question(stacked) -> None:
    """The stacked predictor judges an answer with its generation's log-probabilities: a score, no warning."""
    gen = Generation(text="Mara Quill", tokens=[TokenLogprob("Mara", -0.4), TokenLogprob(" Quill", -0.4)])
    v = stacked.verify_answer(
        "Who designed the Tallbridge lighthouse?",
        Answer(text="Mara Quill", generation=gen),
        [Passage("p", "The Tallbridge lighthouse was designed by Mara Quill in 1899.")],
    )
    assert v.ok and 0.0 <= v.score <= 1.0 and not v.warnings, (v.error, v.warnings)


def test_the_judges_score_is_a_feature_the_stacked_predictor_rebuilds(labelled, tmp_path):
    """`nli_evidence`: the distillation's judge (nli over the verifier's evidence) as a column, read from
    the labels (no model call), whose source the stacked predictor rebuilds on the same model."""
    path, data, llm = labelled
    records = read_records(path)
    made = [r for r in records if "skip" not in r]
    features = [*DEFAULT_FEATURES, JUDGE_FEATURE]
    table = label_table(records, data, model_fingerprint=llm.fingerprint, features=features)
    judged = [r["meta"]["judge"]["evidence"] for r in made]
    assert table.column(JUDGE_FEATURE).tolist() == [0.0 if s is None else s for s in judged]
    judge = build_predictor("nli", llm, options={"premise": "evidence"})
    assert table.sources[JUDGE_FEATURE] == {
        "predictor": "nli",
        "options": {"premise": "evidence"},
        "method": "vanilla+nli(premise=evidence)",
        "digest": judge.digest,
    }
    # an answer the judge could not score counts 0; answers of two judges are refused
    failed = json.loads(json.dumps(made[0]))
    failed["meta"]["judge"]["evidence"] = None
    assert label_table([failed], data, model_fingerprint=llm.fingerprint, features=[JUDGE_FEATURE]).X[0, 0] == 0.0
    other = json.loads(json.dumps(made[1]))
    other["meta"]["judge"]["digest"] = "0000"
    with pytest.raises(InputError, match="one judge"):
        label_table([made[0], other], data, model_fingerprint=llm.fingerprint, features=[JUDGE_FEATURE])
    out = tmp_path / "judged.json"
    fit_stack(path, out, data, llm, features=features)
    stacked = build_predictor("stacked", llm, options={"stack": str(out)})
    assert set(stacked.parts) == {"verifier", JUDGE_FEATURE}
    _answers_a_question(stacked)


def test_the_llm_judge_is_a_feature_and_answers_made_before_it_are_left_out(labelled, tmp_path):
    """`llm_judge`: `vanilla+llm_judge`'s judge, which the distillation asks right after each answer
    (since 2026-11-29), as a column whose source the stacked predictor rebuilds; records made before
    it was asked are left out of a stack that reads it, and counted."""
    path, data, llm = labelled
    records = read_records(path)
    made = [r for r in records if "skip" not in r]
    older = json.loads(json.dumps(made[0]))
    for key in ("llm_judge", "llm_judge_digest"):
        del older["meta"]["judge"][key]
    features = ["verifier", "llm_judge"]
    table = label_table([older, *made[1:]], data, model_fingerprint=llm.fingerprint, features=features)
    assert table.keys == [r["id"] for r in made[1:]]
    assert table.absent == {"without_llm_judge": "1 distill records made before llm_judge was recorded"}
    assert table.column("llm_judge").tolist() == [r["meta"]["judge"]["llm_judge"] for r in made[1:]]
    judge = build_predictor("llm_judge", llm)
    assert table.sources["llm_judge"] == {
        "predictor": "llm_judge",
        "options": {},
        "method": "vanilla+llm_judge",
        "digest": judge.digest,
    }
    with pytest.raises(InputError, match="no distill record was judged by llm_judge"):
        label_table([older], data, model_fingerprint=llm.fingerprint, features=features)
    out = tmp_path / "llm-judged.json"
    fit_stack(path, out, data, llm, features=features)
    stacked = build_predictor("stacked", llm, options={"stack": str(out)})
    assert set(stacked.parts) == {"verifier", "llm_judge"}
    _answers_a_question(stacked)
    assert any("fully supported by the documents" in p[-1]["content"] for p in llm.prompts[-3:])


def test_a_verifier_that_learned_from_the_distillation_is_refused_for_the_stack(labelled, tmp_path):
    import shutil

    from verirag.learned import shipped
    from verirag.learned.shipped import META_FILE, shipped_verifier_dir
    from verirag_lab.train.stack_labels import verifier_learned_from_distillation

    path, data, llm = labelled
    assert verifier_learned_from_distillation(None) == 0  # `warm`, the default here, never read a distilled answer
    assert verifier_learned_from_distillation(str(shipped.SHIPPED_VERIFIER)) > 0  # the one shipped today did
    taught = tmp_path / "taught"
    shutil.copytree(shipped_verifier_dir(), taught)
    meta = json.loads((taught / META_FILE).read_text(encoding="utf-8"))
    meta["provenance"]["label_summary"]["recipes"]["distill"] = {"examples": 12, "supported": 5}
    (taught / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    assert verifier_learned_from_distillation(str(taught)) == 12
    with pytest.raises(InputError, match="in-sample"):
        train_stack_from_labels(
            path, tmp_path / "s.json", data_root=data, verifier=str(taught), llm_loader=lambda _m: llm
        )
    assert not (tmp_path / "s.json").exists()
