"""The CLI is thin: `train stack` is its own command, no command writes the environment, and the
VERIRAG_* variables are read through one settings object."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import verirag
from verirag.cli import app
from verirag.errors import InputError
from verirag.settings import Settings, settings

CLI_DIR = Path(verirag.__file__).parent / "cli"
LAB_CLI_DIR = Path(__file__).resolve().parents[1] / "lab" / "src" / "verirag_lab" / "cli"
STACK_ONLY = (
    "--methods",
    "--features",
    "--impute",
    "--folds",
    "--label",
    "--resamples",
    "--c",
    "--verifier",
    "--cross-fit",
)
VERIFIER_ONLY = ("--encoder", "--epochs", "--train-layers", "--lora-rank", "--candidates", "--read-top")


def options_of(*command: str) -> set[str]:
    r = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert r.exit_code == 0, r.output
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", r.output))


def test_train_stack_is_its_own_command_with_only_its_options():
    stack = options_of("train", "stack")
    assert set(STACK_ONLY) <= stack and "--out" in stack and "--seed" in stack
    assert not stack & set(VERIFIER_ONLY)
    assert stack - {"--help"} == {*STACK_ONLY, "--model", "--out", "--seed"}
    verifier = options_of("train", "verifier")
    assert set(VERIFIER_ONLY) <= verifier
    assert not verifier & {*STACK_ONLY, "--stack"}  # the old spelling is hidden, and answered with the new


def test_train_verifier_stack_names_the_new_command(capsys):
    from verirag.cli import main

    assert main(["train", "verifier", "--stack", "runs/x", "--out", "s.json"]) == 2
    assert "verirag train stack runs/x" in capsys.readouterr().err


def test_no_cli_module_writes_the_environment():
    writes = re.compile(r"os\.environ\s*(\[[^\]]*\]\s*=|\.(setdefault|update|pop|clear)\b)|os\.(putenv|unsetenv)\b")
    modules = sorted(CLI_DIR.glob("*.py")) + sorted(LAB_CLI_DIR.glob("*.py"))  # the lab's commands too
    assert {"__init__.py", "ask.py", "train.py", "serve.py", "verify.py", "eval.py"} <= {p.name for p in modules}
    for path in modules:
        text = path.read_text(encoding="utf-8")
        assert not writes.search(text), f"{path.name} writes os.environ"
        assert "os.environ" not in text, f"{path.name} reads os.environ: read verirag.settings instead"


def test_settings_read_the_environment_at_each_call(monkeypatch, tmp_path):
    monkeypatch.setenv("VERIRAG_THREADS", "3")
    monkeypatch.setenv("VERIRAG_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("VERIRAG_MODEL_PATH_QWEN2_5_1_5B", str(tmp_path / "m.gguf"))
    s = settings()
    assert s.threads == 3 and s.cache_dir == (tmp_path / "c").absolute()
    assert s.model_path("qwen2.5-1.5b") == str(tmp_path / "m.gguf") and s.model_path("qwen2.5-0.5b") is None
    with pytest.raises(AttributeError):
        s.threads = 4  # frozen
    monkeypatch.setenv("VERIRAG_THREADS", "1")
    assert settings().threads == 1
    from verirag.llm.llama_cpp_backend import threads_from_env
    from verirag.models.cache_dir import cache_dir

    assert threads_from_env() == 1 and cache_dir() == (tmp_path / "c").absolute()


@pytest.mark.parametrize(
    "name, value",
    [
        ("VERIRAG_THREADS", "0"),
        ("VERIRAG_THREADS", "two"),
        ("VERIRAG_N_BATCH", "-1"),
        ("VERIRAG_OPENAI_TIMEOUT", "soon"),
        ("VERIRAG_OPENAI_MAX_RETRIES", "1.5"),
        ("VERIRAG_NO_CACHE", "maybe"),
    ],
)
def test_a_bad_value_is_an_input_error_that_names_the_variable(name, value):
    with pytest.raises(InputError, match=rf"{name} must be .*{re.escape(repr(value))}"):
        Settings.from_env({name: value})


def test_defaults_and_the_openai_fallback_names():
    s = Settings.from_env({"OPENAI_BASE_URL": "http://h:1/v1", "HF_HUB_OFFLINE": "1"})
    assert s.openai_base_url == "http://h:1/v1" and s.offline == ("HF_HUB_OFFLINE",)
    assert s.n_batch == 64 and s.prefix_reuse and s.openai_timeout is None and s.openai_max_retries == 2
    assert Settings.from_env(
        {"VERIRAG_OPENAI_BASE_URL": "http://a/v1", "OPENAI_BASE_URL": "http://b/v1"}
    ).openai_base_url == ("http://a/v1")


def test_the_service_passes_the_backend_timeout_as_a_parameter(monkeypatch):
    from verirag.server.service import ServiceConfig

    monkeypatch.delenv("VERIRAG_OPENAI_TIMEOUT", raising=False)
    assert ServiceConfig(request_timeout=300).resolved_backend_timeout() == 100
    assert ServiceConfig(request_timeout=6).resolved_backend_timeout() == 5
    assert ServiceConfig(backend_timeout=7).resolved_backend_timeout() == 7
    monkeypatch.setenv("VERIRAG_OPENAI_TIMEOUT", "9")  # the user's setting stands: the backend reads it
    assert ServiceConfig().resolved_backend_timeout() is None


def test_the_llm_factory_takes_the_backend_timeout(monkeypatch):
    from verirag.llm.factory import load_llm

    monkeypatch.delenv("VERIRAG_OPENAI_TIMEOUT", raising=False)
    llm = load_llm("http://127.0.0.1:9/v1#m", timeout=7.0, cache=False)  # nothing listens: no request is made
    assert llm.client.timeout == 7.0
    assert load_llm("http://127.0.0.1:9/v1#m", cache=False).client.timeout == 120.0
