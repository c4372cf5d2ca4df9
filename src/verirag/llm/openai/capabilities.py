"""What a server really offers: the capabilities it delivers, its context window, a tokenizer endpoint."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import httpx

from verirag.errors import BackendError, CapabilityError
from verirag.llm.base import LOGPROBS, NEXT_TOKEN, SCORE, GenerateOptions
from verirag.llm.openai.client import OpenAIClient

if TYPE_CHECKING:
    from verirag.llm.openai.backend import OpenAICompatibleLLM

log = logging.getLogger(__name__)


def probe(llm: OpenAICompatibleLLM) -> tuple[frozenset[str], dict[str, str]]:
    """Check LOGPROBS, NEXT_TOKEN and SCORE with one tiny request each: the ones that work, and per
    capability "ok" or why it failed."""
    chat = [{"role": "user", "content": "Say hello."}]

    def check_logprobs() -> None:
        if not llm.raw_generate(chat, GenerateOptions(max_tokens=2, logprobs=True, top_logprobs=2))[3]:
            raise CapabilityError("no token logprobs in the chat reply")

    checks = {
        LOGPROBS: check_logprobs,
        NEXT_TOKEN: lambda: llm.next_token_logprobs(chat, top_k=2),
        SCORE: lambda: llm.score("The capital of France is", " Paris"),
    }
    real = set()
    report = {}
    for name, check in checks.items():
        try:
            check()
        except CapabilityError as exc:
            report[name] = f"unsupported: {exc}"
        except BackendError as exc:
            report[name] = f"failed: {exc}"
        else:
            real.add(name)
            report[name] = "ok"
    return frozenset(real), report


def listed_context_window(models: list[dict[str, Any]], model: str) -> int | None:
    """vLLM lists max_model_len with each model, llama.cpp's server n_ctx_train; others say nothing."""
    for m in models:
        if (m.get("id") or m.get("name")) == model:
            for key in ("max_model_len", "context_length", "context_window", "n_ctx"):
                if isinstance(m.get(key), int) and m[key] > 0:
                    return int(m[key])
            meta = m.get("meta")
            if isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):
                return int(meta["n_ctx_train"])
    return None


class TokenizeEndpoint:
    """A server's tokenizer endpoint, looked for on first use: llama.cpp server (/tokenize),
    llama-cpp-python (/extras/tokenize), vLLM (/tokenize)."""

    def __init__(self, client: OpenAIClient, model: str):
        self.client = client
        self.model = model
        self._route: tuple[str, str] | bool | None = False  # False = not looked for yet

    def count(self, text: str) -> int | None:
        """The exact token count, or None when the server has no working endpoint."""
        if self._route is False:
            try:
                self._route = self._find()
            except httpx.HTTPError:
                self._route = None
        if self._route:
            url, style = self._route  # type: ignore[misc]
            try:
                return self._tokenize(url, style, text)
            except (BackendError, httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                log.debug("tokenize endpoint failed (%s); estimating", exc)
        return None

    def _find(self) -> tuple[str, str] | None:
        """(url, payload style) of the first route that answers, or None."""
        base = self.client.base_url
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        routes = [(f"{root}/extras/tokenize", "input"), (f"{root}/tokenize", "content"), (f"{root}/tokenize", "prompt")]
        for url, style in routes:
            try:
                self._tokenize(url, style, "hello")
            except (BackendError, ValueError, KeyError, TypeError):
                continue
            return url, style
        return None

    def _tokenize(self, url: str, style: str, text: str) -> int:
        response = self.client.http.post(url, json={style: text, "model": self.model})
        if response.status_code >= 400:
            raise BackendError(f"POST {url}: HTTP {response.status_code}")
        body = response.json()
        if isinstance(body.get("count"), int):
            return int(body["count"])
        tokens = body["tokens"]
        if not isinstance(tokens, list):
            raise TypeError("tokens is not a list")
        return len(tokens)
