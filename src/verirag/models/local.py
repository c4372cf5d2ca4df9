"""Weights already on this machine: a path given directly, a preset's environment variable
(``VERIRAG_MODEL_PATH_<NAME>``, at the file or a folder holding it), the verirag cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verirag.errors import ModelNotFoundError
from verirag.models.hashing import Progress, check_preset_file, dir_fingerprint, file_fingerprint
from verirag.models.presets import GGUF, SENTENCE_TRANSFORMERS, ModelPreset, preset_by_sha
from verirag.models.source import Attempt, ResolvedModel, cache_path, found_status
from verirag.settings import settings


def resolve_path(path: Path, progress: Progress | None) -> ResolvedModel:
    """A file (sha256, and the preset it is, if any) or a folder (`dir_fingerprint`) given directly."""
    if path.is_dir():
        return ResolvedModel(path.name, path, dir_fingerprint(path), "path", None)
    sha = file_fingerprint(path, progress=progress)
    preset = preset_by_sha(sha)
    return ResolvedModel(preset.name if preset else path.name, path, sha, "path", preset)


def find_env(preset: ModelPreset, at: Attempt) -> ResolvedModel | None:
    var = preset.env_var
    value = settings().model_path(preset.name) or ""
    if not value:
        at.tried.append(f"environment variable {var}: not set")
        return None
    path = Path(value).expanduser().absolute()
    if not path.exists():
        raise ModelNotFoundError(
            f"{var} is set to {value!r}, which does not exist. Point it at {preset.filename}, or unset it."
        )
    if preset.kind == SENTENCE_TRANSFORMERS:
        if not path.is_dir():
            raise ModelNotFoundError(
                f"{var} must point at a sentence-transformers model folder; {path} is not a folder"
            )
        return ResolvedModel(preset.name, path, None, "path", preset)
    if path.is_dir():
        inner = path / preset.filename
        if not inner.is_file():
            raise ModelNotFoundError(f"{var} points at the folder {path}, which does not contain {preset.filename}")
        path = inner
    sha = check_preset_file(path, preset, f"{var}:", at.progress)
    return ResolvedModel(preset.name, path, sha, "path", preset)


def env_status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    env_value = settings().model_path(preset.name) or ""
    if not env_value:
        return None
    p = Path(env_value).expanduser().absolute()
    if p.is_dir() and preset.kind == GGUF:
        p = p / preset.filename
    if p.exists():
        return found_status(st, preset, "path", p, f"from {preset.env_var}")
    st["detail"] = f"{preset.env_var} points at {p}, which does not exist"
    return st


def _in_cache(preset: ModelPreset) -> bool:
    path = cache_path(preset)
    return path.is_dir() if preset.kind == SENTENCE_TRANSFORMERS else path.is_file()


def find_cached(preset: ModelPreset, at: Attempt) -> ResolvedModel | None:
    path = cache_path(preset)
    if not _in_cache(preset):
        at.tried.append(f"cache: {path} absent")
        return None
    sha = (
        None
        if preset.kind == SENTENCE_TRANSFORMERS
        else check_preset_file(path, preset, "the cached file", at.progress)
    )
    return ResolvedModel(preset.name, path, sha, "cache", preset)


def cached_status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    if _in_cache(preset):
        return found_status(st, preset, "cache", cache_path(preset), "in the verirag cache")
    return None
