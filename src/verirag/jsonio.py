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


class AppendedJsonl:
    """A JSONL file written one flushed, fsynced line at a time, so a killed run loses at most the
    line being written: a torn line is skipped on reading (counted in `unreadable_lines`) and the
    next write starts a fresh line. `load()` gives {record[key]: record}, the later of two lines
    with one key winning; a resumed run skips what it holds."""

    def __init__(self, path: str | os.PathLike, key: str, *, compact: bool = False):
        self.path = Path(path)
        self.key = key
        self.separators = (",", ":") if compact else None
        self.unreadable_lines = 0

    def load(self) -> dict[str, dict[str, Any]]:
        records: dict[str, dict[str, Any]] = {}
        self.unreadable_lines = 0
        if not self.path.exists():
            return records
        with open(self.path, "rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw.decode("utf-8"))
                    records[str(rec[self.key])] = rec
                except (ValueError, TypeError, KeyError, RecursionError):
                    self.unreadable_lines += 1
        return records

    def __enter__(self) -> AppendedJsonl:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a+b")
        self._f.seek(0, os.SEEK_END)
        if self._f.tell() > 0:
            self._f.seek(-1, os.SEEK_END)
            if self._f.read(1) != b"\n":  # the last run died mid-line
                self._f.write(b"\n")
        return self

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(strict_json(record), ensure_ascii=False, allow_nan=False, separators=self.separators)
        self._f.write(line.encode("utf-8") + b"\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def __exit__(self, *exc) -> None:
        self._f.close()

    def put_in_order(self, keys: list[str]) -> bool:
        """Rewrite the file (in one step, as `write_json`) so that the records `load()` reads for
        `keys` come last, in the order of `keys`; lines of other keys stay first, in their order;
        superseded and torn lines, which `load()` never reads, go. Nothing is rewritten (False)
        when the lines `load()` reads are already in that order (so an appended file stays as it
        was). Writers that finish out of order call it at the end."""
        if not self.path.exists():
            return False
        wanted = {k: i for i, k in enumerate(keys)}
        lines: list[tuple[str | None, bytes]] = []
        with open(self.path, "rb") as f:
            for raw in f:
                if not raw.strip():
                    continue
                try:
                    lines.append((str(json.loads(raw.decode("utf-8"))[self.key]), raw.rstrip(b"\n")))
                except (ValueError, TypeError, KeyError, RecursionError):
                    lines.append((None, b""))  # torn: dropped by a rewrite
        latest = {k: n for n, (k, _) in enumerate(lines) if k is not None}
        ours = sorted((n for k, n in latest.items() if k in wanted), key=lambda n: wanted[lines[n][0]])
        others = [n for n, (k, _) in enumerate(lines) if k is not None and k not in wanted and latest[k] == n]
        order = others + ours
        if order == sorted(order):
            return False
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as f:
            for n in order:
                f.write(lines[n][1] + b"\n")
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)
        return True
