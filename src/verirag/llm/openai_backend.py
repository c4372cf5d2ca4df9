"""OpenAI-compatible HTTP backend: vLLM, Ollama, llama.cpp's servers, OpenAI itself.

    llm = OpenAICompatibleLLM("http://127.0.0.1:8000/v1")      # model: first id of GET /models
    llm.generate([{"role": "user", "content": "Hi"}], logprobs=True, top_logprobs=5)
    llm.probe()   # what this server really delivers: {"logprobs", "next_token", "score"} or fewer

Configuration, when not passed explicitly:
    base_url  <- $VERIRAG_OPENAI_BASE_URL, then $OPENAI_BASE_URL (a bare "http://host:port" gets "/v1")
    api_key   <- $VERIRAG_OPENAI_API_KEY, then $OPENAI_API_KEY (local servers need none)
    model     <- $VERIRAG_OPENAI_MODEL, then the first id that GET {base_url}/models lists
    timeout   <- $VERIRAG_OPENAI_TIMEOUT (seconds per request, default 120); retries <- $VERIRAG_OPENAI_MAX_RETRIES (2)

Requests:
    chat prompts   -> POST /chat/completions (logprobs=true, top_logprobs=k)
    string prompts -> POST /completions      (legacy logprobs=k)
    score()        -> POST /completions with echo=true, logprobs=1 and max_tokens=1 (not 0, which
                      llama-cpp-python reads as "unlimited"): the prompt's own token logprobs,
                      read over the continuation's character span; the generated token is ignored.
                      Needs a string prompt, or a `chat_template` (Jinja) to render chat prompts.

Capabilities are declared optimistically (LOGPROBS, NEXT_TOKEN, SCORE; never EXACT_NEXT_TOKEN: an
HTTP API only shows the top-k); a server that does not deliver makes the call raise CapabilityError,
never fake numbers. `probe()` checks each with one tiny request and narrows `capabilities`.

Prefix reuse is the server's business here: verirag sends whole prompts (a continued conversation,
as `self_check` asks, goes as messages with the reply's text; generated token ids are not sent), and
a server reads each one again unless it caches prompt prefixes itself (vLLM's automatic prefix
caching, llama.cpp server's prompt cache). The "shared" prompt layout helps those caches as it helps
ours. Whether a server's cached prefix gives bitwise the numbers of a fresh read is its own matter.

Transport failures (connection refused, timeouts), HTTP 429 and 5xx are retried `max_retries` times
with exponential backoff; every failure ends as a BackendError that quotes the server's message.
"""
from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx

from verirag.errors import BackendError, CapabilityError, InputError
from verirag.llm.base import DEFAULT_SEED, LLM, LOGPROBS, NEXT_TOKEN, SCORE
from verirag.llm.chat_template import plain_messages, render_chat, validate_messages
from verirag.types import ContinuationScore, Generation, Prompt, TokenLogprob

log = logging.getLogger(__name__)

BASE_URL_ENVS = ("VERIRAG_OPENAI_BASE_URL", "OPENAI_BASE_URL")
API_KEY_ENVS = ("VERIRAG_OPENAI_API_KEY", "OPENAI_API_KEY")
MODEL_ENV = "VERIRAG_OPENAI_MODEL"
TIMEOUT_ENV = "VERIRAG_OPENAI_TIMEOUT"        # seconds per HTTP request (default 120)
RETRIES_ENV = "VERIRAG_OPENAI_MAX_RETRIES"    # retries of a failed request (default 2)
MAX_TOP_LOGPROBS = 20          # OpenAI's limit on top_logprobs; most servers accept at least this
DEFAULT_CONTEXT_WINDOW = 4096
RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
MAX_BACKOFF = 30.0


class BackendHTTPError(BackendError):
    """The server answered with an HTTP error status (kept in `status_code`)."""

    def __init__(self, message: str, status_code: int, server_message: str = ""):
        super().__init__(message)
        self.status_code = status_code
        self.server_message = server_message


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    return None


