"""verirag.jsonio: strict JSON, written in one step."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from verirag.jsonio import strict_json, write_json


def _strict_load(text: str):
    def refuse(c):
        raise AssertionError(f"{c} is not strict JSON")

    return json.loads(text, parse_constant=refuse)


def test_strict_json_turns_undefined_numbers_into_null_and_numpy_into_python():
    out = strict_json(
        {
            "auroc": math.nan,
            "inf": -math.inf,
            "n": np.int64(3),
            "x": np.float32(0.5),
            "ok": np.bool_(True),
            "v": np.array([1.0, np.nan]),
            "t": (1, math.inf),
        }
    )
    assert out == {"auroc": None, "inf": None, "n": 3, "x": 0.5, "ok": True, "v": [1.0, None], "t": [1, None]}
    assert type(out["n"]) is int and type(out["ok"]) is bool


def test_write_json_is_strict_and_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "study.json"
    write_json(path, {"a": math.nan, "when": tmp_path})  # a path is written as text
    assert _strict_load(path.read_text()) == {"a": None, "when": str(tmp_path)}
    real_write = type(path).write_text

    def dies_half_way(self, text, *a, **kw):  # a killed process: half the text, then gone
        real_write(self, text[: len(text) // 2], *a, **kw)
        raise KeyboardInterrupt

    import pathlib

    pathlib.Path.write_text = dies_half_way
    try:
        with pytest.raises(KeyboardInterrupt):
            write_json(path, {"a": 2, "long": "x" * 1000})
    finally:
        pathlib.Path.write_text = real_write
    assert _strict_load(path.read_text()) == {"a": None, "when": str(tmp_path)}  # the old file, whole

    class Unwritable:
        def __str__(self):
            raise ValueError("cannot be written")

    with pytest.raises(ValueError, match="cannot be written"):
        write_json(path, {"a": 1, "bad": Unwritable()})
    assert _strict_load(path.read_text())["a"] is None  # the old file, whole
