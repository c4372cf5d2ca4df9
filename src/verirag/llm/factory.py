"""Turn a model spec the user typed into a ready LLM, behind the request cache.

Specs:
    qwen2.5-1.5b, smollm2-135m, ...      a preset, run by llama.cpp (the embedded default)
    /path/to/model.gguf                  a local GGUF file, run by llama.cpp
    openai:MODEL  or  openai             an OpenAI-compatible endpoint (base URL and key from env:
                                         VERIRAG_OPENAI_BASE_URL / OPENAI_BASE_URL, *_API_KEY)
    http(s)://host:port/v1[#MODEL]       an OpenAI-compatible endpoint at that URL
    hf:ID_OR_PATH_OR_PRESET              HF transformers (GPU when present; attentions)
A process loads each distinct spec once: the generator and the judge share the weights.
"""

from __future__ import annotations

import atexit
import os
import threading

from verirag.llm.base import LLM
from verirag.llm.cache import RequestCache, default_cache_path
from verirag.llm.cached import CachedLLM
from verirag.settings import settings

_LOADED: dict[tuple, LLM] = {}
_LOCK = threading.Lock()


def cache_enabled() -> bool:
    return not settings().no_cache


def _build(spec: str, n_ctx: int, n_threads: int | None = None, timeout: float | None = None) -> LLM:
    if spec == "openai" or spec.startswith("openai:"):
        from verirag.llm.openai.backend import OpenAICompatibleLLM

        model = spec.split(":", 1)[1] if ":" in spec else None
        return OpenAICompatibleLLM(model=model or None, timeout=timeout)
    if spec.startswith(("http://", "https://")):
        from verirag.llm.openai.backend import OpenAICompatibleLLM

        url, _, model = spec.partition("#")
        return OpenAICompatibleLLM(base_url=url, model=model or None, timeout=timeout)
    if spec.startswith("hf:"):
        from verirag.llm.hf.backend import TransformersLLM

        target = spec[3:]
        from verirag.models import PRESETS, resolve_model

        if target in PRESETS:
            resolved = resolve_model(target)
            llm = TransformersLLM(str(resolved.path.parent), gguf_file=resolved.path.name)
            llm.model_id = spec  # "hf:qwen2.5-0.5b" names it better than the package folder
            return llm
        if target.endswith(".gguf") and os.path.isfile(target):
            return TransformersLLM(os.path.dirname(os.path.abspath(target)), gguf_file=os.path.basename(target))
        return TransformersLLM(target)
    from verirag.llm.llama_cpp_backend import LlamaCppLLM
    from verirag.models import resolve_model

    resolved = resolve_model(spec)
    return LlamaCppLLM(
        resolved.path, model_id=resolved.name, fingerprint=resolved.sha256, n_ctx=n_ctx, n_threads=n_threads
    )


def load_llm(
    spec: str,
    *,
    n_ctx: int = 4096,
    cache: RequestCache | bool | None = None,
    n_threads: int | None = None,
    timeout: float | None = None,
) -> LLM:
    """Load (once per process) the model named by `spec`; wrap it in the request cache unless
    `cache` is False or VERIRAG_NO_CACHE=1. `n_threads` (llama.cpp; default: every core): on a
    machine other processes keep busy, one thread can be many times faster than two that wait
    for each other. `timeout`: seconds an HTTP backend (openai:, http://) may take per request
    (default: VERIRAG_OPENAI_TIMEOUT, else 120); local backends ignore it."""
    # the engine is read from the environment when a GGUF model loads: a changed one loads anew
    key = (spec, n_ctx, n_threads, timeout, settings().llama_engine)
    with _LOCK:
        llm = _LOADED.get(key)
        if llm is None:
            llm = _build(spec, n_ctx, n_threads, timeout)
            _LOADED[key] = llm
    if cache is False or (cache is None and not cache_enabled()):
        return llm
    return CachedLLM(llm, cache if isinstance(cache, RequestCache) else shared_cache())


_CACHE: RequestCache | None = None


def shared_cache() -> RequestCache:
    """The process-wide request cache at the default path ($VERIRAG_CACHE_DIR/requests.sqlite).

    It follows the path: when $VERIRAG_CACHE_DIR changes, the next call opens the cache there, so
    that results never go to a cache the caller no longer names."""
    global _CACHE
    path = default_cache_path()
    if _CACHE is None or _CACHE.path != path:
        _CACHE = RequestCache(path)
    return _CACHE


@atexit.register
def unload_all() -> None:
    """Free every loaded model. Also runs at exit: llama.cpp's own finaliser fails when the
    interpreter has already torn down its bindings."""
    with _LOCK:
        for llm in _LOADED.values():
            llm.close()
        _LOADED.clear()
