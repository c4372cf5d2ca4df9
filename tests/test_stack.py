"""The stacked verifier (issue 27, item 5) on hand-written eval records: the feature table (one row
per generated answer, missing signals named or imputed), the logistic regression against
scikit-learn, cross-validation split by question group, the report beside each signal alone, the
JSON round trip and `verirag train stack RUN`. The tiny real run is in
tests/test_stack_run.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from verirag.errors import InputError
from verirag.learned.stack import StackedVerifier
from verirag.metrics.awf import pr_auc
from verirag.metrics.calibration import auroc
from verirag.records import ResultRecord, ResultStore
from verirag_lab.train.stack import BOOSTED, STACKED, out_of_fold, train_stack
from verirag_lab.train.stack_features import feature_table

NO_RETRIEVER = "no retriever scored the passages: they came with the question"


def records(n: int = 120, seed: int = 0, twins: bool = False, drop: dict | None = None) -> list[ResultRecord]:
    """An eval run's records: n answers of `vanilla`, each scored by vanilla+self_check and
    vanilla+verifier, with their signals. The label depends on the verifier's score and on
    self_check's through independent noise, so each carries something the other lacks. `twins`:
    questions come in pairs sharing a group (HotpotQA's twin examples). `drop`: {answer index:
    signal} removed from that answer's records."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        a, b = rng.normal(size=2)
        faithful = int(a + b + 0.5 * rng.normal() > 0)
        verifier = 1 / (1 + math.exp(-(a + rng.normal())))
        self_check = 1 / (1 + math.exp(-(b + rng.normal())))
        lp = -abs(rng.normal()) - 0.3 * (1 - faithful)
        values = {
            "logprob_min": lp * 3,
            "logprob_mean": lp,
            "logprob_sum": lp * 5,
            "k_precision": float(np.clip(0.7 + 0.1 * rng.normal(), 0, 1)),
        }
        missing = {"retrieval_top": NO_RETRIEVER, "retrieval_mean": NO_RETRIEVER}
        if drop and i in drop:
            for s in drop[i]:
                values.pop(s)
                missing[s] = "the backend gave no token log-probabilities for the answer"
        group = f"g{i // 2}" if twins else f"g{i}"
        for pred, score in (("self_check", self_check), ("verifier", verifier)):
            details = {
                "generator": "vanilla",
                "predictor": pred,
                "predictor_digest": f"{pred}-digest",
                "generation": f"generator:vanilla|m|{i:04d}",
                "model_fingerprint": "m-fp",
                "signals": {"values": values, "missing": missing},
            }
            spec = {
                "name": f"vanilla+{pred}",
                "label": f"vanilla+{pred}",
                "options": {"max_tokens": 24, **({"verifier": "v-dir"} if pred == "verifier" else {})},
            }
            out.append(
                ResultRecord(
                    dataset="toy",
                    model="m",
                    method=f"vanilla+{pred}",
                    example_id=f"q{i}",
                    question=f"question {i}?",
                    answer=f"answer {i}",
                    score=score,
                    hard=False,
                    answerable=1 if faithful or i % 3 else 0,
                    correct=faithful,
                    faithful=faithful,
                    group=group,
                    details=details,
                    method_spec=spec,
                )
            )
    return out


SIGNAL_COLUMNS = ["logprob_min", "logprob_mean", "logprob_sum", "k_precision"]


# ---- the feature table -----------------------------------------------------------------------------
def test_one_row_per_answer_with_every_column_the_run_has():
    recs = records(10)
    t = feature_table(recs)
    assert t.features == ["self_check", "verifier", *SIGNAL_COLUMNS]
    assert len(t.keys) == 10 and t.X.shape == (10, 6) and t.groups[3] == "toy:g3"
    by_key = {(r.example_id, r.method): r for r in recs}
    assert t.column("verifier")[4] == by_key[("q4", "vanilla+verifier")].score
    assert t.column("self_check")[4] == by_key[("q4", "vanilla+self_check")].score
    assert t.column("logprob_mean")[4] == recs[8].details["signals"]["values"]["logprob_mean"]
    assert t.y.tolist() == [r.faithful for r in recs[::2]]
    assert t.absent == {"retrieval_top": NO_RETRIEVER, "retrieval_mean": NO_RETRIEVER}
    assert t.sources["verifier"] == {
        "predictor": "verifier",
        "options": {"verifier": "v-dir"},
        "method": "vanilla+verifier",
        "digest": "verifier-digest",
    }
    assert t.model_fingerprint == "m-fp"


