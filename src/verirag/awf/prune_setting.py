"""One prune setting, read the same way by every door (issue 48): Python (`PipelineConfig.prune`,
`Pipeline.ask(prune=...)`), the CLI (`--prune`, `--prune-threshold X`, `--no-prune`), HTTP
(`/v1/ask`'s `prune: true | false | number`) and the experiment grid's YAML (`prune:`).

    parse_prune(True)                                # on, at the pruner's own fitted threshold_
    parse_prune(0.3)                                 # on, keeping sentences scoring at least 0.3
    parse_prune(False)                               # off: every sentence is read
    parse_prune({"threshold": 0.3, "pruner": DIR})   # on, with a pruner `verirag train pruner` saved
    parse_prune(None)                                # PRUNE_DEFAULT

The threshold is a parameter of each pruning call, not of the pruner: every setting over one pruner
folder shares one loaded pruner (`verirag.learned.pruner_store`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from verirag.errors import InputError

ACCEPTED = "true, false, a threshold in [0, 1] or a mapping {threshold: T, pruner: DIR}"


class PruneValueError(InputError):
    """A prune value that is none of the accepted ones: `place` is the key it is at ("threshold",
    "pruner"; "" for the value itself) and `problem` what is wrong, so the YAML config can place it."""

    def __init__(self, what: str, place: str, problem: str):
        self.place, self.problem = place, problem
        super().__init__(f"{what}{'.' + place if place else ''}: {problem}")


def _shown(v: Any) -> str:
    return json.dumps(v) if v is None or isinstance(v, bool) else repr(v)


@dataclass(frozen=True)
class PruneSetting:
    """`on`: whether the retrieved passages are pruned; `threshold`: the score a sentence needs to be
    kept (None: the pruner's fitted `threshold_`, the shipped conservative one); `pruner`: a saved
    pruner's folder (None: the shipped pruner). Off carries neither."""

    on: bool = False
    threshold: float | None = None
    pruner: str | None = None

    def __post_init__(self):
        if not isinstance(self.on, bool):
            raise PruneValueError("prune", "on", f"must be true or false, got {_shown(self.on)}")
        if self.threshold is not None:
            object.__setattr__(self, "threshold", _threshold(self.threshold, "prune", "threshold"))
        if self.pruner is not None and (not isinstance(self.pruner, str) or not self.pruner.strip()):
            raise PruneValueError("prune", "pruner", f"must name a folder, got {_shown(self.pruner)}")
        if not self.on and (self.threshold is not None or self.pruner is not None):
            raise PruneValueError("prune", "", "a threshold or a pruner was given with pruning off")

    def to_json(self) -> dict[str, Any] | None:
        """What a record or run.json says: None when off, else {threshold, pruner}."""
        return {"threshold": self.threshold, "pruner": self.pruner} if self.on else None

    def __str__(self) -> str:
        if not self.on:
            return "off"
        at = "the pruner's own threshold" if self.threshold is None else f"threshold {self.threshold:g}"
        return f"on at {at}" + (f" ({self.pruner})" if self.pruner else "")


OFF = PruneSetting()
SHIPPED = PruneSetting(on=True)  # the pruner at its own fitted threshold

# Whether pruning is on when nobody says: the one place to flip (issue 48 leaves it to a benchmark;
# every door, Python, CLI, HTTP and the grid's YAML, reads this through parse_prune(None)).
PRUNE_DEFAULT: PruneSetting = OFF


def _threshold(value: Any, what: str, place: str = "") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PruneValueError(what, place, f"must be a number in [0, 1], got {_shown(value)}")
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise PruneValueError(what, place, f"must be a number in [0, 1], got {value}")
    return float(value)


def parse_prune(value: Any, *, what: str = "prune") -> PruneSetting:
    """The one reading of a prune value (module doc); anything else is a PruneValueError (an
    InputError) naming `what`. Text ("yes", "0.3") is refused, not guessed at."""
    if value is None:
        return PRUNE_DEFAULT
    if isinstance(value, PruneSetting):
        return value
    if isinstance(value, bool):
        return SHIPPED if value else OFF
    if isinstance(value, (int, float)):
        return PruneSetting(on=True, threshold=_threshold(value, what))
    if isinstance(value, dict):
        for key in value:
            if key not in ("threshold", "pruner"):
                raise PruneValueError(what, str(key), "unknown key (expected one of: pruner, threshold)")
        threshold, pruner = value.get("threshold"), value.get("pruner")
        if pruner is not None and (not isinstance(pruner, str) or not pruner.strip()):
            raise PruneValueError(what, "pruner", f"must name a folder, got {_shown(pruner)}")
        return PruneSetting(
            on=True, threshold=None if threshold is None else _threshold(threshold, what, "threshold"), pruner=pruner
        )
    raise PruneValueError(what, "", f"must be {ACCEPTED}, got {_shown(value)}")


def cli_prune(prune: bool, threshold: float | None, no_prune: bool) -> PruneSetting | None:
    """The setting of `--prune` / `--prune-threshold X` / `--no-prune` (None: none given, the
    preset's or the service's own setting stands). `--prune` alone is on at the pruner's own threshold."""
    if no_prune and (prune or threshold is not None):
        raise InputError("give --prune / --prune-threshold X or --no-prune, not both")
    if no_prune:
        return OFF
    if threshold is not None:
        return parse_prune(threshold, what="--prune-threshold")
    return SHIPPED if prune else None
