"""sha256 of model files, computed once per file version, and the check of a file against its preset.

`sha256_file` always reads the whole file. `file_fingerprint` returns the same digest but keeps it in
a small JSON store (``cache_dir()/fingerprints.json``) keyed by the file's absolute path and checked
against its size and mtime_ns, so a 1 GB model is hashed on first use only, not at every start.
A file that changes (other size or mtime) is hashed again. If the store cannot be written (read-only
home, full disk) the digest is still returned; only the caching is lost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from filelock import FileLock, Timeout

from verirag.errors import ChecksumError
from verirag.models.cache_dir import cache_dir
from verirag.models.presets import ModelPreset

log = logging.getLogger(__name__)

CHUNK = 8 * 1024 * 1024  # 8 MiB
STORE_NAME = "fingerprints.json"
STORE_VERSION = 1

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def hash_copy(
    sources: Sequence[str | os.PathLike[str]],
    out: BinaryIO | None = None,
    chunk: int = CHUNK,
    progress: Progress | None = None,
) -> str:
    """Hex sha256 of the files' bytes read in order, `chunk` bytes at a time, written on to `out`
    as well when given (assembling split parts)."""
    paths = [Path(p) for p in sources]
    total = sum(p.stat().st_size for p in paths)
    h = hashlib.sha256()
    buf = bytearray(chunk)
    view = memoryview(buf)
    done = 0
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while n := f.readinto(buf):
                h.update(view[:n])
                if out is not None:
                    out.write(view[:n])
                done += n
                if progress is not None:
                    progress(done, total)
    return h.hexdigest()


def sha256_file(path: str | os.PathLike[str], chunk: int = CHUNK, progress: Progress | None = None) -> str:
    """Hex sha256 of the file's bytes, read `chunk` bytes at a time."""
    return hash_copy([path], chunk=chunk, progress=progress)


def _store_path() -> Path:
    return cache_dir() / STORE_NAME


def _key(path: Path) -> tuple[str, int, int]:
    real = path.resolve()
    st = real.stat()
    return str(real), st.st_size, st.st_mtime_ns


def _read_store(store: Path) -> dict[str, Any]:
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != STORE_VERSION:
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _lookup(key: tuple[str, int, int]) -> str | None:
    entry = _read_store(_store_path()).get(key[0])
    if (
        isinstance(entry, dict)
        and entry.get("size") == key[1]
        and entry.get("mtime_ns") == key[2]
        and isinstance(entry.get("sha256"), str)
    ):
        return entry["sha256"]
    return None


def _record(key: tuple[str, int, int], digest: str) -> None:
    """Store the digest for this (path, size, mtime_ns); one entry per path, stale ones dropped."""
    store = _store_path()
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(store) + ".lock", timeout=30):
            files = _read_store(store)
            files[key[0]] = {"size": key[1], "mtime_ns": key[2], "sha256": digest}
            # Forget files that no longer exist, so the store stays small.
            files = {p: e for p, e in files.items() if os.path.exists(p)}
            tmp = store.with_name(f"{store.name}.tmp-{os.getpid()}")
            tmp.write_text(
                json.dumps({"version": STORE_VERSION, "files": files}, indent=1, sort_keys=True), encoding="utf-8"
            )
            os.replace(tmp, store)
    except (OSError, Timeout) as exc:  # caching is an optimisation; never fail because of it
        log.debug("could not update fingerprint store %s: %s", store, exc)


def record_fingerprint(path: str | os.PathLike[str], digest: str) -> None:
    """Tell the store the sha256 of a file just written and verified (so it is not hashed again)."""
    _record(_key(Path(path)), digest)


def cached_fingerprint(path: str | os.PathLike[str]) -> str | None:
    """The stored sha256 of this file version, or None if it would have to be hashed. Never hashes."""
    try:
        return _lookup(_key(Path(path)))
    except OSError:
        return None


def file_fingerprint(path: str | os.PathLike[str], progress: Progress | None = None) -> str:
    """sha256 of a file, from the store when (absolute path, size, mtime_ns) is unchanged."""
    path = Path(path)
    key = _key(path)
    digest = _lookup(key)
    if digest is not None:
        return digest
    digest = sha256_file(path, progress=progress)
    # The file may have changed while it was hashed: store only if it did not.
    if _key(path) == key:
        _record(key, digest)
    return digest


def dir_fingerprint(path: str | os.PathLike[str]) -> str:
    """sha256 identifying a model folder: over the sorted (relative path, size, file sha256) of every
    file in it (hidden files and folders such as .git or .cache skipped). Each file's digest goes
    through `file_fingerprint`, so the folder is read once."""
    root = Path(path)
    h = hashlib.sha256()
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        h.update(f"{rel.as_posix()}\0{file.stat().st_size}\0{file_fingerprint(file)}\n".encode())
    return h.hexdigest()


def check_preset_file(path: Path, preset: ModelPreset, origin: str, progress: Progress | None) -> str:
    """sha256 of `path` if it is the preset's file; ChecksumError naming both digests if not."""
    if preset.size is not None:
        size = path.stat().st_size
        if size != preset.size:
            raise ChecksumError(
                f"{origin} {path} has {size:,} bytes, but preset {preset.name!r} is "
                f"{preset.filename} with {preset.size:,} bytes (sha256 {preset.sha256}). "
                f"To use a different file pass its path directly (--model PATH)."
            )
    actual = file_fingerprint(path, progress=progress)
    if preset.sha256 is not None and actual != preset.sha256:
        raise ChecksumError(
            f"{origin} {path} has sha256 {actual}, but preset {preset.name!r} expects "
            f"{preset.sha256} ({preset.filename}). To use a different file pass its path "
            f"directly (--model PATH)."
        )
    return actual
