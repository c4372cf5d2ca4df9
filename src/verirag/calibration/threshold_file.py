"""A fitted threshold saved as JSON, so `verirag ask --threshold FILE` uses what
`verirag calibrate` fitted on labelled results.

The file records what it was fitted for (model, method, dataset, target) and on how much data,
so a mismatch with the answering set-up can be pointed out instead of silently accepted.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from verirag.errors import InputError


@dataclass
class FittedThreshold:
    threshold: float
    kind: str                 # value | precision | action_rate
    target: float
    model: str
    method: str
    dataset: str
    n_fit: int
    valid: bool = True        # False: the target precision could not be certified (threshold is inf)
    delta: float | None = None
    fit_action_rate: float | None = None

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        d = asdict(self)
        d["threshold"] = "inf" if math.isinf(self.threshold) else self.threshold
        p.write_text(json.dumps(d, indent=2) + "\n")
        return p


def load_threshold_file(path: str | Path) -> FittedThreshold:
    p = Path(path)
    try:
        d = json.loads(p.read_text())
        d["threshold"] = float(d["threshold"])
        return FittedThreshold(**d)
    except FileNotFoundError:
        raise InputError(f"threshold file not found: {p}") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise InputError(f"{p} is not a threshold file written by `verirag calibrate`: {e}") from None


def parse_threshold(text: str | None) -> tuple[float | None, FittedThreshold | None]:
    """`--threshold` accepts a number or the path of a threshold file."""
    if text is None:
        return None, None
    try:
        return float(text), None
    except ValueError:
        fitted = load_threshold_file(text)
        return fitted.threshold, fitted
