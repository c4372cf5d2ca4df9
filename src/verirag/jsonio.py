"""Strict JSON files written in one step: what every study, classifier and forecaster saves.

Strict: NaN and infinities (an undefined AUROC, an empty mean) become null, numpy scalars and
arrays plain numbers and lists, so any JSON reader takes the file. In one step: the text goes to
a temporary file beside the target, which then replaces it, so a killed write leaves the old file
whole rather than a torn one.
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np


def strict_json(obj: Any) -> Any:
    """`obj` with NaN / infinities as None and numpy values as Python ones."""
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    return obj


def write_json(path: str | os.PathLike, obj: Any, *, indent: int | None = 1) -> Path:
    """Write `obj` as strict JSON to `path` in one step; values JSON cannot hold become text."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(strict_json(obj), ensure_ascii=False, indent=indent, allow_nan=False, default=str)
    tmp.write_text(text + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