def normalize_base_url(url: str) -> str:
    """Strip trailing slashes; a URL with no path ("http://host:8000") gets the usual "/v1"."""
    url = url.strip().rstrip("/")
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise InputError(f"invalid base_url {url!r}: expected e.g. http://127.0.0.1:8000/v1")
    if parts.path in ("", "/"):
        url += "/v1"
    return url


def _server_message(response: httpx.Response) -> str:
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
            return json.dumps(body["detail"])[:500] if not isinstance(body["detail"], str) \
                else body["detail"][:500]
        if body.get("message"):
            return str(body["message"])[:500]
    return text[:500]


def _float(value: Any) -> float:
    """A logprob from JSON; None (no conditional probability) becomes nan."""
    if value is None:
        return math.nan
    return float(value)


def _sorted_top(pairs) -> list[tuple[str, float]]:
    """Alternatives, most likely first (servers may append the chosen token out of order)."""
    return sorted(pairs, key=lambda kv: -kv[1] if not math.isnan(kv[1]) else math.inf)


def parse_chat_logprobs(choice: dict[str, Any], top_n: int) -> list[TokenLogprob] | None:
    """choices[i].logprobs.content[j].{token, logprob, top_logprobs[{token, logprob}]} -> tokens.

    Returns None when the choice carries no logprobs at all.
    """
    lp = choice.get("logprobs")
    if not isinstance(lp, dict):
        return None
    content = lp.get("content")
    if content is None:
        # Some servers answer chat requests in the legacy layout.
        if "tokens" in lp:
            return parse_legacy_logprobs(lp, top_n)
        return None
    tokens = []
    for item in content:
        top = _sorted_top((str(t.get("token", "")), _float(t.get("logprob")))
                          for t in (item.get("top_logprobs") or []) if isinstance(t, dict))
        tokens.append(TokenLogprob(token=str(item.get("token", "")),
                                   logprob=_float(item.get("logprob")), top=top[:top_n]))
    return tokens


def parse_legacy_logprobs(lp: dict[str, Any] | None, top_n: int) -> list[TokenLogprob] | None:
    """The completions layout: {tokens[], token_logprobs[], top_logprobs[{token: logprob}]}."""
    if not isinstance(lp, dict) or not lp.get("tokens") and not lp.get("token_logprobs"):
        return None
    toks = lp.get("tokens") or []
    lps = lp.get("token_logprobs") or []
    tops = lp.get("top_logprobs") or []
    out = []
    for i, tok in enumerate(toks):
        top_d = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        top = _sorted_top((str(t), _float(v)) for t, v in top_d.items())
        out.append(TokenLogprob(token=str(tok), logprob=_float(lps[i] if i < len(lps) else None),
                                top=top[:top_n]))
    return out


