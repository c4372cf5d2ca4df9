"""Shipping a candidate's stack: `verirag_lab.train.stack_repoint` points the stack's verifier source at
the same network in another folder (the shipped one), and refuses another network."""

from __future__ import annotations

import json
import shutil

import pytest

from verirag.awf.compose import build_predictor
from verirag.errors import InputError
from verirag.learned.shipped import META_FILE, VERIFIER_ENV, shipped_verifier_dir
from verirag_lab.train.stack_repoint import main, repoint


def _stack(folder: str) -> dict:
    digest = build_predictor("verifier", None, options={"verifier": folder}).digest
    source = {"predictor": "verifier", "options": {"verifier": folder}, "method": "vanilla+verifier", "digest": digest}
    return {
        "format": "x",
        "provenance": {"command": "verirag train stack"},
        "settings": {"sources": {"verifier": source}},
    }


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
