"""Shipping a candidate's stack: `verirag_lab.train.stack_repoint` points the stack's verifier source at
the same network in another folder (the shipped one), and refuses another network."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from verirag.awf.component import identity_digest
from verirag.awf.compose import build_predictor
from verirag.errors import InputError
from verirag.learned.shipped import META_FILE, VERIFIER_ENV, shipped_verifier_dir
from verirag.learned.stack import StackedVerifier
from verirag_lab.train.stack_repoint import main, pin_new_options, repoint

REPO = Path(__file__).resolve().parents[1]


def _saved(options: dict, digest: str) -> dict:
    """A saved stack's JSON, as far as a move or a pin reads it: its verifier source."""
    source = {"predictor": "verifier", "options": options, "method": "vanilla+verifier", "digest": digest}
    return {
        "format": "x",
        "provenance": {"command": "verirag train stack"},
        "settings": {"sources": {"verifier": source}},
    }


def _stack(folder: str) -> dict:
    return _saved({"verifier": folder}, build_predictor("verifier", None, options={"verifier": folder}).digest)


def test_a_stack_fitted_on_a_folder_names_the_shipped_verifier_after_the_weights_moved(tmp_path, monkeypatch):
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    fitted_at, now_at = tmp_path / "runs" / "cand", tmp_path / "candidates" / "cand"
    shutil.copytree(shipped_verifier_dir(), fitted_at)
    stack = _stack(str(fitted_at))
    shutil.move(fitted_at, now_at)  # the candidate's weights were moved (and copied into the shipped folder)
    out = repoint(stack, str(now_at))
    source = out["settings"]["sources"]["verifier"]
    assert source["options"] == {} and source["digest"] == build_predictor("verifier", None, options={}).digest
    assert out["provenance"]["repointed"][0]["from"] == {"verifier": str(fitted_at)}
    assert stack["settings"]["sources"]["verifier"]["options"] == {"verifier": str(fitted_at)}  # not changed in place
    path = tmp_path / "stack.json"
    path.write_text(json.dumps(stack))
    assert main([str(path), "--from", str(now_at), "--to", str(now_at), "--out", str(tmp_path / "o.json")]) == 0
    moved = json.loads((tmp_path / "o.json").read_text())["settings"]["sources"]["verifier"]
    assert moved["digest"] == build_predictor("verifier", None, options={"verifier": str(now_at)}).digest


