"""The context pruners this process has loaded: one per folder, shared by every pipeline, request
and grid unit that prunes with it (issue 48: a pruner is ~64 MB once its encoder is read, and the
threshold is a parameter of each pruning call, never a reason to load another).

    shared_pruner(None)      # the shipped pruner, loaded on the first call
    shared_pruner("runs/p")  # a saved one; saved again (its pruner.json is newer), it is read again
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

_LOADED: dict[str, tuple[int, Any]] = {}  # resolved folder -> (pruner.json's mtime_ns, the pruner)
_LOCK = threading.Lock()


def shared_pruner(directory: str | Path | None = None):
    """The ContextPruner saved in `directory` (None: the shipped one), loaded once per process; a
    missing or damaged one raises its VeriragError (ModelNotFoundError, InputError)."""
    from verirag.learned.pruner import META_FILE, ContextPruner
    from verirag.learned.shipped import shipped_pruner_dir

    path = Path(directory).expanduser().resolve() if directory else shipped_pruner_dir()
    meta = path / META_FILE
    stamp = meta.stat().st_mtime_ns if meta.is_file() else 0
    with _LOCK:
        held = _LOADED.get(str(path))
        if held is None or held[0] != stamp:  # the one it replaces is dropped, not kept beside it
            _LOADED[str(path)] = (stamp, ContextPruner.load(path))
        return _LOADED[str(path)][1]


def loaded_count() -> int:
    """How many pruners this process holds (one per folder in use)."""
    with _LOCK:
        return len(_LOADED)
