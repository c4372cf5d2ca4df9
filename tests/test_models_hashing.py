"""sha256 fingerprints, cached per (path, size, mtime_ns) so big files are hashed once."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from verirag.models import cache_dir, hashing, models_dir
from verirag.models.hashing import dir_fingerprint, file_fingerprint, sha256_file


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VERIRAG_OFFLINE", "1")


@pytest.fixture
def counting(monkeypatch):
    calls = []
    real = hashing.sha256_file

    def counted(path, *a, **kw):
        calls.append(str(path))
        return real(path, *a, **kw)

    monkeypatch.setattr(hashing, "sha256_file", counted)
    return calls


def test_sha256_file_matches_hashlib_across_chunks(tmp_path):
    data = os.urandom(100_003)
    p = tmp_path / "f.bin"
    p.write_bytes(data)
    assert sha256_file(p, chunk=4096) == hashlib.sha256(data).hexdigest()
    assert sha256_file(p) == hashlib.sha256(data).hexdigest()
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    assert sha256_file(empty) == hashlib.sha256(b"").hexdigest()


def test_fingerprint_is_cached_in_sidecar(tmp_path, counting):
    p = tmp_path / "model.gguf"
    p.write_bytes(b"weights" * 1000)
    expected = hashlib.sha256(p.read_bytes()).hexdigest()
    assert file_fingerprint(p) == expected
    assert file_fingerprint(p) == expected
    assert file_fingerprint(str(p)) == expected
    assert len(counting) == 1
    store = json.loads((tmp_path / "cache" / "fingerprints.json").read_text())
    entry = store["files"][str(p.resolve())]
    assert entry["sha256"] == expected and entry["size"] == p.stat().st_size


def test_fingerprint_rehashes_a_changed_file(tmp_path, counting):
    p = tmp_path / "model.gguf"
    p.write_bytes(b"a" * 100)
    first = file_fingerprint(p)
    p.write_bytes(b"b" * 100)  # same size, new content and mtime
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    second = file_fingerprint(p)
    assert first != second == hashlib.sha256(b"b" * 100).hexdigest()
    assert len(counting) == 2


def test_fingerprint_survives_unwritable_store(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(blocker / "cache"))
    p = tmp_path / "f"
    p.write_bytes(b"data")
    assert file_fingerprint(p) == hashlib.sha256(b"data").hexdigest()


def test_corrupt_store_is_ignored(tmp_path, counting):
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "fingerprints.json").write_text("{not json")
    p = tmp_path / "f"
    p.write_bytes(b"data")
    assert file_fingerprint(p) == hashlib.sha256(b"data").hexdigest()
    assert file_fingerprint(p) == hashlib.sha256(b"data").hexdigest()
    assert len(counting) == 1


def test_dir_fingerprint_changes_with_content(tmp_path):
    d = tmp_path / "m"
    (d / "sub").mkdir(parents=True)
    (d / "a.json").write_text("{}")
    (d / "sub" / "w.bin").write_bytes(b"123")
    (d / ".cache").mkdir()
    (d / ".cache" / "junk").write_text("ignored")
    one = dir_fingerprint(d)
    (d / ".cache" / "junk").write_text("still ignored")
    assert dir_fingerprint(d) == one
    (d / "sub" / "w.bin").write_bytes(b"124")
    assert dir_fingerprint(d) != one


def test_cache_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "explicit"))
    assert cache_dir() == tmp_path / "explicit"
    assert models_dir() == tmp_path / "explicit" / "models"
    monkeypatch.delenv("VERIRAG_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "verirag"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "verirag"
