"""Learned parts that ship inside the package, so that they work without a training run.

    shipped_verifier_dir()     # the folder of the packaged trained verifier (TrainedVerifier.load reads it)
    shipped_pruner_dir()       # the folder of the packaged context pruner (ContextPruner.load reads it)

`verifier/` beside this file holds what `TrainedVerifier.save` writes (verifier.json and
adapter.safetensors, at most `MAX_SHIPPED_BYTES` in all: the encoder itself is the PyPI package's).
It is made by `verirag train verifier LABELS --out src/verirag/learned/shipped/verifier` and
committed; a checkout or an install without it still runs, with the predictor `verifier` needing
`verifier=DIR`. `VERIRAG_VERIFIER_DIR` names another folder instead (a verifier a user trained, or
a test's).
"""

from __future__ import annotations

import os
from pathlib import Path

from verirag.errors import ModelNotFoundError
from verirag.learned.verifier import ADAPTER_FILE, META_FILE
from verirag.settings import settings

VERIFIER_ENV = "VERIRAG_VERIFIER_DIR"
SHIPPED_VERIFIER = Path(__file__).resolve().parent / "verifier"
VERIFIER_FILES = (META_FILE, ADAPTER_FILE)  # what TrainedVerifier.save writes
MAX_SHIPPED_BYTES = 5 * 1024 * 1024
MAKE_VERIFIER = f"verirag train verifier LABELS --out {SHIPPED_VERIFIER}"


def shipped_verifier_dir() -> Path:
    """The trained verifier used when none is named: the folder in `VERIRAG_VERIFIER_DIR` when
    set, else the package's own. ModelNotFoundError, naming the command that makes one, when the
    folder lacks a saved verifier."""
    named = settings().verifier_dir
    folder = named or SHIPPED_VERIFIER
    missing = [f for f in VERIFIER_FILES if not (folder / f).is_file()]
    if not missing:
        return folder
    where = f"{VERIFIER_ENV}={named}" if named else "this installation of verirag"
    raise ModelNotFoundError(
        f"no trained verifier in {where} ({folder} lacks {', '.join(missing)}): name one with "
        f"verifier=DIR, point {VERIFIER_ENV} at one, or make the packaged one with `{MAKE_VERIFIER}`"
    )


SHIPPED_PRUNER = Path(__file__).resolve().parent / "pruner"
MAKE_PRUNER = "make pruner"


def shipped_pruner_dir() -> Path:
    """The context pruner used when none is named (`src/verirag/learned/shipped/pruner/`, made by
    `make pruner`); ModelNotFoundError naming that command when it is missing."""
    from verirag.learned.pruner import ADAPTER_FILE as PRUNER_ADAPTER
    from verirag.learned.pruner import META_FILE as PRUNER_META

    missing = [f for f in (PRUNER_META, PRUNER_ADAPTER) if not (SHIPPED_PRUNER / f).is_file()]
    if missing:
        raise ModelNotFoundError(
            f"no context pruner in this installation of verirag ({SHIPPED_PRUNER} lacks {', '.join(missing)}): "
            f"name one with pruner=DIR, or make the packaged one with `{MAKE_PRUNER}`"
        )
    return SHIPPED_PRUNER
