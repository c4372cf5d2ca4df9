"""Assembly of split model files: verified, atomic, locked, never deleting what is not its own."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import verirag
from verirag.errors import ChecksumError
from verirag.models.assemble import assemble_parts, build_file, temp_path
from verirag.models.hashing import cached_fingerprint


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VERIRAG_OFFLINE", "1")


def make_parts(directory: Path, sizes=(10_000, 7_777, 1), seed: int = 1):
    directory.mkdir(parents=True, exist_ok=True)
    paths, whole = [], b""
    for i, n in enumerate(sizes, 1):
        data = hashlib.sha256(f"{seed}-{i}".encode()).digest() * (n // 32 + 1)
        data = data[:n]
        p = directory / f"part{i}.bin"
        p.write_bytes(data)
        paths.append(p)
        whole += data
    return paths, whole, hashlib.sha256(whole).hexdigest()


def test_assemble_correct_sha_gives_the_file(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "out" / "model.gguf"
    seen = []
    out = assemble_parts(parts, dest, sha, len(whole), progress=lambda d, t: seen.append((d, t)), chunk_size=4096)
    assert out == dest.absolute()
    assert dest.read_bytes() == whole
    assert seen and seen[-1] == (len(whole), len(whole))
    assert not temp_path(dest.absolute()).exists()
    # the digest computed while writing is remembered: the file is not hashed again
    assert cached_fingerprint(dest) == sha
    # the parts are untouched
    assert all(p.exists() for p in parts)


def test_assemble_twice_returns_existing_without_rewriting(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "model.gguf"
    assemble_parts(parts, dest, sha, len(whole))
    mtime = dest.stat().st_mtime_ns
    calls = []
    assemble_parts(parts, dest, sha, len(whole), progress=lambda d, t: calls.append(d))
    assert calls == []
    assert dest.stat().st_mtime_ns == mtime


def test_assemble_wrong_sha_raises_and_leaves_nothing(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "model.gguf"
    wrong = "0" * 64
    with pytest.raises(ChecksumError) as err:
        assemble_parts(parts, dest, wrong, len(whole))
    assert wrong in str(err.value) and sha in str(err.value)
    assert not dest.exists()
    assert not temp_path(dest).exists()
    assert list(tmp_path.glob("model.partial-*")) == []
    assert all(p.exists() for p in parts)


def test_assemble_wrong_total_size_fails_before_writing(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "model.gguf"
    with pytest.raises(ChecksumError, match="add up to"):
        assemble_parts(parts[:-1], dest, sha, len(whole))
    assert not dest.exists() and not temp_path(dest).exists()


def test_existing_wrong_dest_is_reported_not_replaced(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "model.gguf"
    dest.write_bytes(b"x" * len(whole))  # right size, wrong content
    with pytest.raises(ChecksumError, match="delete it"):
        assemble_parts(parts, dest, sha, len(whole))
    assert dest.read_bytes() == b"x" * len(whole)


def test_interrupted_leftover_temp_is_not_used(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "model.gguf"
    # a half-written file from a crashed run of another process, and one with our own pid
    other = dest.with_suffix(".partial-999999")
    other.write_bytes(whole[: len(whole) // 2])
    own = temp_path(dest)
    own.write_bytes(b"garbage" * 10)
    out = assemble_parts(parts, dest, sha, len(whole))
    assert out.read_bytes() == whole
    assert not own.exists()  # our own temp was rewritten and moved into place
    assert other.read_bytes() == whole[: len(whole) // 2]  # someone else's file: never deleted


def test_interrupted_write_removes_only_its_temp(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts")
    dest = tmp_path / "model.gguf"

    def boom(done, total):
        if done > 5000:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble_parts(parts, dest, sha, len(whole), progress=boom, chunk_size=1024)
    assert not dest.exists() and not temp_path(dest).exists()
    assert assemble_parts(parts, dest, sha, len(whole)).read_bytes() == whole


def test_build_file_with_a_writer(tmp_path):
    data = b"hello model"
    sha = hashlib.sha256(data).hexdigest()
    dest = tmp_path / "m.gguf"
    out = build_file(dest, lambda tmp: tmp.write_bytes(data) and None, sha, len(data))
    assert out.read_bytes() == data
    with pytest.raises(ChecksumError):
        build_file(tmp_path / "n.gguf", lambda tmp: tmp.write_bytes(b"other") and None, sha)
    assert not (tmp_path / "n.gguf").exists()
    assert list(tmp_path.glob("n.partial-*")) == []


def test_two_threads_assemble_once(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts", sizes=(40_000, 30_000))
    dest = tmp_path / "out" / "model.gguf"
    barrier = threading.Barrier(2)
    built, errors = [], []

    def work(i):
        calls = []

        def slow(done, total):
            calls.append(done)
            time.sleep(0.01)

        try:
            barrier.wait()
            assemble_parts(parts, dest, sha, len(whole), progress=slow, chunk_size=4096)
        except BaseException as exc:
            errors.append(exc)
        built.append(bool(calls))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert sorted(built) == [False, True]  # exactly one built it, the other found it
    assert dest.read_bytes() == whole
    assert list(dest.parent.glob("model.partial-*")) == []


CHILD = r"""
import sys, time
from pathlib import Path
from verirag.models.assemble import assemble_parts
parts = [Path(p) for p in sys.argv[4:]]
dest, sha, size = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
go = dest.parent / "go"
print("READY", flush=True)
while not go.exists():
    time.sleep(0.005)
calls = []
def slow(done, total):
    calls.append(done)
    time.sleep(0.02)
assemble_parts(parts, dest, sha, size, progress=slow, chunk_size=4096)
print("BUILT" if calls else "FOUND", flush=True)
"""


def test_two_processes_assemble_once(tmp_path):
    parts, whole, sha = make_parts(tmp_path / "parts", sizes=(40_000, 30_000))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    dest = out_dir / "model.gguf"
    src = str(Path(verirag.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    args = [sys.executable, "-c", CHILD, str(dest), sha, str(len(whole)), *map(str, parts)]
    procs = [
        subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)
    ]
    for p in procs:
        assert p.stdout.readline().strip() == "READY"
    (out_dir / "go").touch()
    outputs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outputs.append(out.strip())
    assert sorted(outputs) == ["BUILT", "FOUND"]
    assert dest.read_bytes() == whole
    assert list(out_dir.glob("model.partial-*")) == []
