"""Cross-fitting the stack over the distillation (issue 47, item 7).

The stack (`verirag train stack`) is fitted on the local model's answers to training questions (the
`distill` recipe), with the trained verifier's score of each answer as one feature. A verifier that
learned from those same answers scores them in-sample, and a stack fitted on in-sample scores trusts
the verifier more than it should at answer time. Cross-fitting mends it: the distillation's question
groups fall into FOLDS folds by a hash of the group (stable as the distillation grows); one verifier is
trained per fold with that fold's groups held out (`verirag train verifier --distill-fold K`), and the
stack's verifier column scores each answer with the verifier that never saw its question. The shipped
verifier (trained on every fold) is the one the stack reads at answer time.

    fold_of("hotpotqa_support:5a8b57f25542995d1e6f1371", 2)   # 0 or 1, the same on every machine
    kept, held = hold_out_fold(examples, fold=0, folds=2)       # verirag_lab.train.verifier
    assignment = fold_verifiers(["runs/verifiers/x-fold0", "runs/verifiers/x-fold1"])  # train stack

Holding out a fold drops every example of a held-out group, of any recipe (the replay's labels may hold
the same training question), and counts what it dropped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verirag.errors import InputError

RECIPE = "distill"
FOLDS = 2
PROVENANCE_KEY = "distill_held_out"  # in a fold verifier's saved provenance: {"fold", "folds", ...}


def fold_of(group: str, folds: int = FOLDS) -> int:
    """The fold of a question group: a hash, not Python's `hash` (salted per process)."""
    if folds < 2:
        raise InputError(f"cross-fitting needs at least 2 folds, got {folds}")
    return int.from_bytes(hashlib.sha256(group.encode("utf-8")).digest()[:8], "big") % folds


def hold_out_fold(examples: Sequence[Any], fold: int, folds: int = FOLDS) -> tuple[list[Any], dict[str, int]]:
    """(the examples without any of fold `fold`'s distillation groups, what was held out): the groups
    are those of the `distill` examples in that fold; every example of them goes, whatever its recipe."""
    if not 0 <= fold < folds:
        raise InputError(f"--distill-fold must be in 0..{folds - 1}, got {fold}")
    held = {e.group for e in examples if e.recipe == RECIPE and fold_of(e.group, folds) == fold}
    kept = [e for e in examples if e.group not in held]
    record = {"fold": fold, "folds": folds, "groups": len(held), "examples": len(examples) - len(kept)}
    return kept, record


@dataclass(frozen=True)
class FoldVerifiers:
    """The fold verifiers of a cross-fitted stack: `dirs[k]` held fold k out."""

    dirs: tuple[str, ...]

    @property
    def folds(self) -> int:
        return len(self.dirs)


def saved_provenance(verifier_dir: str | Path | None) -> dict[str, Any]:
    """A saved verifier's provenance (`verifier_dir`, or the shipped one when None), from its JSON
    alone: loading the part would read the encoder for a few provenance fields."""
    from verirag.learned.shipped import shipped_verifier_dir
    from verirag.learned.verifier import TrainedVerifier

    file = TrainedVerifier.json_path(Path(verifier_dir) if verifier_dir else shipped_verifier_dir())
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read the verifier's {file}: {e}") from None
    return meta.get("provenance") or {}


def held_out_record(verifier_dir: str | Path) -> dict[str, Any] | None:
    """The fold a saved verifier held out (its provenance's PROVENANCE_KEY), None when it held none."""
    return saved_provenance(verifier_dir).get(PROVENANCE_KEY)


def fold_verifiers(dirs: Sequence[str | Path]) -> FoldVerifiers:
    """The fold verifiers named on the command line, in fold order, each checked: it held a fold
    out, all of them with the same number of folds, every fold once."""
    records = {str(d): held_out_record(d) for d in dirs}
    missing = [d for d, r in records.items() if not r]
    if missing:
        raise InputError(
            f"{', '.join(missing)} held no fold of the distillation out (train it with --distill-fold K): "
            "its scores over the distillation would be in-sample"
        )
    counts = {int(r["folds"]) for r in records.values()}
    if counts != {len(records)}:
        raise InputError(f"{len(records)} fold verifiers given, trained for {sorted(counts)} folds: give one per fold")
    by_fold = {int(r["fold"]): d for d, r in records.items()}
    if sorted(by_fold) != list(range(len(records))):
        raise InputError(
            f"the fold verifiers hold out folds {sorted(int(r['fold']) for r in records.values())}: "
            f"each of 0..{len(records) - 1} once"
        )
    return FoldVerifiers(tuple(by_fold[k] for k in range(len(records))))
