"""Where verirag keeps what it builds: assembled model files and the sha256 fingerprint store.

    cache_dir()  = $VERIRAG_CACHE_DIR, else $XDG_CACHE_HOME/verirag, else ~/.cache/verirag
    models_dir() = cache_dir() / "models"

Both are read from the environment (`verirag.settings`) at every call (tests and users can change
them at run time), and neither function creates the directory: the code that writes there does.
"""

from __future__ import annotations

from pathlib import Path

from verirag.settings import settings

CACHE_ENV = "VERIRAG_CACHE_DIR"


def cache_dir() -> Path:
    """The verirag cache directory (absolute, user-expanded; not created)."""
    return settings().cache_dir


def models_dir() -> Path:
    """Where assembled and verified model files live: ``cache_dir() / "models"``."""
    return cache_dir() / "models"
