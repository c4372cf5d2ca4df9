"""Where `scripts/build_ik_llama_cpp.sh` leaves ik_llama.cpp built for this CPU, so that the ik engine
(VERIRAG_LLAMA_ENGINE=ik) loads it without IK_LLAMA_CPP_LIB_PATH being exported by hand.

The build is kept per CPU: its folder is named by a hash of the package version, the CPU's flags and
the architecture, computed here exactly as the script computes it, so a build made on another machine
(a copied cache) is never picked up. Without it the `ik-llama-cpp-python` wheel's own library loads,
built for AVX2, which reads slower than this project's llama.cpp on AVX-512 (docs/results/pruning.md).
"""

from __future__ import annotations

import hashlib
import os
import platform
from pathlib import Path

# the ik-llama-cpp-python version the script builds (its IK_LLAMA_CPP_VERSION default; pyproject's `ik` extra)
IK_VERSION = "0.1.5"
LIB_ENV = "IK_LLAMA_CPP_LIB_PATH"  # the package loads the library this names


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The first `flags` line of /proc/cpuinfo, whole ("" where there is none), as the script greps it."""
    try:
        with cpuinfo.open(encoding="utf-8", errors="replace") as fh:
            return next((line.rstrip("\n") for line in fh if line.startswith("flags")), "")
    except OSError:
        return ""


def build_tag(version: str = IK_VERSION, flags: str | None = None, machine: str | None = None) -> str:
    """The script's tag: sha256 of "VERSION native FLAGS MACHINE", its first 12 hex digits."""
    flags = cpu_flags() if flags is None else flags
    machine = platform.machine() if machine is None else machine
    return hashlib.sha256(f"{version} native {flags} {machine}".encode()).hexdigest()[:12]


def build_dir(tag: str | None = None) -> Path:
    """The script's output folder for this CPU (under $XDG_CACHE_HOME or ~/.cache, as the script's)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "verirag" / f"ik-llama-cpp-native-{tag or build_tag()}"


def native_library() -> Path | None:
    """The library built for this CPU, or None when the script has not finished a build here."""
    out = build_dir()
    lib = out / "build" / "vendor" / "ik_llama.cpp" / "src" / "libllama.so"
    return lib if (out / "built").is_file() and lib.is_file() else None


def use_native_library() -> Path | None:
    """Point the package at this CPU's build, unless the environment already names a library;
    the library it will load (None: the package's own wheel library)."""
    named = os.environ.get(LIB_ENV)
    if named:
        return Path(named)
    lib = native_library()
    if lib is not None:
        os.environ[LIB_ENV] = str(lib)
    return lib
