"""The environment variables verirag reads, in one place.

Everything else is configured by arguments (`PipelineConfig`, `ServiceConfig`, the CLI's options);
these are the few settings that belong to a machine or a deployment rather than to one call. Every
module reads them through `settings()`, which reads the environment at each call (a test or a
user may change it while the process runs) and answers a bad value with an `InputError` that
names the variable.

| variable | meaning | default |
|---|---|---|
| `VERIRAG_CACHE_DIR` | where verirag keeps assembled models, the request cache, converted HF weights | `$XDG_CACHE_HOME/verirag`, else `~/.cache/verirag` |
| `VERIRAG_NO_CACHE` | `1`: no request cache, every LLM call is made again | off |
| `VERIRAG_OFFLINE` | `1`: never download from the model hub (`HF_HUB_OFFLINE` counts too) | off |
| `VERIRAG_MODEL_PATH_<NAME>` | a model file (or the folder holding it) for preset NAME, e.g. `VERIRAG_MODEL_PATH_QWEN2_5_1_5B`; for an encoder without a preset, its folder | unset |
| `VERIRAG_DATA_DIR` | the benchmark data folder the dataset loaders read when given no path (the Makefile sets `../shared/data`) | unset: a loader given no path says so |
| `VERIRAG_VERIFIER_DIR` | a trained verifier folder used instead of the packaged one | the package's |
| `VERIRAG_THREADS` | llama.cpp threads of every model loaded without an explicit count | every core |
| `VERIRAG_N_BATCH` | llama.cpp decode batch in tokens (the grain of prefix reuse; part of the model's fingerprint) | 64 |
| `VERIRAG_PREFIX_REUSE` | `0`: do not reuse the KV cache of a shared prompt prefix | on |
| `VERIRAG_PREFIX_CACHE_MB` | memory for saved prefix states, in MB | 512 |
| `VERIRAG_LLAMA_ENGINE` | the llama.cpp build that runs GGUF models: `llama_cpp` (llama-cpp-python) or `ik` (ik_llama.cpp, the `ik` extra; part of the model's fingerprint) | `llama_cpp` |
| `VERIRAG_OPENAI_BASE_URL` | the OpenAI-compatible endpoint of `openai:MODEL` (`OPENAI_BASE_URL` too) | unset |
| `VERIRAG_OPENAI_API_KEY` | its key (`OPENAI_API_KEY` too) | unset |
| `VERIRAG_OPENAI_TIMEOUT` | seconds one HTTP request to it may take | 120 (`verirag serve`: a third of `--timeout`) |
| `VERIRAG_OPENAI_MAX_RETRIES` | retries of a failed request to it | 2 |
| `VERIRAG_API_KEY` | the bearer token `verirag serve` requires (`--api-key`) | unset |

Booleans accept 1/true/yes/on and 0/false/no/off (or empty); anything else is an InputError.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from verirag.errors import InputError

# The llama.cpp builds that can run GGUF models (`verirag.llm.llama_engine`), the default first.
LLAMA_ENGINES = ("llama_cpp", "ik")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}
MODEL_PATH_PREFIX = "VERIRAG_MODEL_PATH_"
OFFLINE_ENVS = ("VERIRAG_OFFLINE", "HF_HUB_OFFLINE")
DEFAULT_OPENAI_TIMEOUT = 120.0


def model_path_var(name: str) -> str:
    """`VERIRAG_MODEL_PATH_<NAME>`: upper case, every run of non-alphanumerics as one underscore
    (qwen2.5-1.5b -> VERIRAG_MODEL_PATH_QWEN2_5_1_5B)."""
    return MODEL_PATH_PREFIX + re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_")


@dataclass(frozen=True)
class Settings:
    """What the environment says (the module docstring's table); build it with `settings()`."""

    cache_dir: Path
    no_cache: bool = False
    offline: tuple[str, ...] = ()  # the offline variables that are set, e.g. ("VERIRAG_OFFLINE",)
    data_dir: Path | None = None
    verifier_dir: Path | None = None
    threads: int | None = None
    n_batch: int = 64
    prefix_reuse: bool = True
    prefix_cache_mb: float = 512.0
    llama_engine: str = "llama_cpp"
    openai_base_url: str | None = None
    openai_api_key: str | None = None
    openai_timeout: float | None = None  # None: not set (a caller picks its default)
    openai_max_retries: int = 2
    api_key: str | None = None
    model_paths: Mapping[str, str] = field(default_factory=dict)  # VERIRAG_MODEL_PATH_* -> value

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if env is None else env

        def text(name: str) -> str:
            return env.get(name, "").strip()

        def first(*names: str) -> str | None:
            return next((text(n) for n in names if text(n)), None)

        def flag(name: str, default: bool) -> bool:
            raw = text(name).lower()
            if not raw:
                return default
            if raw in _TRUE:
                return True
            if raw in _FALSE:
                return False
            raise InputError(f"{name} must be 1/true/yes/on or 0/false/no/off, got {env[name]!r}")

        def number(name: str, kind: type, default, *, least: float) -> int | float | None:
            raw = text(name)
            if not raw:
                return default
            try:
                value = kind(raw)
            except ValueError:
                value = None
            if value is None or value < least:
                what = "an integer" if kind is int else "a number"
                raise InputError(f"{name} must be {what} of at least {least:g}, got {env[name]!r}")
            return value

        def choice(name: str, options: tuple[str, ...]) -> str:
            raw = text(name).lower() or options[0]
            if raw not in options:
                raise InputError(f"{name} must be one of {', '.join(options)}, got {env[name]!r}")
            return raw

        def path(name: str) -> Path | None:
            return Path(text(name)).expanduser() if text(name) else None

        cache = path("VERIRAG_CACHE_DIR")
        if cache is None:
            xdg = text("XDG_CACHE_HOME")
            cache = (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "verirag"
        return cls(
            cache_dir=cache.absolute(),
            no_cache=flag("VERIRAG_NO_CACHE", False),
            # HF_HUB_OFFLINE is the hub library's own variable: read as leniently as it reads it
            offline=tuple(n for n in OFFLINE_ENVS if text(n).lower() not in _FALSE),
            data_dir=path("VERIRAG_DATA_DIR"),
            verifier_dir=path("VERIRAG_VERIFIER_DIR"),
            threads=number("VERIRAG_THREADS", int, None, least=1),
            n_batch=number("VERIRAG_N_BATCH", int, 64, least=1),
            prefix_reuse=flag("VERIRAG_PREFIX_REUSE", True),
            prefix_cache_mb=number("VERIRAG_PREFIX_CACHE_MB", float, 512.0, least=0),
            llama_engine=choice("VERIRAG_LLAMA_ENGINE", LLAMA_ENGINES),
            openai_base_url=first("VERIRAG_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
            openai_api_key=first("VERIRAG_OPENAI_API_KEY", "OPENAI_API_KEY"),
            openai_timeout=number("VERIRAG_OPENAI_TIMEOUT", float, None, least=0.001),
            openai_max_retries=number("VERIRAG_OPENAI_MAX_RETRIES", int, 2, least=0),
            api_key=text("VERIRAG_API_KEY") or None,
            model_paths=MappingProxyType(
                {k: v.strip() for k, v in env.items() if k.startswith(MODEL_PATH_PREFIX) and v.strip()}
            ),
        )

    def model_path(self, name: str) -> str | None:
        """The value of `VERIRAG_MODEL_PATH_<NAME>` for a preset or encoder name, or None."""
        return self.model_paths.get(model_path_var(name))


def settings() -> Settings:
    """The settings as the environment gives them now."""
    return Settings.from_env()