def test_another_network_or_another_calibration_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    a = tmp_path / "a"
    shutil.copytree(shipped_verifier_dir(), a)
    meta = json.loads((a / META_FILE).read_text(encoding="utf-8"))
    meta["state"]["temperature_"] = 4.0  # the same adapter (and identity), other scores
    (a / META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(InputError, match="verifier.json differ"):
        repoint(_stack(str(a)), str(a))
    with pytest.raises(InputError, match="not the verifier the stack was fitted with"):
        repoint(
            _stack(str(a)) | {"settings": {"sources": {"verifier": {"predictor": "verifier", "digest": "0" * 12}}}},
            str(a),
        )
    with pytest.raises(InputError, match="no 'verifier' feature"):
        repoint({"settings": {"sources": {}}}, str(a))


def _fitted_before_softmin(folder: str | None) -> dict:
    """A stack as fitted before the verifier had its `softmin` option (the identity held no such key)."""
    options = {"verifier": folder} if folder else {}
    identity = build_predictor("verifier", None, options=options).identity()
    identity["options"].pop("softmin")
    return _saved(options, identity_digest(identity))


def test_a_stack_fitted_before_the_answer_rule_names_the_plain_minimum(tmp_path, monkeypatch):
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    old = _fitted_before_softmin(None)
    out = pin_new_options(old)
    source = out["settings"]["sources"]["verifier"]
    assert source["options"] == {"softmin": 0.0}
    assert source["digest"] == build_predictor("verifier", None, options={"softmin": 0.0}).digest
    assert out["provenance"]["pinned"] == [
        {
            "options": {"softmin": 0.0},
            "digest_from": old["settings"]["sources"]["verifier"]["digest"],
            "digest": source["digest"],
        }
    ]
    assert pin_new_options(out) == out  # pinned once: nothing more to pin
    path = tmp_path / "stack.json"
    StackedVerifier(["verifier"], sources=out["settings"]["sources"]).fit(
        np.array([[0.1], [0.9], [0.2], [0.8]]), np.array([0, 1, 0, 1])
    ).save(path, pinned=out["provenance"]["pinned"])
    loaded = StackedVerifier.load(path)
    assert loaded.scored_as("verifier") == {source["digest"], old["settings"]["sources"]["verifier"]["digest"]}
    # moved afterwards, it keeps the rule it was fitted with
    moved = repoint(out, str(shipped_verifier_dir()))
    assert moved["settings"]["sources"]["verifier"]["options"] == {"softmin": 0.0}


def test_a_stack_fitted_with_todays_rule_is_left_as_it_is_and_another_identity_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    today = _stack(str(shipped_verifier_dir()))
    assert pin_new_options(today) == today
    other = _fitted_before_softmin(None)
    other["settings"]["sources"]["verifier"]["digest"] = "0" * 12
    with pytest.raises(InputError, match="refit the stack"):
        pin_new_options(other)
    path, out = tmp_path / "s.json", tmp_path / "o.json"
    path.write_text(json.dumps(_fitted_before_softmin(None)))
    assert main([str(path), "--pin-new-options", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["settings"]["sources"]["verifier"]["options"] == {"softmin": 0.0}
    with pytest.raises(SystemExit):
        main([str(path), "--out", str(out)])  # neither a move nor a pin


def test_the_committed_stacks_name_the_rule_they_were_fitted_on():
    for path in [
        shipped_verifier_dir().parent / "stack.json",
        *sorted(REPO.glob("data/verifier/candidates/stack-*/stack.json")),
    ]:
        source = json.loads(path.read_text())["settings"]["sources"]["verifier"]
        assert source["options"].get("softmin") == 0.0, path


def _evidence(**changed) -> dict:
    """A `stack_engines.py --out` summary that holds the equivalence rule, with `changed` values."""
    return {
        "answers": 290,
        "other-default": {"estimate": 0.008, "low": -0.026, "high": 0.039},
        "alike": 200,
        "verdict_differs_alike": 2,
        **changed,
    }


def test_another_builds_fingerprint_is_read_as_the_stacks_own_only_on_evidence(tmp_path):
    from verirag.learned.stack import shipped_stack_path
    from verirag_lab.train.stack_repoint import equivalent_model

    stack = json.loads(shipped_stack_path().read_text(encoding="utf-8"))
    own = stack["fingerprints"]["model"]
    ik = own.split("|")[0] + "|n_batch=512|engine=ik"
    with pytest.raises(InputError, match="fitted for model"):  # before: another build is refused
        path = tmp_path / "before.json"
        path.write_text(json.dumps(stack))
        StackedVerifier.load(path, expect={"model": ik})
    out = equivalent_model(stack, ik, _evidence())
    assert out["fingerprints"]["equivalent"]["model"] == [ik]
    assert out["provenance"]["equivalences"][-1]["evidence"]["answers"] == 290
    path = tmp_path / "after.json"
    path.write_text(json.dumps(out))
    for fp in (own, ik):
        StackedVerifier.load(path, expect={"model": fp})  # both builds' answers are read
    with pytest.raises(InputError, match="fitted for model"):  # a third one still is not
        StackedVerifier.load(path, expect={"model": own.split("|")[0] + "|n_batch=256|engine=ik"})
    assert equivalent_model(out, ik, _evidence())["fingerprints"]["equivalent"]["model"] == [ik]  # listed once


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"answers": 120}, "120 answers"),
        ({"other-default": {"estimate": 0.0, "low": -0.08, "high": 0.07}}, "lower bound -0.080"),
        ({"other-default": {"estimate": -0.02, "low": -0.04, "high": 0.0}}, "estimate -0.020"),
        ({"verdict_differs_alike": 30}, "verdicts differ on 30 of 200"),
    ],
)
def test_evidence_short_of_the_rule_or_another_model_file_is_refused(changed, message, tmp_path):
    from verirag.learned.stack import shipped_stack_path
    from verirag_lab.train.stack_repoint import equivalent_model

    stack = json.loads(shipped_stack_path().read_text(encoding="utf-8"))
    ik = stack["fingerprints"]["model"].split("|")[0] + "|n_batch=512|engine=ik"
    with pytest.raises(InputError, match=message):
        equivalent_model(stack, ik, _evidence(**changed))
    with pytest.raises(InputError, match="another model file"):
        equivalent_model(stack, "0123abcd|n_batch=512|engine=ik", _evidence())
    evidence, src = tmp_path / "e.json", tmp_path / "s.json"
    evidence.write_text(json.dumps(_evidence(**changed)))
    src.write_text(json.dumps(stack))
    assert (
        main([str(src), "--equivalent-model", ik, "--evidence", str(evidence), "--out", str(tmp_path / "o.json")]) == 2
    )
    assert not (tmp_path / "o.json").exists()


def test_a_malformed_evidence_file_is_a_clear_error(tmp_path, capsys):
    from verirag.learned.stack import shipped_stack_path
    from verirag_lab.train.stack_repoint import equivalence_failures

    assert len(equivalence_failures({})) == 4  # nothing measured: every part of the rule falls short
    assert equivalence_failures(_evidence(answers="many"))[0].startswith("many answers")
    src = tmp_path / "s.json"
    src.write_text(shipped_stack_path().read_text(encoding="utf-8"))
    for text in ("{not json", "[1, 2]"):
        bad = tmp_path / "e.json"
        bad.write_text(text)
        assert (
            main(
                [str(src), "--equivalent-model", "x|n_batch=512", "--evidence", str(bad), "--out", str(tmp_path / "o")]
            )
            == 2
        )
        assert "not a stack_engines.py --out summary" in capsys.readouterr().err


def test_a_malformed_list_of_equivalents_is_no_equivalence(tmp_path):
    from verirag.learned.stack import shipped_stack_path

    saved = json.loads(shipped_stack_path().read_text(encoding="utf-8"))
    other = saved["fingerprints"]["model"].split("|")[0] + "|n_batch=512|engine=ik"
    for listed in ([other], {"model": other}, {"model": [1, None]}, "x"):
        saved["fingerprints"]["equivalent"] = listed
        path = tmp_path / "stack.json"
        path.write_text(json.dumps(saved))
        with pytest.raises(InputError, match="fitted for model"):
            StackedVerifier.load(path, expect={"model": other})


def test_the_committed_ik_evidence_misses_the_rule_on_its_estimate_only():
    """docs/results/pruning.md: ik_llama.cpp's features of the 300 own answers fall short of the rule on
    the estimate (-0.014), so the shipped stack lists no other build."""
    from verirag.learned.stack import shipped_stack_path
    from verirag_lab.train.stack_repoint import equivalence_failures

    path = REPO / "data" / "verifier" / "own_answers" / "own-answers-pruned-ik-qwen2.5-1.5b" / "stack-engines.json"
    evidence = json.loads(path.read_text(encoding="utf-8"))
    assert evidence["answers"] == 300 and equivalence_failures(evidence) == ["the estimate -0.014 (above -0.01)"]
    assert "equivalent" not in json.loads(shipped_stack_path().read_text(encoding="utf-8"))["fingerprints"]
