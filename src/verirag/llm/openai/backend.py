"""OpenAI-compatible HTTP backend: vLLM, Ollama, llama.cpp's servers, OpenAI itself.

    llm = OpenAICompatibleLLM("http://127.0.0.1:8000/v1")      # model: first id of GET /models
    llm.generate([{"role": "user", "content": "Hi"}], logprobs=True, top_logprobs=5)
    llm.probe()   # what this server really delivers: {"logprobs", "next_token", "score"} or fewer

Configuration, when not passed explicitly:
    base_url  <- $VERIRAG_OPENAI_BASE_URL, then $OPENAI_BASE_URL (a bare "http://host:port" gets "/v1")
    api_key   <- $VERIRAG_OPENAI_API_KEY, then $OPENAI_API_KEY (local servers need none)
    model     <- the first id that GET {base_url}/models lists
    timeout   <- $VERIRAG_OPENAI_TIMEOUT (seconds per request, default 120); retries <- $VERIRAG_OPENAI_MAX_RETRIES (2)

Requests:
    chat prompts   -> POST /chat/completions (logprobs=true, top_logprobs=k)
    string prompts -> POST /completions      (legacy logprobs=k)
    score()        -> POST /completions with echo=true (`verirag.llm.openai.scoring`)

Capabilities are declared optimistically (LOGPROBS, NEXT_TOKEN, SCORE; never EXACT_NEXT_TOKEN: an
HTTP API only shows the top-k); a server that does not deliver makes the call raise CapabilityError,
never fake numbers. `probe()` checks each with one tiny request and narrows `capabilities`.

Prefix reuse is the server's business here: verirag sends whole prompts (a continued conversation,
as `self_check` asks, goes as messages with the reply's text; generated token ids are not sent), and
a server reads each one again unless it caches prompt prefixes itself (vLLM's automatic prefix
caching, llama.cpp server's prompt cache). The "shared" prompt layout helps those caches as it helps
ours. Whether a server's cached prefix gives bitwise the numbers of a fresh read is its own matter.

Failures are retried and reported as `verirag.llm.openai.client` says.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import httpx

from verirag.errors import BackendError, CapabilityError
from verirag.llm.base import LLM, LOGPROBS, NEXT_TOKEN, SCORE, GenerateOptions
from verirag.llm.chat_template import validate_messages
from verirag.llm.openai.capabilities import TokenizeEndpoint, listed_context_window, probe
from verirag.llm.openai.client import OpenAIClient, first_choice, request_body
from verirag.llm.openai.logprobs import parse_chat_logprobs, parse_legacy_logprobs
from verirag.llm.openai.scoring import EchoScorer
from verirag.types import ContinuationScore, Generation, Prompt, TokenLogprob

MAX_TOP_LOGPROBS = 20  # OpenAI's limit on top_logprobs; most servers accept at least this
DEFAULT_CONTEXT_WINDOW = 4096


class OpenAICompatibleLLM(LLM):
    """An LLM served over the OpenAI HTTP API (see the module docstring)."""

    backend = "openai"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        api_key: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        context_window: int | None = None,
        chat_template: str | None = None,
        *,
        backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        extra_body: dict[str, Any] | None = None,
    ):
        self.client = OpenAIClient(base_url, api_key, timeout, max_retries, backoff=backoff, transport=transport)
        self.base_url = self.client.base_url
        # Server-specific sampling fields sent with every generation request, e.g.
        # {"repeat_penalty": 1.0} so that llama-cpp-python's server (default 1.1) decodes greedily.
        self.extra_body = dict(extra_body or {})
        model = model or self._first_model_id()
        self.model = self.model_id = model
        self.fingerprint = f"{self.base_url}|{model}"
        self.context_window = int(context_window or self._listed_context_window() or DEFAULT_CONTEXT_WINDOW)
        self.capabilities = frozenset({LOGPROBS, NEXT_TOKEN, SCORE})
        self.probe_report: dict[str, str] = {}
        self.scorer = EchoScorer(self.client, model, chat_template, self.extra_body)
        self.tokenize_endpoint = TokenizeEndpoint(self.client, model)

    def _first_model_id(self) -> str:
        for m in self.client.list_models():
            mid = m.get("id") or m.get("name") or m.get("model")
            if mid:
                return str(mid)
        raise BackendError(f"GET {self.base_url}/models lists no model; pass model= (openai:MODEL, URL#MODEL)")

    def _listed_context_window(self) -> int | None:
        try:
            return listed_context_window(self.client.list_models(), self.model)
        except BackendError:
            return None

    def raw_generate(
        self, prompt: Prompt, options: GenerateOptions
    ) -> tuple[dict[str, Any], dict[str, Any], str, list[TokenLogprob] | None, bool]:
        """POST the request; return (body, choice, text or "", parsed logprobs or None, is_chat),
        without generate's checks of the reply."""
        validate_messages(prompt)
        is_chat = not isinstance(prompt, str)
        path = "chat/completions" if is_chat else "completions"
        body = self.client.request(
            "POST",
            path,
            request_body(self.model, prompt, options, extra=self.extra_body),
        )
        shown = f"POST {self.base_url}/{path}"
        choice = first_choice(body, shown)
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
            raise BackendError(f"{shown}: the server returned a choice without text: {json.dumps(choice)[:300]}")
        tokens = None
        if options.logprobs:
            tokens = parse_chat_logprobs(choice, options.top_logprobs) if is_chat else None
            if tokens is None:
                tokens = parse_legacy_logprobs(choice.get("logprobs"), options.top_logprobs)
        return body, choice, text, tokens, is_chat

    def _generate(self, prompt: Prompt, options: GenerateOptions) -> Generation:
        """Generate a reply.

        An empty reply raises BackendError, except when `stop` strings were given (a stop string
        at the very start legitimately yields ""). Requested logprobs that the server does not
        return raise CapabilityError.
        """
        body, choice, text, tokens, is_chat = self.raw_generate(prompt, options)
        stop, logprobs = options.stop, options.logprobs
        endpoint = "chat/completions" if is_chat else "completions"
        finish = str(choice.get("finish_reason") or "stop")
        if finish not in ("stop", "length"):
            finish = "length" if finish in ("max_tokens", "max_length") else "stop"
        if text == "" and not stop:
            raise BackendError(
                f"POST {self.base_url}/{endpoint}: the server returned an empty "
                f"reply (finish_reason={choice.get('finish_reason')!r})"
            )
        if logprobs and not tokens and text:
            raise CapabilityError(
                f"{self.base_url} ({self.model}) returned no token logprobs on /{endpoint} although "
                "they were requested; this server or model does not support logprobs there "
                "(llama-cpp-python's server needs --logits_all true; vLLM/OpenAI support them)"
            )
        usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
        return Generation(
            text=text,
            tokens=tokens or [],
            finish_reason=finish,
            model=str(body.get("model") or self.model),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or (len(tokens) if tokens else 0)),
        )

    def next_token_logprobs(
        self, prompt: Prompt, *, top_k: int = 20, candidates: Sequence[str] = ()
    ) -> dict[str, float]:
        """The top min(top_k, 20) first reply tokens, from a one-token greedy generation.

        Candidates are found only if they are among those (no EXACT_NEXT_TOKEN over HTTP).
        """
        k = max(1, min(int(top_k), MAX_TOP_LOGPROBS))
        _, _, _, tokens, is_chat = self.raw_generate(
            prompt, GenerateOptions(max_tokens=1, logprobs=True, top_logprobs=k)
        )
        if not tokens:
            raise CapabilityError(
                f"{self.base_url} ({self.model}) returned no logprobs for the first reply token on "
                f"/{'chat/completions' if is_chat else 'completions'}: next-token probabilities "
                "are not available from this server"
            )
        first = tokens[0]
        out: dict[str, float] = {}
        for tok, lp in [*first.top, (first.token, first.logprob)]:
            if tok not in out and not math.isnan(lp):
                out[tok] = lp
        return dict(sorted(out.items(), key=lambda kv: -kv[1])[:k])

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        """log P(continuation | prompt) from the server's echoed prompt logprobs (`EchoScorer.score`)."""
        return self.scorer.score(prompt, continuation)

    def probe(self) -> frozenset[str]:
        """Check LOGPROBS, NEXT_TOKEN and SCORE with one tiny request each; set and return them.

        `probe_report` says, per capability, "ok" or why it failed.
        """
        self.capabilities, self.probe_report = probe(self)
        return self.capabilities

    def count_tokens(self, text: str) -> int:
        """Exact count when the server exposes a tokenize endpoint, else an estimate."""
        n = self.tokenize_endpoint.count(text)
        return super().count_tokens(text) if n is None else n

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        """One count for the whole prompt (at most one tokenize request, not one per message);
        ~4 template tokens a message."""
        if isinstance(prompt, str):
            return self.count_tokens(prompt)
        return self.count_tokens("\n".join(m.get("content", "") for m in prompt)) + 4 * len(prompt)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> OpenAICompatibleLLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
