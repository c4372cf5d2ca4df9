"""A fitted threshold saved as JSON, so `verirag ask --threshold FILE` uses what
`verirag calibrate` fitted on labelled results.

The file records what it was fitted for (model, method, dataset, target) and on how much data,
so a mismatch with the answering set-up can be pointed out instead of silently accepted.
`threshold` is null and `certified` false when no threshold reaches the target (every answer
acts). Files written before `certified` existed ("threshold": "inf", "valid": false) still load,
as uncertified.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

from verirag.calibration.controller import ThresholdController
from verirag.errors import InputError


@dataclass
class FittedThreshold:
    threshold: float | None   # None: the target could not be certified (every answer acts)
    kind: str                 # value | precision | action_rate
    target: float
    model: str
    method: str               # the AwF method it was fitted for
    dataset: str
    n_fit: int
    certified: bool = True    # False: no threshold reaches the target
    delta: float | None = None
    fit_action_rate: float | None = None
    ltt_method: str | None = None   # precision: "bonferroni" or "fixed_sequence"

    @property
    def valid(self) -> bool:
        """Older name of `certified`."""
        return self.certified

    @classmethod
    def from_controller(cls, controller: ThresholdController, *, model: str, method: str,
                        dataset: str, n_fit: int | None = None) -> "FittedThreshold":
        c = controller
        if not c.fitted:
            raise ValueError(f"{c!r} is not fitted")
        precision = c.kind == "precision"
        return cls(threshold=c.threshold_, kind=c.kind, target=c.target, model=model, method=method,
                   dataset=dataset, n_fit=int(n_fit if n_fit is not None else getattr(c, "n_fit_", 0)),
                   certified=bool(c.certified_), delta=c.delta if precision else None,
                   fit_action_rate=getattr(c, "fit_action_rate_", None),
                   ltt_method=c.method if precision else None)

    def controller(self) -> ThresholdController:
        """The fitted ThresholdController this file describes (what the pipeline uses)."""
        return ThresholdController.from_dict({
            "kind": self.kind, "target": self.target, "delta": self.delta,
            "method": self.ltt_method, "threshold": self.threshold, "certified": self.certified,
            "n_fit": self.n_fit, "fit_action_rate": self.fit_action_rate})

    def to_dict(self) -> dict:
        d = asdict(self)
        if self.threshold is not None and math.isinf(self.threshold):
            d["threshold"] = "inf"   # an action rate of 1: every answer acts, certified
        return d

    def save(self, path: str | Path) -> Path:
        p = Path(path)
        p.write_text(json.dumps(self.to_dict(), indent=2) + "\n")
        return p


def load_threshold_file(path: str | Path) -> FittedThreshold:
    p = Path(path)
    try:
        d = json.loads(p.read_text())
        if not isinstance(d, dict):
            raise ValueError("not a JSON object")
        valid = d.pop("valid", None)           # older files
        d.setdefault("certified", True if valid is None else bool(valid))
        t = d.get("threshold")
        t = None if t is None else float(t)
        if t is None or (math.isinf(t) and d["kind"] == "precision"):
            t, d["certified"] = None, False    # older files wrote an uncertified target as "inf"
        if not d["certified"]:
            t = None
        d["threshold"] = t
        fitted = FittedThreshold(**d)
        fitted.controller()                    # checks kind and target
        return fitted
    except FileNotFoundError:
        raise InputError(f"threshold file not found: {p}") from None
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise InputError(f"{p} is not a threshold file written by `verirag calibrate`: {e}") from None


def parse_threshold(text: str | None) -> tuple[float | ThresholdController | None, FittedThreshold | None]:
    """`--threshold` accepts a number or the path of a threshold file.

    Returns (what the pipeline uses, the file's record): (float, None) for a number, (a fitted
    ThresholdController, FittedThreshold) for a file, (None, None) for no option. An uncertified
    file gives a controller that makes every answer act."""
    if text is None:
        return None, None
    try:
        return float(text), None
    except ValueError:
        fitted = load_threshold_file(text)
        return fitted.controller(), fitted
