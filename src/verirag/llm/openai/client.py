"""Speaking the OpenAI HTTP API: request bodies, JSON requests with retries, the reply's first choice.

Transport failures (connection refused, timeouts), HTTP 408/409/429 and 5xx are retried `max_retries`
times with exponential backoff (at least the server's Retry-After); every failure ends as a
BackendError that quotes the server's message.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import httpx

from verirag.errors import BackendError, InputError
from verirag.llm.base import GenerateOptions
from verirag.llm.chat_template import plain_messages
from verirag.settings import DEFAULT_OPENAI_TIMEOUT, settings
from verirag.types import Prompt

log = logging.getLogger(__name__)

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_BACKOFF = 30.0


class BackendHTTPError(BackendError):
    """The server answered with an HTTP error status (kept in `status_code`)."""

    def __init__(self, message: str, status_code: int, server_message: str = ""):
        super().__init__(message)
        self.status_code = status_code
        self.server_message = server_message


def normalize_base_url(url: str) -> str:
    """Strip trailing slashes; a URL with no path ("http://host:8000") gets the usual "/v1"."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise InputError(f"invalid base_url {url!r}: expected e.g. http://127.0.0.1:8000/v1")
    if parts.path in ("", "/"):
        url += "/v1"
    return url


class OpenAIClient:
    """One server's HTTP connection; settings not passed are read from the environment
    (`verirag.settings`: VERIRAG_OPENAI_BASE_URL, _API_KEY, _TIMEOUT, _MAX_RETRIES)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        *,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ):
        env = settings()
        base_url = base_url or env.openai_base_url
        if not base_url:
            raise InputError(
                "no OpenAI-compatible endpoint: pass base_url (e.g. "
                "http://127.0.0.1:8000/v1) or set VERIRAG_OPENAI_BASE_URL"
            )
        self.base_url = normalize_base_url(base_url)
        self.api_key = api_key if api_key is not None else env.openai_api_key
        # a service in front of this backend passes a timeout below its own request timeout (verirag serve)
        if timeout is None:
            timeout = env.openai_timeout if env.openai_timeout is not None else DEFAULT_OPENAI_TIMEOUT
        self.timeout = float(timeout)
        self.max_retries = max(0, int(max_retries if max_retries is not None else env.openai_max_retries))
        self.backoff = float(backoff)
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self.http = httpx.Client(
            base_url=self.base_url + "/", headers=headers, timeout=self.timeout, transport=transport
        )
        self._models: list[dict[str, Any]] | None = None

    def request(
        self, method: str, path: str, payload: dict[str, Any] | None = None, *, retries: int | None = None
    ) -> Any:
        """Send one request (with retries) and return the decoded JSON body."""
        url = path.lstrip("/")
        shown = f"{method} {self.base_url}/{url}"
        retries = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                response = self.http.request(method, url, json=payload)
            except httpx.TimeoutException as exc:
                error: BackendError = BackendError(
                    f"{shown}: no answer within {self.timeout:g}s ({type(exc).__name__})"
                )
                wait = None
            except httpx.TransportError as exc:
                error = BackendError(
                    f"{shown}: cannot reach the server ({exc or type(exc).__name__}); is it running at {self.base_url}?"
                )
                wait = None
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        snippet = response.text.strip()[:200]
                        raise BackendError(
                            f"{shown}: the server answered with a body that is not "
                            f"JSON (HTTP {response.status_code}): {snippet!r}"
                        ) from None
                msg = server_message(response)
                error = BackendHTTPError(
                    f"{shown}: HTTP {response.status_code}" + (f": {msg}" if msg else ""), response.status_code, msg
                )
                if response.status_code not in RETRY_STATUS:
                    raise error
                wait = retry_after(response)
            if attempt >= retries:
                if attempt:
                    error.args = (f"{error.args[0]} (after {attempt + 1} attempts)",)
                raise error
            delay = min(MAX_BACKOFF, self.backoff * (2**attempt))
            if wait is not None:
                delay = min(MAX_BACKOFF, max(delay, wait))
            log.warning("%s; retrying in %.1fs (%d/%d)", error, delay, attempt + 1, retries)
            time.sleep(delay)
            attempt += 1

    def list_models(self) -> list[dict[str, Any]]:
        """GET models, once."""
        if self._models is None:
            body = self.request("GET", "models")
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, list):
                # Ollama's native /api/tags style or other variants.
                data = body.get("models") if isinstance(body, dict) else None
            self._models = [m for m in (data or []) if isinstance(m, dict)]
        return self._models

    def close(self) -> None:
        self.http.close()


def request_body(
    model: str, prompt: Prompt, options: GenerateOptions, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The body for POST chat/completions (a chat prompt) or completions (a string prompt);
    `extra`: server-specific fields, which win over the others."""
    chat = not isinstance(prompt, str)
    logprobs, top_logprobs = options.logprobs, options.top_logprobs
    payload: dict[str, Any] = {
        "model": model,
        **({"messages": plain_messages(prompt)} if chat else {"prompt": prompt}),
        "max_tokens": int(options.max_tokens),
        "temperature": float(options.temperature),
        "seed": int(options.seed),
        "stream": False,
        **(extra or {}),
    }
    if options.stop:
        payload["stop"] = list(options.stop)
    if logprobs and chat:
        # top_logprobs is sent even when 0: some servers (llama-cpp-python) return no
        # logprobs at all without it.
        payload["logprobs"] = True
        payload["top_logprobs"] = max(0, int(top_logprobs))
    elif logprobs:
        # Legacy field: the number of alternatives per position. Some servers read 0 as
        # "no logprobs", so ask for at least one and trim the alternatives afterwards.
        payload["logprobs"] = max(1, int(top_logprobs))
    return payload


def first_choice(body: Any, shown: str) -> dict[str, Any]:
    """choices[0] of a reply; BackendError for an error object or a reply without choices."""
    if not isinstance(body, dict):
        raise BackendError(f"{shown}: unexpected response (not a JSON object): {str(body)[:200]!r}")
    if body.get("error"):
        err = body["error"]
        msg = err.get("message") if isinstance(err, dict) else err
        raise BackendError(f"{shown}: the server reported an error: {msg}")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise BackendError(f"{shown}: the server returned no choices: {json.dumps(body)[:300]}")
    return choices[0]


def server_message(response: httpx.Response) -> str:
    """The error message a server put in its body (OpenAI, FastAPI and plain-text styles)."""
    text = response.text.strip()
    try:
        body = response.json()
    except ValueError:
        return text[:500]
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if isinstance(err, str) and err:
            return err[:500]
        if body.get("detail"):
            return json.dumps(body["detail"])[:500] if not isinstance(body["detail"], str) else body["detail"][:500]
        if body.get("message"):
            return str(body["message"])[:500]
    return text[:500]


def retry_after(response: httpx.Response) -> float | None:
    """The server's Retry-After in seconds, if it sent one."""
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
