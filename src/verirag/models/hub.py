"""Weights from the model hub (``huggingface_hub.hf_hub_download``), only when downloads are allowed:
``allow_download=True``, or ``allow_download=None`` and neither ``VERIRAG_OFFLINE`` nor
``HF_HUB_OFFLINE`` is set. With downloads off, a file already in the local hub cache is still used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from verirag.errors import ChecksumError
from verirag.models.hashing import check_preset_file
from verirag.models.presets import SENTENCE_TRANSFORMERS, ModelPreset
from verirag.models.source import Attempt, ResolvedModel, found_status
from verirag.settings import settings


def _offline_envs_set() -> list[str]:
    return list(settings().offline)


def downloads_allowed(allow_download: bool | None = None) -> bool:
    """True/False as given; None means: allowed unless VERIRAG_OFFLINE or HF_HUB_OFFLINE is set."""
    if allow_download is not None:
        return bool(allow_download)
    return not _offline_envs_set()


def offline_reason(allow_download: bool | None) -> str:
    """Why downloads are off, for messages."""
    if allow_download is False:
        return "downloads disabled (allow_download=False)"
    return f"downloads disabled ({', '.join(f'{v} set' for v in _offline_envs_set())})"


def _hub_cached(preset: ModelPreset) -> Path | None:
    """The preset's file in the local hub cache, found without any network access."""
    if preset.hub_repo is None or preset.hub_filename is None:
        return None
    try:
        import huggingface_hub

        hit = huggingface_hub.try_to_load_from_cache(preset.hub_repo, preset.hub_filename)
    except Exception:
        return None
    return Path(hit) if isinstance(hit, (str, os.PathLike)) and os.path.isfile(hit) else None


def hub_cached_model(repo_id: str) -> bool:
    """Whether the local hub cache holds model `repo_id` (its config.json), found without any network."""
    try:
        import huggingface_hub

        hit = huggingface_hub.try_to_load_from_cache(repo_id, "config.json")
    except Exception:
        return False
    return isinstance(hit, (str, os.PathLike)) and os.path.isfile(hit)


def find(preset: ModelPreset, at: Attempt) -> ResolvedModel | str | None:
    """The model from the hub (or its id, with at.hub_id), or from the hub cache when offline."""
    if preset.hub_repo is None:
        at.tried.append("hub: no hub source is known for this preset")
    elif downloads_allowed(at.allow_download):
        if at.hub_id:
            return preset.hub_repo
        try:
            import huggingface_hub

            if preset.kind == SENTENCE_TRANSFORMERS:
                folder = Path(huggingface_hub.snapshot_download(repo_id=preset.hub_repo))
                return ResolvedModel(preset.name, folder.absolute(), None, "hub", preset)
            assert preset.hub_filename is not None
            path = Path(
                huggingface_hub.hf_hub_download(repo_id=preset.hub_repo, filename=preset.hub_filename)
            ).absolute()
            sha = check_preset_file(path, preset, f"the file downloaded from {preset.hub_repo}", at.progress)
            return ResolvedModel(preset.name, path, sha, "hub", preset)
        except ChecksumError:
            raise
        except Exception as exc:
            at.tried.append(f"hub: {preset.hub_repo}: {type(exc).__name__}: {exc}")
    else:
        cached = _hub_cached(preset)
        if cached is not None:
            sha = check_preset_file(cached.absolute(), preset, "the hub-cached file", at.progress)
            return ResolvedModel(preset.name, cached.absolute(), sha, "hub", preset)
        at.tried.append(f"hub: {preset.hub_repo}: {offline_reason(at.allow_download)}, and not in the local hub cache")
    return None


def status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    hub_file = _hub_cached(preset)
    if hub_file is not None:
        return found_status(st, preset, "hub", hub_file, "in the local hub cache")
    if preset.hub_repo and downloads_allowed():
        st.update(
            location="hub", needs_download=True, detail=f"not installed; would be downloaded from {preset.hub_repo}"
        )
        return st
    return None