def test_a_missing_signal_is_named_or_imputed_never_dropped():
    recs = records(12, drop={5: ["logprob_min"]})
    with pytest.raises(
        InputError,
        match=r"logprob_min is missing for 1 of 12 answers \(first: toy\|m\|q5\|.*"
        r"no token log-probabilities.*--impute",
    ):
        feature_table(recs)
    t = feature_table(recs, impute=True)
    assert len(t.keys) == 12 and t.missing == {"logprob_min": 1} and np.isnan(t.column("logprob_min")[5])
    stack = StackedVerifier(t.features, impute=True).fit(t.X, t.y)
    assert stack.imputed_ == {"logprob_min": 1}
    # the imputed answer scores as if its logprob_min were the training mean
    row = t.X[5].copy()
    row[t.features.index("logprob_min")] = stack.mean_[t.features.index("logprob_min")]
    assert stack.predict_proba(t.X[5:6])[0] == pytest.approx(stack.predict_proba(row[None])[0])
    # or the feature is left out
    t = feature_table(recs, features=["verifier", "self_check", "k_precision"])
    assert t.features == ["verifier", "self_check", "k_precision"] and not t.missing


def test_a_predictor_missing_on_some_answers_is_named():
    recs = [r for r in records(8) if not (r.example_id == "q2" and r.method == "vanilla+self_check")]
    with pytest.raises(
        InputError, match="self_check is missing for 1 of 8.*no record of a method with predictor self_check"
    ):
        feature_table(recs)


def test_unknown_features_methods_and_absent_signals_are_clear_errors():
    recs = records(8)
    with pytest.raises(InputError, match=r"retrieval_top are not in this run \(retrieval_top: no retriever"):
        feature_table(recs, features=["verifier", "retrieval_top"])
    with pytest.raises(InputError, match="no method vanilla\\+nli"):
        feature_table(recs, methods=["vanilla+nli"])
    with pytest.raises(InputError, match="label must be one of"):
        feature_table(recs, label="judge")


def test_two_methods_with_one_predictor_need_a_choice():
    recs = records(6)
    other = [
        ResultRecord(**{**r.__dict__, "method": "vanilla+verifier-b"}) for r in recs if r.method == "vanilla+verifier"
    ]
    with pytest.raises(InputError, match="two methods score the same answers with predictor verifier.*--methods"):
        feature_table(recs + other)
    t = feature_table(recs + other, methods=["vanilla+self_check", "vanilla+verifier-b"])
    assert t.sources["verifier"]["method"] == "vanilla+verifier-b"


def test_unified_methods_are_counted_not_read_and_answers_must_agree():
    recs = records(6)
    intrinsic = ResultRecord(
        dataset="toy",
        model="m",
        method="intrinsic",
        example_id="q0",
        question="q",
        answer="x",
        score=1.0,
        hard=True,
        answerable=1,
        correct=1,
        faithful=1,
        details={"parse_ok": True},
    )
    assert feature_table(recs + [intrinsic]).ignored == {"intrinsic": 1}
    recs[1] = ResultRecord(**{**recs[1].__dict__, "answer": "another answer"})
    with pytest.raises(InputError, match="disagree on the answer"):
        feature_table(recs)


def test_several_models_need_a_choice():
    recs = records(6) + [ResultRecord(**{**r.__dict__, "model": "m2"}) for r in records(6)]
    with pytest.raises(InputError, match="several models.*--model"):
        feature_table(recs)
    assert len(feature_table(recs, model="m2").keys) == 6


# ---- the model --------------------------------------------------------------------------------------
def test_the_stack_is_scikit_learns_logistic_regression_on_standardised_features():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    t = feature_table(records(80))
    stack = StackedVerifier(t.features, C=0.5).fit(t.X, t.y)
    ref = make_pipeline(StandardScaler(), LogisticRegression(C=0.5, max_iter=1000)).fit(t.X, t.y)
    np.testing.assert_allclose(stack.predict_proba(t.X), ref.predict_proba(t.X)[:, 1], atol=1e-6)
    np.testing.assert_allclose(stack.coef_, ref[-1].coef_[0], rtol=1e-5)
    np.testing.assert_allclose(stack.mean_, ref[0].mean_) and np.testing.assert_allclose(stack.scale_, ref[0].scale_)
    one = dict(zip(t.features, t.X[7]))
    assert stack.score(one) == pytest.approx(stack.predict_proba(t.X[7:8])[0])
    with pytest.raises(InputError, match="needs verifier, which this answer lacks"):
        stack.score({k: v for k, v in one.items() if k != "verifier"})


def test_cross_validation_holds_out_whole_question_groups():
    t = feature_table(records(60, twins=True))
    p, splits = out_of_fold(t, folds=4, seed=3)
    groups = np.asarray(t.groups)
    assert sorted(np.concatenate([test for _, test in splits]).tolist()) == list(range(60))
    for train, test in splits:
        assert not set(groups[train]) & set(groups[test])  # twins never straddle a split
        manual = StackedVerifier(t.features).fit(t.X[train], t.y[train]).predict_proba(t.X[test])
        np.testing.assert_allclose(p[STACKED][test], manual)
    assert not np.isnan(p[BOOSTED]).any()


