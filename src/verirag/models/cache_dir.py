"""Where verirag keeps what it builds: assembled model files and the sha256 fingerprint store.

    cache_dir()  = $VERIRAG_CACHE_DIR, else $XDG_CACHE_HOME/verirag, else ~/.cache/verirag
    models_dir() = cache_dir() / "models"

Both are read from the environment at every call (tests and users can change them at run time),
and neither function creates the directory: the code that writes there does.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "VERIRAG_CACHE_DIR"


def cache_dir() -> Path:
    """The verirag cache directory (absolute, user-expanded; not created)."""
    explicit = os.environ.get(CACHE_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser().absolute()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg:
        return (Path(xdg).expanduser() / "verirag").absolute()
    return (Path.home() / ".cache" / "verirag").absolute()


def models_dir() -> Path:
    """Where assembled and verified model files live: ``cache_dir() / "models"``."""
    return cache_dir() / "models"
