"""sha256 of model files, computed once per file version.

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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from verirag.models.cache_dir import cache_dir

log = logging.getLogger(__name__)

CHUNK = 8 * 1024 * 1024  # 8 MiB
STORE_NAME = "fingerprints.json"
STORE_VERSION = 1

Progress = Callable[[int, int], None]  # (bytes done, bytes total)


def sha256_file(path: str | os.PathLike[str], chunk: int = CHUNK,
                progress: Progress | None = None) -> str:
    """Hex sha256 of the file's bytes, read `chunk` bytes at a time."""
    path = Path(path)
    total = path.stat().st_size
    h = hashlib.sha256()
    buf = bytearray(chunk)
    view = memoryview(buf)
    done = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            done += n
            if progress is not None:
                progress(done, total)
    return h.hexdigest()


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
    if (isinstance(entry, dict) and entry.get("size") == key[1]
            and entry.get("mtime_ns") == key[2] and isinstance(entry.get("sha256"), str)):
        return entry["sha256"]
    return None


def _record(key: tuple[str, int, int], digest: str) -> None:
    """Store the digest for this (path, size, mtime_ns); one entry per path, stale ones pruned."""
    store = _store_path()
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(store) + ".lock", timeout=30):
            files = _read_store(store)
            files[key[0]] = {"size": key[1], "mtime_ns": key[2], "sha256": digest}
            # Forget files that no longer exist, so the store stays small.
            files = {p: e for p, e in files.items() if os.path.exists(p)}
            tmp = store.with_name(f"{store.name}.tmp-{os.getpid()}")
            tmp.write_text(json.dumps({"version": STORE_VERSION, "files": files}, indent=1,
                                      sort_keys=True), encoding="utf-8")
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