class OpenAICompatibleLLM(LLM):
    """An LLM served over the OpenAI HTTP API (see the module docstring)."""

    backend = "openai"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, timeout: float | None = None, max_retries: int | None = None,
                 context_window: int | None = None, chat_template: str | None = None, *,
                 backoff: float = 0.5, transport: httpx.BaseTransport | None = None,
                 extra_body: dict[str, Any] | None = None):
        base_url = base_url or _env(*BASE_URL_ENVS)
        if not base_url:
            raise InputError("no OpenAI-compatible endpoint: pass base_url (e.g. "
                             "http://127.0.0.1:8000/v1) or set VERIRAG_OPENAI_BASE_URL")
        self.base_url = normalize_base_url(base_url)
        self.api_key = api_key if api_key is not None else _env(*API_KEY_ENVS)
        # a service in front of this backend sets them below its own request timeout (verirag serve)
        self.timeout = float(timeout if timeout is not None else _env(TIMEOUT_ENV) or 120)
        self.max_retries = max(0, int(max_retries if max_retries is not None else _env(RETRIES_ENV) or 2))
        self.backoff = float(backoff)
        self.chat_template = chat_template
        # Server-specific sampling fields sent with every generation request, e.g.
        # {"repeat_penalty": 1.0} so that llama-cpp-python's server (default 1.1) decodes greedily.
        self.extra_body = dict(extra_body or {})
        self._echo_aligned: bool | None = None
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        self._client = httpx.Client(base_url=self.base_url + "/", headers=headers,
                                    timeout=self.timeout, transport=transport)
        self._models_listing: list[dict[str, Any]] | None = None
        self._tokenize_route: tuple[str, str] | None | bool = False  # False = not looked for yet
        model = model or _env(MODEL_ENV)
        if not model:
            model = self._first_model_id()
        self.model = model
        self.model_id = model
        self.fingerprint = f"{self.base_url}|{model}"
        self.context_window = int(context_window or self._discover_context_window()
                                  or DEFAULT_CONTEXT_WINDOW)
        self.capabilities = frozenset({LOGPROBS, NEXT_TOKEN, SCORE})
        self.probe_report: dict[str, str] = {}

    # ------------------------------------------------------------------ HTTP

    def _request(self, method: str, path: str, payload: dict[str, Any] | None = None,
                 *, retries: int | None = None) -> Any:
        """Send one request (with retries) and return the decoded JSON body."""
        url = path.lstrip("/")
        shown = f"{method} {self.base_url}/{url}"
        retries = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                response = self._client.request(method, url, json=payload)
            except httpx.TimeoutException as exc:
                error: BackendError = BackendError(
                    f"{shown}: no answer within {self.timeout:g}s ({type(exc).__name__})")
                retry_after = None
            except httpx.TransportError as exc:
                error = BackendError(f"{shown}: cannot reach the server ({exc or type(exc).__name__}); "
                                     f"is it running at {self.base_url}?")
                retry_after = None
            else:
                if response.status_code < 400:
                    try:
                        return response.json()
                    except ValueError:
                        snippet = response.text.strip()[:200]
                        raise BackendError(f"{shown}: the server answered with a body that is not "
                                           f"JSON (HTTP {response.status_code}): {snippet!r}") from None
                msg = _server_message(response)
                error = BackendHTTPError(f"{shown}: HTTP {response.status_code}"
                                         + (f": {msg}" if msg else ""), response.status_code, msg)
                if response.status_code not in RETRY_STATUS:
                    raise error
                retry_after = _retry_after(response)
            if attempt >= retries:
                if attempt:
                    error.args = (f"{error.args[0]} (after {attempt + 1} attempts)",)
                raise error
            delay = min(MAX_BACKOFF, self.backoff * (2 ** attempt))
            if retry_after is not None:
                delay = min(MAX_BACKOFF, max(delay, retry_after))
            log.warning("%s; retrying in %.1fs (%d/%d)", error, delay, attempt + 1, retries)
            time.sleep(delay)
            attempt += 1

    def _list_models(self) -> list[dict[str, Any]]:
        if self._models_listing is None:
            body = self._request("GET", "models")
            data = body.get("data") if isinstance(body, dict) else None
            if not isinstance(data, list):
                # Ollama's native /api/tags style or other variants.
                data = body.get("models") if isinstance(body, dict) else None
            self._models_listing = [m for m in (data or []) if isinstance(m, dict)]
        return self._models_listing

    def _first_model_id(self) -> str:
        models = self._list_models()
        for m in models:
            mid = m.get("id") or m.get("name") or m.get("model")
            if mid:
                return str(mid)
        raise BackendError(f"GET {self.base_url}/models lists no model; pass model= or set "
                           f"{MODEL_ENV}")

    def _discover_context_window(self) -> int | None:
        """vLLM lists max_model_len with each model; others say nothing (then the default)."""
        try:
            models = self._list_models()
        except BackendError:
            return None
        for m in models:
            if (m.get("id") or m.get("name")) == self.model:
                for key in ("max_model_len", "context_length", "context_window", "n_ctx"):
                    if isinstance(m.get(key), int) and m[key] > 0:
                        return int(m[key])
                meta = m.get("meta")
                if isinstance(meta, dict) and isinstance(meta.get("n_ctx_train"), int):
                    return int(meta["n_ctx_train"])
        return None

    # ------------------------------------------------------------------ requests

    def _chat_payload(self, messages: list[dict[str, str]], *, max_tokens: int, temperature: float,
                      seed: int, stop: Sequence[str] | None, logprobs: bool,
                      top_logprobs: int) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "messages": plain_messages(messages),
                                   "max_tokens": int(max_tokens), "temperature": float(temperature),
                                   "seed": int(seed), "stream": False, **self.extra_body}
        if stop:
            payload["stop"] = list(stop)
        if logprobs:
            # top_logprobs is sent even when 0: some servers (llama-cpp-python) return no
            # logprobs at all without it.
            payload["logprobs"] = True
            payload["top_logprobs"] = max(0, int(top_logprobs))
        return payload

    def _completion_payload(self, prompt: str, *, max_tokens: int, temperature: float, seed: int,
                            stop: Sequence[str] | None, logprobs: bool,
                            top_logprobs: int) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "prompt": prompt,
                                   "max_tokens": int(max_tokens), "temperature": float(temperature),
                                   "seed": int(seed), "stream": False, **self.extra_body}
        if stop:
            payload["stop"] = list(stop)
        if logprobs:
            # Legacy field: the number of alternatives per position. Some servers read 0 as
            # "no logprobs", so ask for at least one and trim the alternatives afterwards.
            payload["logprobs"] = max(1, int(top_logprobs))
        return payload

    @staticmethod
    def _first_choice(body: Any, shown: str) -> dict[str, Any]:
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

    def _raw_generate(self, prompt: Prompt, *, max_tokens: int, temperature: float, seed: int,
                      stop: Sequence[str] | None, logprobs: bool, top_logprobs: int,
                      ) -> tuple[dict[str, Any], dict[str, Any], str, list[TokenLogprob] | None, bool]:
        """POST the request; return (body, choice, text or "", parsed logprobs or None, is_chat)."""
        validate_messages(prompt)
        is_chat = not isinstance(prompt, str)
        common = dict(max_tokens=max_tokens, temperature=temperature, seed=seed, stop=stop,
                      logprobs=logprobs, top_logprobs=top_logprobs)
        if is_chat:
            path = "chat/completions"
            body = self._request("POST", path, self._chat_payload(list(prompt), **common))
        else:
            path = "completions"
            body = self._request("POST", path, self._completion_payload(prompt, **common))
        shown = f"POST {self.base_url}/{path}"
        choice = self._first_choice(body, shown)
        if is_chat:
            message = choice.get("message")
            text = message.get("content") if isinstance(message, dict) else None
            if text is None and isinstance(choice.get("text"), str):
                text = choice["text"]
        else:
            text = choice.get("text")
        if text is not None and not isinstance(text, str):
            raise BackendError(f"{shown}: the reply text is not a string: {text!r}")
        if text is None:
            raise BackendError(f"{shown}: the server returned a choice without text: "
                               f"{json.dumps(choice)[:300]}")
        tokens = None
        if logprobs:
            tokens = (parse_chat_logprobs(choice, top_logprobs) if is_chat
                      else parse_legacy_logprobs(choice.get("logprobs"), top_logprobs))
            if is_chat and tokens is None:
                tokens = parse_legacy_logprobs(choice.get("logprobs"), top_logprobs)
        return body, choice, text, tokens, is_chat

    def generate(self, prompt: Prompt, *, max_tokens: int = 256, temperature: float = 0.0,
                 seed: int = DEFAULT_SEED, stop: Sequence[str] | None = None,
                 logprobs: bool = False, top_logprobs: int = 0) -> Generation:
        """Generate a reply.

        An empty reply raises BackendError, except when `stop` strings were given (a stop string
        at the very start legitimately yields ""). Requested logprobs that the server does not
        return raise CapabilityError.
        """
        if max_tokens < 1:
            raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
        body, choice, text, tokens, is_chat = self._raw_generate(
            prompt, max_tokens=max_tokens, temperature=temperature, seed=seed, stop=stop,
            logprobs=logprobs, top_logprobs=top_logprobs)
        endpoint = "chat/completions" if is_chat else "completions"
        finish = str(choice.get("finish_reason") or "stop")
        if finish not in ("stop", "length"):
            finish = "length" if finish in ("max_tokens", "max_length") else "stop"
        if text == "" and not stop:
            raise BackendError(f"POST {self.base_url}/{endpoint}: the server returned an empty "
                               f"reply (finish_reason={choice.get('finish_reason')!r})")
        if logprobs and not tokens and text:
            raise CapabilityError(
                f"{self.base_url} ({self.model}) returned no token logprobs on /{endpoint} although "
                "they were requested; this server or model does not support logprobs there "
                "(llama-cpp-python's server needs --logits_all true; vLLM/OpenAI support them)")
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return Generation(text=text, tokens=tokens or [], finish_reason=finish,
                          model=str(body.get("model") or self.model),
                          prompt_tokens=int(usage.get("prompt_tokens") or 0),
                          completion_tokens=int(usage.get("completion_tokens")
                                                or (len(tokens) if tokens else 0)))

    def next_token_logprobs(self, prompt: Prompt, *, top_k: int = 20,
                            candidates: Sequence[str] = ()) -> dict[str, float]:
        """The top min(top_k, 20) first reply tokens, from a one-token greedy generation.

        Candidates are found only if they are among those (no EXACT_NEXT_TOKEN over HTTP).
        """
        k = max(1, min(int(top_k), MAX_TOP_LOGPROBS))
        _, _, _, tokens, is_chat = self._raw_generate(
            prompt, max_tokens=1, temperature=0.0, seed=DEFAULT_SEED, stop=None, logprobs=True,
            top_logprobs=k)
        if not tokens:
            raise CapabilityError(
                f"{self.base_url} ({self.model}) returned no logprobs for the first reply token on "
                f"/{'chat/completions' if is_chat else 'completions'}: next-token probabilities "
                "are not available from this server")
        first = tokens[0]
        out: dict[str, float] = {}
        for tok, lp in first.top:
            if tok not in out and not math.isnan(lp):
                out[tok] = lp
        if first.token not in out and not math.isnan(first.logprob):
            out[first.token] = first.logprob
        ranked = sorted(out.items(), key=lambda kv: -kv[1])[:k]
        return dict(ranked)

    # ------------------------------------------------------------------ scoring

    def _prompt_text(self, prompt: Prompt) -> str:
        validate_messages(prompt)
        if isinstance(prompt, str):
            return prompt
        if not self.chat_template:
            raise CapabilityError(
                "the openai backend scores a continuation through /completions, which needs the "
                "prompt as text: pass a string prompt, or give OpenAICompatibleLLM a chat_template "
                "(the model's Jinja chat template) to render chat prompts")
        return render_chat(self.chat_template, plain_messages(prompt))

    def _echo_request(self, text: str) -> dict[str, Any]:
        # max_tokens=1, not 0: llama-cpp-python reads max_tokens <= 0 as "unlimited" and would
        # generate up to the context size; one generated token is ignored below.
        payload = {"model": self.model, "prompt": text, "echo": True, "logprobs": 1,
                   "max_tokens": 1, "temperature": 0.0, "seed": DEFAULT_SEED, "stream": False,
                   **self.extra_body}
        try:
            return self._request("POST", "completions", payload)
        except BackendHTTPError as exc:
            if 400 <= exc.status_code < 500:
                raise CapabilityError(
                    f"{self.base_url} ({self.model}) cannot score a fixed continuation: it rejected "
                    f"an echo request for prompt logprobs ({exc})") from exc
            raise

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        """log P(continuation | prompt) from the server's echoed prompt logprobs.

        The continuation's tokens are found from the end of the echo (the echoed token strings
        end with continuation + the one generated token), which stays right when a server drops
        special tokens from the echoed strings; a token that straddles the prompt/continuation
        boundary (BPE merged across it) counts as a continuation token. Servers whose token
        strings do not spell the text (byte tokens) are aligned by their `text_offset`.
        """
        if not continuation:
            raise InputError("score() needs a non-empty continuation")
        prompt_text = self._prompt_text(prompt)
        if not prompt_text:
            raise InputError("score() needs a non-empty prompt: the first token has no "
                             "conditional probability")
        full = prompt_text + continuation
        choice = self._first_choice(self._echo_request(full), f"POST {self.base_url}/completions")
        picked, status = self._locate_continuation(choice, prompt_text, continuation)
        if status == "unknown":  # nothing was generated (EOS): ask the one-time probe
            status = "ok" if self._probe_echo_alignment() else "shifted"
        if status == "shifted":
            raise CapabilityError(
                f"{self.base_url} ({self.model}) returns echoed prompt logprobs shifted by one "
                "position (a llama-cpp-python server bug for prompts that do not start with a BOS "
                "token), so it cannot score a fixed continuation correctly; render prompts that "
                "start with BOS (a chat_template), or use the llama_cpp or hf backend")
        if status != "ok" or not picked or any(math.isnan(t.logprob) for t in picked):
            raise CapabilityError(
                f"{self.base_url} ({self.model}) does not return prompt logprobs with echo=true "
                f"({status}), so it cannot score a fixed continuation (llama-cpp-python's server "
                "needs --logits_all true; vLLM supports echo; OpenAI chat models do not)")
        return ContinuationScore(tokens=[TokenLogprob(token=t.token, logprob=t.logprob)
                                         for t in picked])

    @staticmethod
    def _locate_continuation(choice: dict[str, Any], prompt_text: str, continuation: str,
                             ) -> tuple[list[TokenLogprob], str]:
        """The echoed tokens that spell `continuation`, and a status:
        "ok"; "shifted" (the generated token has no logprob: the off-by-one server bug);
        "unknown" (nothing generated, alignment cannot be told from this reply);
        or a reason why the echo is unusable."""
        lp = choice.get("logprobs")
        tokens = parse_legacy_logprobs(lp, 1)
        if not tokens:
            return [], "no logprobs in the reply"
        full = prompt_text + continuation
        text = choice.get("text")
        if not isinstance(text, str) or not text.startswith(full):
            return [], "the reply does not echo the prompt"
        generated = text[len(full):]
        strings = [t.token for t in tokens]
        ends, pos = [], 0
        for tok in strings:
            pos += len(tok)
            ends.append(pos)
        joined = "".join(strings)
        if joined.endswith(continuation + generated):
            c_end = len(joined) - len(generated)
            c_start = c_end - len(continuation)
            picked = [t for t, e in zip(tokens, ends) if e > c_start and e - len(t.token) < c_end]
            return picked, ("ok" if generated else "unknown")
        if generated and joined.endswith(continuation):
            return [], "shifted"
        # Token strings that do not spell the text (e.g. "bytes:" tokens): use text_offset.
        offsets = lp.get("text_offset") if isinstance(lp, dict) else None
        if isinstance(offsets, list) and len(offsets) == len(tokens):
            start, end = len(prompt_text), len(full)
            offs = [int(o) for o in offsets]
            picked = []
            for i, (t, off) in enumerate(zip(tokens, offs)):
                if off >= end:
                    return picked, "ok"
                # a token spans up to the next one's offset (its string may be "bytes:\xc3")
                tok_end = offs[i + 1] if i + 1 < len(offs) else off + max(1, len(t.token))
                if off >= start or tok_end > start:
                    picked.append(t)
            return picked, ("shifted" if generated else "unknown")
        return [], "the echoed tokens cannot be aligned with the text"

    def _probe_echo_alignment(self) -> bool:
        """Once per instance: does this server align echoed logprobs correctly?

        Scores a probe; if nothing is generated there either, compares the echoed distribution
        at the probe's last token with the next-token distribution after the whole probe: if
        they are the same, the server shifted them by one.
        """
        if self._echo_aligned is None:
            probe, last_word = "The capital of France is", " is"
            choice = self._first_choice(self._echo_request(probe), "echo probe")
            picked, status = self._locate_continuation(choice, probe[:-len(last_word)], last_word)
            if status in ("ok", "shifted"):
                self._echo_aligned = status == "ok"
            elif status != "unknown" or not picked:
                self._echo_aligned = True  # nothing to compare: assume the API contract holds
            else:
                plain = self._first_choice(self._request("POST", "completions", dict(
                    self._completion_payload(probe, max_tokens=1, temperature=0.0,
                                             seed=DEFAULT_SEED, stop=None, logprobs=True,
                                             top_logprobs=1))), "probe")
                nxt = parse_legacy_logprobs(plain.get("logprobs"), 1)
                last = picked[-1]
                if not nxt or not nxt[0].top:
                    self._echo_aligned = True
                else:
                    top_tok, top_lp = nxt[0].top[0]
                    self._echo_aligned = not (last.token != top_tok and any(
                        tok == top_tok and abs(lp - top_lp) < 1e-3 for tok, lp in last.top))
        return self._echo_aligned

    # ------------------------------------------------------------------ capabilities

    def probe(self) -> frozenset[str]:
        """Check LOGPROBS, NEXT_TOKEN and SCORE with one tiny request each; set and return them.

        `probe_report` says, per capability, "ok" or why it failed.
        """
        chat = [{"role": "user", "content": "Say hello."}]

        def check_logprobs() -> None:
            _, _, text, tokens, _ = self._raw_generate(chat, max_tokens=2, temperature=0.0,
                                                       seed=DEFAULT_SEED, stop=None, logprobs=True,
                                                       top_logprobs=2)
            if not tokens:
                raise CapabilityError("no token logprobs in the chat reply")

        checks = {
            LOGPROBS: check_logprobs,
            NEXT_TOKEN: lambda: self.next_token_logprobs(chat, top_k=2),
            SCORE: lambda: self.score("The capital of France is", " Paris"),
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
        self.capabilities = frozenset(real)
        self.probe_report = report
        return self.capabilities

    # ------------------------------------------------------------------ tokens

    def _find_tokenize_route(self) -> tuple[str, str] | None:
        """Look once for a tokenizer endpoint: llama.cpp server (/tokenize), llama-cpp-python
        (/extras/tokenize), vLLM (/tokenize). Returns (url, payload style) or None."""
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        routes = [(f"{root}/extras/tokenize", "input"), (f"{root}/tokenize", "content"),
                  (f"{root}/tokenize", "prompt")]
        for url, style in routes:
            try:
                self._tokenize(url, style, "hello")
            except (BackendError, ValueError, KeyError, TypeError):
                continue
            return url, style
        return None

    def _tokenize(self, url: str, style: str, text: str) -> int:
        payload = {style: text, "model": self.model}
        response = self._client.post(url, json=payload)
        if response.status_code >= 400:
            raise BackendError(f"POST {url}: HTTP {response.status_code}")
        body = response.json()
        if isinstance(body.get("count"), int):
            return int(body["count"])
        tokens = body["tokens"]
        if not isinstance(tokens, list):
            raise TypeError("tokens is not a list")
        return len(tokens)

    def count_tokens(self, text: str) -> int:
        """Exact count when the server exposes a tokenize endpoint, else an estimate."""
        if self._tokenize_route is False:
            try:
                self._tokenize_route = self._find_tokenize_route()
            except httpx.HTTPError:
                self._tokenize_route = None
        if self._tokenize_route:
            url, style = self._tokenize_route  # type: ignore[misc]
            try:
                return self._tokenize(url, style, text)
            except (BackendError, httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
                log.debug("tokenize endpoint failed (%s); estimating", exc)
        return super().count_tokens(text)

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        """One count for the whole prompt (at most one tokenize request, not one per message);
        ~4 template tokens a message."""
        if isinstance(prompt, str):
            return self.count_tokens(prompt)
        return self.count_tokens("\n".join(m.get("content", "") for m in prompt)) + 4 * len(prompt)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> "OpenAICompatibleLLM":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None

