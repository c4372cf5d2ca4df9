"""The threshold controller (fit / threshold_ / certified_ / decide / keep), Learn then Test,
threshold files (old ones too), and the uncertified path through policies, pipeline and CLI."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.stats

from verirag.errors import InputError, NotFittedError
from verirag.learned import threshold as ltt
from verirag.learned.threshold import (
    ACT,
    ANSWER,
    ThresholdController,
    as_controller,
    cross_fit_target,
    parse_threshold,
    precision_guarantee_threshold,
)


def simulate(n, rng):
    """Scores whose correctness probability grows with the score: P(correct | s) = s."""
    s = rng.uniform(0, 1, n)
    return s, (rng.uniform(0, 1, n) < s).astype(int)


# --------------------------------------------------------------------------- the controller
def test_constructors():
    assert ThresholdController(value=0.3).kind == "value"
    assert as_controller(0.3).threshold_ == 0.3 and as_controller(0.3).decide(0.3) == ANSWER
    for bad in (
        {},
        {"value": 0.5, "precision": 0.9},
        {"precision": 1.0},
        {"action_rate": 1.5},
        {"precision": 0.9, "method": "holm"},
        {"precision": 0.9, "delta": 0.0},
    ):
        with pytest.raises(ValueError):
            ThresholdController(**bad)


def test_fixed_value_is_fitted_and_certified():
    c = ThresholdController(value=0.4)
    assert c.fitted and c.certified_ and c.threshold_ == 0.4 and float(c) == 0.4
    assert c.fit([0.1, 0.5, 0.9, math.nan]) is c
    assert c.n_fit_ == 4 and c.fit_action_rate_ == 0.5
    assert c.decide(0.4) == ANSWER and c.decide(0.39) == ACT and c.decide(math.nan) == ACT
    assert c.decide(None) == ACT


def test_certified_precision_target():
    rng = np.random.default_rng(0)
    s, y = simulate(2000, rng)
    c = ThresholdController(precision=0.8, delta=0.1).fit(s, y)
    assert c.certified_ and 0.6 <= c.threshold_ < 1.0  # exact: 0.6 (conservative)
    assert c.n_fit_ == 2000 and c.result_.valid and c.result_.threshold == c.threshold_
    assert c.fit_action_rate_ == pytest.approx((s < c.threshold_).mean())
    held_s, held_y = simulate(20000, rng)
    assert held_y[c.keep(held_s)].mean() >= 0.8


def test_uncertified_precision_target_acts_on_everything():
    c = ThresholdController(precision=0.9).fit([0.5] * 20, [0, 1] * 10)
    assert c.fitted and not c.certified_ and c.threshold_ is None and not c.result_.valid
    assert c.fit_action_rate_ == 1.0
    assert c.decide(1.0) == ACT and c.decide(0.0) == ACT
    assert not c.keep([0.0, 0.5, 1.0, math.nan]).any()
    with pytest.raises(ValueError, match="not certified"):
        float(c)
    assert "not certified" in repr(c)


def test_precision_target_needs_labels_and_nan_counts_as_zero():
    with pytest.raises(ValueError, match="labels"):
        ThresholdController(precision=0.8).fit([0.5, 0.6])
    s = np.r_[np.full(200, 0.9), np.full(50, math.nan)]
    y = np.r_[np.ones(200, int), np.zeros(50, int)]
    c = ThresholdController(precision=0.9).fit(s, y)
    assert c.certified_ and 0 < c.threshold_ <= 0.9 and c.decide(math.nan) == ACT


def test_action_rate():
    rng = np.random.default_rng(1)
    s = rng.uniform(0, 1, 1000)
    c = ThresholdController(action_rate=0.2).fit(s)
    assert c.certified_ and c.fit_action_rate_ == pytest.approx(0.2, abs=0.001)
    assert (~c.keep(s)).mean() == c.fit_action_rate_ <= 0.2
    # ties are answered; NaN always acts and uses up the budget first
    assert ThresholdController(action_rate=0.5).fit([0.3, 0.3, 0.3, 0.9]).fit_action_rate_ == 0.0
    c2 = ThresholdController(action_rate=0.5).fit([math.nan, 0.1, 0.2, 0.3])
    assert c2.threshold_ == 0.2 and c2.fit_action_rate_ == 0.5
    # a rate of 1 acts on everything, and that meets the target
    c3 = ThresholdController(action_rate=1.0).fit([0.2, 0.9])
    assert c3.certified_ and c3.threshold_ == math.inf and not c3.keep([0.2, 0.9, 1.0]).any()


def test_decide_and_keep_agree():
    rng = np.random.default_rng(3)
    s = np.r_[rng.uniform(0, 1, 50), math.nan]
    c = ThresholdController(action_rate=0.3).fit(s)
    keep = c.keep(s)
    assert keep.dtype == bool and keep.shape == s.shape
    assert [c.decide(x) for x in s] == [ANSWER if k else ACT for k in keep]
    assert c.keep(s.reshape(1, -1)).shape == (1, s.size)


def test_unfitted_controller_refuses_to_decide():
    c = ThresholdController(precision=0.9)
    assert not c.fitted
    for f in (lambda: c.decide(0.5), lambda: c.keep([0.5]), lambda: float(c)):
        with pytest.raises(NotFittedError, match="ThresholdController is not fitted.*verirag calibrate"):
            f()


def test_saved_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    s, y = simulate(500, rng)
    for c in (
        ThresholdController(value=0.5),
        ThresholdController(precision=0.7, delta=0.05).fit(s, y),
        ThresholdController(precision=0.99, method="fixed_sequence").fit(s[:20], y[:20]),
        ThresholdController(action_rate=0.25).fit(s),
        ThresholdController(action_rate=1.0).fit(s),
    ):
        back = ThresholdController.load(c.save(tmp_path / "t.json"))
        assert back.settings() == c.settings() and back.certified_ == c.certified_
        assert back.threshold_ == c.threshold_ and back.keep(s).tolist() == c.keep(s).tolist()
    unc = ThresholdController(precision=0.99, method="fixed_sequence").fit(s[:20], y[:20])
    state = json.loads(unc.save(tmp_path / "u.json").read_text())["state"]
    assert state["threshold_"] is None and state["certified_"] is False


# --------------------------------------------------------------------------- cross-fitting
def test_cross_fit_uncertified_folds_keep_nothing():
    rng = np.random.default_rng(5)
    s, y = simulate(300, rng)
    assert not cross_fit_target(ThresholdController(precision=0.8), s, np.zeros(300, int)).any()
    # certified on some folds only: the uncertified folds keep nothing, the others keep s >= t
    y2 = y.copy()
    y2[:60] = 0
    kept = cross_fit_target(ThresholdController(precision=0.8), s, y2, n_folds=5, seed=0)
    from verirag.learned.threshold import kfold_indices

    for train, test in kfold_indices(300, 5, seed=0):
        t = ThresholdController(precision=0.8).fit(s[train], y2[train])
        assert kept[test].tolist() == t.keep(s[test]).tolist()


# --------------------------------------------------------------------------- Learn then Test
def test_ltt_moved_out_of_metrics():
    import verirag.metrics as metrics
    import verirag.metrics.stats as stats

    assert not hasattr(metrics, "precision_guarantee_threshold")
    assert not hasattr(stats, "precision_guarantee_threshold")
    assert precision_guarantee_threshold is ltt.precision_guarantee_threshold


def test_precision_threshold_basic():
    # scores above .5 are right 95% of the time, below .5 right 30%
    rng = np.random.default_rng(0)
    s = rng.random(4000)
    y = np.where(s >= 0.5, rng.random(4000) < 0.95, rng.random(4000) < 0.3).astype(int)
    r = precision_guarantee_threshold(s, y, target_precision=0.9, delta=0.1)
    assert r.method == "bonferroni" and r.valid and 0.4 <= r.threshold <= 0.6
    assert r.calibration_precision >= 0.9
    # fixed sequence from a grid that starts where examples are selected
    f = precision_guarantee_threshold(
        s, y, target_precision=0.9, delta=0.1, grid=np.linspace(0, 0.8, 81), method="fixed_sequence"
    )
    assert f.valid and 0.4 <= f.threshold <= r.threshold
    assert f.rejected[:5].all()
    # ... from 1.0 nothing is selected at the top: the sequence stops at once
    top = precision_guarantee_threshold(s, y, 0.9, 0.1, method="fixed_sequence")
    assert not top.valid and top.threshold is None
    none = precision_guarantee_threshold(s, np.zeros_like(y), target_precision=0.9)
    assert not none.valid and none.threshold is None and math.isnan(none.calibration_precision)
    with pytest.raises(ValueError):
        precision_guarantee_threshold(s * 3, y, 0.9)


def test_ltt_pvalues_equal_scipy_binomtest():
    """The per-grid-point p-values against a loop over scipy.stats.binomtest (the reference)."""
    rng = np.random.default_rng(6)
    s = np.round(rng.random(120), 2)
    y = (rng.random(120) < s).astype(int)
    grid = np.linspace(0, 1, 11)
    r = precision_guarantee_threshold(s, y, 0.7, 0.1, grid=grid)
    for t, p, n in zip(r.grid, r.p_values, r.n_selected):
        sel = s >= t
        assert n == sel.sum()
        want = (
            1.0 if n == 0 else scipy.stats.binomtest(int((y[sel] == 0).sum()), int(n), 0.3, alternative="less").pvalue
        )
        assert p == pytest.approx(want, rel=1e-9, abs=1e-12)
    certified = [t for t, p in zip(r.grid, r.p_values) if p <= 0.1 / len(grid)]
    assert r.threshold == (min(certified) if certified else None)


def test_precision_threshold_guarantee_by_simulation():
    """P(true precision at the chosen threshold < target) <= delta (with a little slack)."""
    rng = np.random.default_rng(2)
    target, delta, n, reps = 0.8, 0.1, 300, 300
    grid = np.linspace(0, 1, 21)
    # P(y = 1 | s) = s, s ~ U(0, 1): precision(t) = E[s | s >= t] = (1 + t) / 2
    true_prec = lambda t: (1 + t) / 2 if t < 1 else 1.0  # noqa: E731
    fails = 0
    for _ in range(reps):
        s = rng.random(n)
        y = (rng.random(n) < s).astype(int)
        for method, g in (("bonferroni", grid), ("fixed_sequence", grid[grid <= 0.9])):
            r = precision_guarantee_threshold(s, y, target, delta, grid=g, method=method)
            if r.valid and true_prec(r.threshold) < target:
                fails += 1
    assert fails / (2 * reps) <= delta + 0.04


# --------------------------------------------------------------------------- threshold files
def _fitted(**kw):
    base = {
        "kind": "precision",
        "target": 0.9,
        "model": "smollm2-135m",
        "method": "vanilla+k_precision",
        "dataset": "*",
        "n_fit": 3,
        "delta": 0.1,
    }
    base.update(kw)
    return base


def test_threshold_file_round_trip(tmp_path):
    c = ThresholdController(action_rate=0.34, fingerprints={"model": "m", "method": "vanilla+nli"}).fit([0.1, 0.4, 0.8])
    c.save(tmp_path / "t.json")
    value, fitted = parse_threshold(str(tmp_path / "t.json"))
    assert isinstance(value, ThresholdController) and value.threshold_ == 0.4 and fitted is value
    assert json.loads((tmp_path / "t.json").read_text())["format"] == "verirag.learned.threshold/2"
    assert fitted.fingerprints == {"model": "m", "method": "vanilla+nli"} and fitted.n_fit_ == 3
    assert parse_threshold("0.3") == (0.3, None) and parse_threshold(None) == (None, None)


def test_uncertified_threshold_file_says_so(tmp_path):
    c = ThresholdController(precision=0.9).fit([0.5] * 20, [0, 1] * 10)
    path = c.save(tmp_path / "t.json")
    assert "inf" not in path.read_text()
    value, fitted = parse_threshold(str(path))  # noqa: RUF059
    assert value.fitted and not value.certified_ and value.threshold_ is None and value.decide(1.0) == ACT


def test_old_inf_file_loads_as_uncertified(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({**_fitted(), "threshold": "inf", "valid": False, "fit_action_rate": 1.0}))
    c = ThresholdController.load(old)
    assert not c.certified_ and c.threshold_ is None and c.decide(0.99) == ACT
    assert c.fingerprints["model"] == "smollm2-135m" and c.n_fit_ == 3
    # an old certified file, and an old action rate of 1 ("inf", certified)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({**_fitted(), "threshold": 0.62, "valid": True, "fit_action_rate": 0.3}))
    c = ThresholdController.load(ok)
    assert c.certified_ and c.threshold_ == 0.62 and c.decide(0.62) == ANSWER
    ok.write_text(json.dumps({**_fitted(kind="action_rate", target=1.0), "threshold": "inf", "certified": True}))
    c = ThresholdController.load(ok)
    assert c.certified_ and c.threshold_ == math.inf and c.decide(0.99) == ACT


def test_bad_threshold_files_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="no threshold file at .*verirag calibrate"):
        ThresholdController.load(tmp_path / "missing.json")
    for text in ("{", "[]", json.dumps({"threshold": 0.5}), json.dumps({**_fitted(kind="nope"), "threshold": 0.5})):
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(InputError, match="not a threshold file"):
            ThresholdController.load(tmp_path / "bad.json")


# --------------------------------------------------------------------------- policies and pipeline
def test_policies_with_an_uncertified_controller():
    from verirag.awf.methods.base import MethodOutput
    from verirag.awf.policies import ABSTAINED, ANSWERED, AbstainPolicy
    from verirag.awf.trace import Trace
    from verirag.types import Passage

    tr = Trace("q?", [Passage("a", "text")])
    unc = ThresholdController(precision=0.9).fit([0.5] * 20, [0, 1] * 10)
    d = AbstainPolicy().apply(tr, MethodOutput(answer="x", score=1.0), unc)
    assert d.action == ABSTAINED and d.details["threshold"] is None
    ok = ThresholdController(action_rate=0.5).fit([0.2, 0.4, 0.6, 0.8])
    d = AbstainPolicy().apply(tr, MethodOutput(answer="x", score=0.6), ok)
    assert d.action == ANSWERED and d.details["threshold"] == 0.6
    with pytest.raises(NotFittedError, match="not fitted"):
        AbstainPolicy().apply(tr, MethodOutput(answer="x", score=0.6), ThresholdController(action_rate=0.5))


def test_pipeline_config_accepts_fitted_controllers():
    from dataclasses import replace

    from verirag.awf.pipeline import PRESETS

    unc = ThresholdController(precision=0.9).fit([0.5] * 20, [0, 1] * 10)
    replace(PRESETS["tiny"], threshold=unc).validate()
    replace(PRESETS["tiny"], threshold=0.7).validate()
    with pytest.raises(NotFittedError, match="not fitted"):
        replace(PRESETS["tiny"], threshold=ThresholdController(precision=0.9)).validate()
    with pytest.raises(InputError, match=r"\[0, 1\]"):
        replace(PRESETS["tiny"], threshold=1.5).validate()


def test_print_result_without_a_threshold(capsys, monkeypatch):
    from verirag import cli

    monkeypatch.setattr(cli.out, "width", 300)  # one line per field
    from verirag.types import AskResult

    r = AskResult(
        question="q",
        answer="I don't know",
        score=0.9,
        faithful=False,
        threshold=None,
        action="abstained",
        evidence=[],
        supporting_passage=None,
        retrieved_answer="x",
        model="m",
        method="vanilla+nli",
        judge="nli",
        timings={"total": 0.1},
    )
    cli._print_result(r)
    assert "every answer acts" in capsys.readouterr().out
    assert json.loads(json.dumps(r.to_dict()))["threshold"] is None


def test_calibrate_an_uncertified_target_says_every_answer_acts_and_saves(tmp_path, capsys, monkeypatch):
    from verirag import cli
    from verirag.records import ResultRecord, ResultStore

    monkeypatch.setattr(cli.out, "width", 300)
    store = ResultStore(tmp_path / "run")
    for i in range(12):  # half wrong at every score: precision 0.9 is out of reach
        store.append(
            ResultRecord.from_dict(
                {
                    "dataset": "d",
                    "model": "m",
                    "method": "vanilla+nli",
                    "example_id": f"q{i}",
                    "question": "q",
                    "answer": "a",
                    "score": 0.8,
                    "hard": False,
                    "answerable": 1,
                    "correct": i % 2,
                    "faithful": i % 2,
                }
            )
        )
    code = cli.main(
        [
            "calibrate",
            str(tmp_path / "run"),
            "--model",
            "m",
            "--method",
            "vanilla+nli",
            "--precision",
            "0.9",
            "--save",
            str(tmp_path / "t.json"),
        ]
    )
    text = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "not certified" in text and "every answer acts" in text and "inf" not in text
    f = ThresholdController.load(tmp_path / "t.json")
    assert not f.certified_ and f.threshold_ is None and f.n_fit_ == 12 and f.kind == "precision"
    assert f.fingerprints["method"] == "vanilla+nli" and f.provenance["command"] == "verirag calibrate"
    assert "method_options" in f.provenance
    code = cli.main(
        ["calibrate", str(tmp_path / "run"), "--model", "m", "--method", "vanilla+nli", "--action-rate", "0.25"]
    )
    assert code == 0 and "threshold 0.8 for action rate 0.25 on 12 examples" in capsys.readouterr().out


@pytest.mark.slow
def test_ask_with_an_uncertified_threshold_file_acts_and_exits_0(tmp_path):
    """`verirag ask --threshold FILE` with an uncertified file: one warning, exit 0, the answer acts."""
    from verirag.demo import corpus_path

    path = tmp_path / "t.json"
    path.write_text(json.dumps({**_fitted(n_fit=12), "threshold": None, "certified": False, "fit_action_rate": 1.0}))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "verirag",
            "ask",
            "How long does the ferry crossing take?",
            "--corpus",
            str(corpus_path()),
            "--preset",
            "tiny",
            "--method",
            "vanilla+k_precision",
            "--json",
            "--threshold",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["action"] != "answered" and out["action"] == "abstained" and out["threshold"] is None
    assert not out["faithful"]
    warning = " ".join(r.stderr.split())
    assert warning.count("could not be certified") == 1
    assert "the target precision 0.9 could not be certified on 12 examples: every answer acts (abstain)" in warning
    assert "[0, 1]" not in r.stderr