def test_the_report_measures_the_stack_beside_each_signal_alone():
    t = feature_table(records(300, seed=1))
    r = train_stack(t, folds=5, seed=0, n_resamples=300)
    rows = r.report["rows"]
    assert set(rows) == {STACKED, BOOSTED, *t.features}
    for f in t.features:  # each signal alone: its raw value as the score
        x = t.column(f)
        assert rows[f]["auroc"] == pytest.approx(auroc(x, t.y))
        assert rows[f]["pr_auc"] == pytest.approx(pr_auc(x, t.y, t.answerable, strict=False))
        assert rows[f]["auroc_low"] <= rows[f]["auroc"] <= rows[f]["auroc_high"]
        assert rows[f]["gain_auroc"] == pytest.approx(rows[STACKED]["auroc"] - rows[f]["auroc"])
    oof = r.out_of_fold[STACKED]
    assert rows[STACKED]["auroc"] == pytest.approx(auroc(oof, t.y))
    # the label needs both scores: the stack ranks better than either, paired interval above 0
    for f in ("verifier", "self_check"):
        assert rows[f]["gain_auroc_low"] > 0, (f, rows[f])
    assert r.report["answers"] == 300 and r.report["groups"] == 300 and set(r.report["weights"]) == set(t.features)
    assert r.report["weights"]["verifier"] > 0 and r.report["weights"]["self_check"] > 0


def test_one_label_in_a_training_fold_is_a_clear_error():
    recs = records(10)
    for r in recs:
        r.faithful = 1 if r.example_id != "q0" else 0
    with pytest.raises(InputError, match="all of one label"):
        train_stack(feature_table(recs), folds=5, n_resamples=10)


# ---- saved form and the command ---------------------------------------------------------------------
def test_json_round_trip_refuses_another_model(tmp_path):
    t = feature_table(records(60))
    r = train_stack(t, folds=3, n_resamples=50)
    path = r.stack.save(tmp_path / "stack.json", **r.provenance)
    text = path.read_text()
    saved = json.loads(text)
    assert saved["format"] == "verirag.learned.stacked_verifier/2" and "pickle" not in text
    assert saved["settings"]["features"] == t.features and saved["settings"]["sources"]["self_check"]["digest"]
    assert saved["fingerprints"] == {"model": "m-fp", "data": t.data_fingerprint}
    assert saved["provenance"]["cv"]["rows"]["stacked"]["auroc"] == pytest.approx(r.report["rows"][STACKED]["auroc"])
    back = StackedVerifier.load(path, expect={"model": "m-fp"})
    np.testing.assert_array_equal(back.predict_proba(t.X), r.stack.predict_proba(t.X))
    with pytest.raises(InputError, match="fitted for model 'm-fp'.*verirag train stack"):
        StackedVerifier.load(path, expect={"model": "another"})
    saved["state"]["coef_"] = saved["state"]["coef_"][:2]
    path.write_text(json.dumps(saved))
    with pytest.raises(InputError, match="malformed stacked verifier"):
        StackedVerifier.load(path)


def test_train_stack_command(tmp_path, capsys):
    from verirag.cli import main

    run = tmp_path / "run"
    store = ResultStore(run)
    for rec in records(60):
        store.append(rec)
    out = tmp_path / "stack.json"
    assert (
        main(
            [
                "train",
                "stack",
                str(run),
                "--out",
                str(out),
                "--folds",
                "3",
                "--resamples",
                "50",
                "--c",
                "0.5",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "not in this run: retrieval_top" in text
    for name in ("stacked", "gradient", "self_check", "verifier", "k_precision", "logprob_sum"):
        assert name in text
    stack = StackedVerifier.load(out)
    assert stack.provenance["command"] == "verirag train stack" and stack.provenance["run"] == str(run)
    assert stack.C == 0.5 and stack.provenance["cv"]["folds"] == 3
    # the old spelling names the new command instead of training a cross-encoder on a run folder
    assert main(["train", "verifier", str(tmp_path / "labels.jsonl"), "--stack", str(run), "--out", str(out)]) == 2
    assert "verirag train stack" in capsys.readouterr().err
    assert main(["train", "stack", str(tmp_path / "nothing"), "--out", str(out)]) != 0
    assert "holds no eval records" in " ".join(capsys.readouterr().err.split())  # the console wraps lines


def test_scores_of_two_predictor_identities_are_not_mixed():
    recs = records(6)
    recs[1].details = {**recs[1].details, "predictor_digest": "retrained"}  # q0's verifier record
    with pytest.raises(InputError, match="verifier scores come from two different predictors"):
        feature_table(recs)
