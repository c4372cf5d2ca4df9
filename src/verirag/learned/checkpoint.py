"""A training run's state, saved as it goes so that a killed run resumes where it stopped instead of
starting over (an epoch of the pruner's six layers takes most of an hour on 2 cores, and a session
or a machine may end inside one).

Two files in a folder: `checkpoint.safetensors` (the tensors: parameters, the optimiser's moments,
the RNG state) and `checkpoint.json` (where the run is, its early-stopping state, and `key`, a digest
of what the run trains on and how). Never pickle. The JSON is written last and names the tensors
file's digest, so a run killed while saving leaves either the previous checkpoint or none that
loads; a checkpoint whose key differs (other data, other settings) is never resumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TENSORS_FILE = "checkpoint.safetensors"
META_FILE = "checkpoint.json"
FORMAT = "verirag.learned.checkpoint/1"
CHECKPOINT_SECONDS = 600.0  # how often a fit saves inside an epoch


def checkpoint_key(**what: Any) -> str:
    """A digest of what a run trains on and how (JSON-able values): its checkpoint's identity."""
    return hashlib.sha256(json.dumps(what, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_checkpoint(folder: str | Path, key: str, meta: dict[str, Any], tensors: dict[str, Any]) -> None:
    """Write `tensors` (name -> torch tensor) and `meta` (JSON-able) as the checkpoint of run `key`."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / (TENSORS_FILE + ".tmp")
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp))
    os.replace(tmp, folder / TENSORS_FILE)
    body = {"format": FORMAT, "key": key, "tensors_sha256": _sha256(folder / TENSORS_FILE), "meta": meta}
    tmp = folder / (META_FILE + ".tmp")
    tmp.write_text(json.dumps(body))
    os.replace(tmp, folder / META_FILE)


def load_checkpoint(folder: str | Path, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(meta, tensors) of run `key`'s checkpoint in `folder`; None when there is none, it is another
    run's, or it was left half-written."""
    from safetensors.torch import load_file

    folder = Path(folder)
    try:
        body = json.loads((folder / META_FILE).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if body.get("format") != FORMAT or body.get("key") != key:
        return None
    tensors_file = folder / TENSORS_FILE
    if not tensors_file.exists() or _sha256(tensors_file) != body.get("tensors_sha256"):
        return None
    return body["meta"], load_file(str(tensors_file))


def remove_checkpoint(folder: str | Path) -> None:
    """Delete a finished run's checkpoint (the folder too, when nothing else is in it)."""
    folder = Path(folder)
    for name in (META_FILE, TENSORS_FILE, META_FILE + ".tmp", TENSORS_FILE + ".tmp"):
        (folder / name).unlink(missing_ok=True)
    if folder.exists() and not any(folder.iterdir()):
        folder.rmdir()


def optimizer_tensors(opt) -> tuple[dict[str, Any], dict[str, Any]]:
    """A torch optimiser's state as (tensors, JSON-able rest), for `save_checkpoint`."""
    import torch

    state = opt.state_dict()
    tensors, scalars = {}, {}
    for idx, entries in state["state"].items():
        for name, value in entries.items():
            if isinstance(value, torch.Tensor):
                tensors[f"opt.{idx}.{name}"] = value
            else:
                scalars[f"{idx}.{name}"] = value
    return tensors, {"param_groups": state["param_groups"], "scalars": scalars}


def restore_optimizer(opt, tensors: dict[str, Any], rest: dict[str, Any]) -> None:
    """Load what `optimizer_tensors` gave back into `opt` (built over the same parameters)."""
    state: dict[int, dict[str, Any]] = {}
    for name, value in tensors.items():
        if name.startswith("opt."):
            _, idx, field = name.split(".", 2)
            state.setdefault(int(idx), {})[field] = value
    for name, value in rest["scalars"].items():
        idx, field = name.split(".", 1)
        state.setdefault(int(idx), {})[field] = value
    opt.load_state_dict({"state": state, "param_groups": rest["param_groups"]})


class ResumableFit:
    """A fit loop's checkpoint: its trained parameters (`params()`: name -> tensor), the optimiser,
    early stopping (`verirag.learned.training.EarlyStopping`), torch's (the GPU's too, where one is) and numpy's RNGs, and where in
    which epoch the run is. `save` every `CHECKPOINT_SECONDS` inside an epoch (`due`) and at each
    epoch's end; `resume` at the start; `finish` when the fit ends."""

    def __init__(self, folder, key: str, params: Callable[[], dict[str, Any]], opt, stop, rng, say):
        self.folder, self.key, self.params = Path(folder), key, params
        self.opt, self.stop, self.rng, self.say = opt, stop, rng, say
        self._saved_at = time.monotonic()

    def due(self) -> bool:
        return time.monotonic() - self._saved_at >= CHECKPOINT_SECONDS

    def save(self, epoch: int, order, losses: list[float]) -> None:
        """The state before `epoch`'s next step: inside it (`order`, `losses` so far) or at its start."""
        import numpy as np
        import torch

        tensors = {f"param.{n}": p for n, p in self.params().items()}
        tensors |= {f"best.{n}": t for n, t in (self.stop.best_state or {}).items()}
        opt_tensors, opt_rest = optimizer_tensors(self.opt)
        tensors |= opt_tensors
        tensors["rng.torch"] = torch.get_rng_state()
        if torch.cuda.is_available():  # dropout on a GPU draws from the device's generator
            tensors["rng.cuda"] = torch.cuda.get_rng_state()
        if order is not None:
            tensors["order"] = torch.as_tensor(np.asarray(order, dtype=np.int64))
        stop = self.stop
        meta = {
            "epoch": epoch,
            "losses": losses,
            "optimizer": opt_rest,
            "numpy_rng": self.rng.bit_generator.state,
            "stop": {
                "best_loss": list(stop.best_loss) if stop.best_loss is not None else None,
                "best_epoch": stop.best_epoch,
                "waited": stop.waited,
                "history": stop.history,
            },
        }
        save_checkpoint(self.folder, self.key, meta, tensors)
        self._saved_at = time.monotonic()

    def resume(self) -> tuple[int, tuple[Any, list[float]] | None]:
        """(first epoch to run, (order, losses) of a half-done one or None), the state restored."""
        import torch

        found = load_checkpoint(self.folder, self.key)
        if found is None:
            return 1, None
        meta, tensors = found
        with torch.no_grad():
            for n, p in self.params().items():
                p.copy_(tensors[f"param.{n}"])
        best = {n[len("best.") :]: t for n, t in tensors.items() if n.startswith("best.")}
        restore_optimizer(self.opt, tensors, meta["optimizer"])
        torch.set_rng_state(tensors["rng.torch"])
        if "rng.cuda" in tensors and torch.cuda.is_available():
            torch.cuda.set_rng_state(tensors["rng.cuda"])
        self.rng.bit_generator.state = meta["numpy_rng"]
        s, stop = meta["stop"], self.stop
        stop.best_loss = tuple(s["best_loss"]) if s["best_loss"] is not None else None
        stop.best_epoch, stop.waited, stop.history = s["best_epoch"], s["waited"], s["history"]
        stop.best_state = best or None
        epoch = meta["epoch"]
        half_done = (tensors["order"].numpy(), meta["losses"]) if "order" in tensors else None
        where = f"inside epoch {epoch}, {len(meta['losses'])} steps done" if half_done else f"at epoch {epoch}"
        self.say(f"resumed from {self.folder} {where}")
        return epoch, half_done

    def finish(self) -> None:
        remove_checkpoint(self.folder)
