"""The one HTTP client of a verirag service (`verirag serve`), with the one map from its status
codes to verirag's errors. The integrations (LangChain, LlamaIndex) call the service through it.

    from verirag.client import VeriragClient

    client = VeriragClient("http://127.0.0.1:8000", api_key="token")   # api_key: `serve --api-key`
    result = client.verify("Who designed it?", "Maren Solberg.", ["Maren Solberg designed the tower."])
    print(result.score, result.faithful, result.supporting_passage)    # a VerifyResult, as in process

Whose fault an error is decides its type (`error_for`): a key the service refuses (401, 403) is an
AuthError; a request it calls invalid (other 4xx) an InputError with the service's own message; a
service that is busy (429), not ready (503), failing (5xx), too slow or unreachable a BackendError,
an outage (`is_outage`), never a verdict.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from verirag.errors import AuthError, BackendError, InputError, VeriragError
from verirag.types import AskResult, Passage, ScoredPassage, VerifyResult

__all__ = ["VeriragClient", "error_for"]

# A verification on a CPU can take minutes; the service's own limit (request_timeout) is 300 s.
DEFAULT_TIMEOUT = 300.0


def error_for(status: int, detail: str, url: str | None = None) -> VeriragError:
    """The error for a verirag service's answer with HTTP `status` (not a success); `detail` is the
    service's message. The one map from status codes to errors: nothing else looks at a status."""
    where = f"the verirag service at {url}" if url else "the verirag service"
    if status in (401, 403):
        return AuthError(
            f"{where} refused the API key ({status}): {detail}; pass api_key=, the token the service was "
            "started with (`verirag serve --api-key` or VERIRAG_API_KEY)"
        )
    if status == 404:  # the client only calls routes every verirag service has: a wrong base URL
        return InputError(
            f"{where} has no such route ({status}): {detail}; is the URL the service's root, without /v1?"
        )
    # 408 and 429 are 4xx but say the service is busy, not that the request is wrong
    if 400 <= status < 500 and status not in (408, 429):
        return InputError(f"{where} refused the request ({status}): {detail}")
    return BackendError(f"{where} failed ({status}): {detail}")


def _detail(response: httpx.Response) -> str:
    """The service's message: its error body `{"error": {"message", "fields"}, "request_id"}`
    (the request id finds the server's log entry), /readyz's `{"status", "error"}`, or the text."""
    try:
        body = response.json()
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else {}
    error = body.get("error")
    if isinstance(error, dict):
        text = str(error.get("message") or error.get("code") or "")
        fields = [f for f in error.get("fields") or [] if isinstance(f, dict)]
        if fields:  # 422: each invalid field and why
            text += " (" + "; ".join(f"{f.get('field')}: {f.get('message')}" for f in fields) + ")"
    elif isinstance(error, str):
        text = error
    elif "status" in body:
        text = f"status {body['status']}"
    else:
        text = response.text.strip()[:300] or response.reason_phrase
    if body.get("request_id"):
        text += f" [request {body['request_id']}]"
    if response.headers.get("retry-after"):
        text += f"; retry after {response.headers['retry-after']} s"
    return text


def _passage(p: str | Passage) -> dict[str, Any]:
    if isinstance(p, Passage):
        return {"id": p.id, "title": p.title, "text": p.text}
    if isinstance(p, str):
        return {"text": p}  # the service names it (p0, p1, ...)
    raise InputError(f"a passage is a string or a verirag Passage, got {type(p).__name__}")


class VeriragClient:
    """A verirag service at `base_url` (e.g. "http://127.0.0.1:8000"). `api_key`: its bearer token;
    `timeout`: seconds to wait for one answer. Results are the library's records (AskResult,
    VerifyResult, ScoredPassage); errors follow `error_for`. Thread-safe (one connection pool);
    `close()` it, or use it in a `with` block, to free the connections early."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT):
        url = (base_url or "").strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise InputError(f"the verirag service's URL must start with http:// or https://, got {base_url!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InputError(f"timeout is seconds, a number above 0, got {timeout!r}")
        self.base_url, self.timeout = url, float(timeout)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=url, headers=headers, timeout=self.timeout)

    def __repr__(self) -> str:  # never the key
        return f"VeriragClient({self.base_url!r})"

    def __enter__(self) -> VeriragClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # ---- the routes ------------------------------------------------------------------------------
    def ask(
        self,
        question: str,
        *,
        history: Sequence[str | dict] | None = None,
        k: int | None = None,
        method: str | None = None,
        threshold: float | None = None,
        fallback: str | None = None,
        prune: bool | float | None = None,
    ) -> AskResult:
        """POST /v1/ask: retrieve from the service's index, answer, verify and act (`history`: the
        conversation's earlier turns, strings or {role, content} messages, oldest first; `prune`: True
        on at the pruner's own threshold, a number that threshold, False off, None the service's
        setting, which is on by default)."""
        body = {
            "question": question,
            "k": k,
            "method": method,
            "threshold": threshold,
            "fallback": fallback,
            "prune": prune,
        }
        body["history"] = None if history is None else list(history)
        return self._parsed(AskResult.from_dict, self._call("POST", "/v1/ask", body))

    def verify(
        self,
        question: str,
        answer: str,
        passages: Sequence[str | Passage],
        *,
        history: Sequence[str | dict] | None = None,
        method: str | None = None,
        threshold: float | None = None,
    ) -> VerifyResult:
        """POST /v1/verify: the verdict on an answer against the passages it came from (strings, or
        Passages whose ids name them in the result). `method` None: the service's verify default.
        `history`: the conversation's earlier turns (strings or {role, content} messages)."""
        if isinstance(passages, (str, bytes)):  # a bare string would be sent character by character
            raise InputError("passages must be a list of strings or Passages, not one string")
        body = {
            "question": question,
            "answer": answer,
            "passages": [_passage(p) for p in passages],
            "method": method,
            "threshold": threshold,
            "history": None if history is None else list(history),
        }
        return self._parsed(VerifyResult.from_dict, self._call("POST", "/v1/verify", body))

    def retrieve(self, question: str, *, k: int | None = None) -> list[ScoredPassage]:
        """POST /v1/retrieve: the passages the service's index returns for `question`, best first."""
        out = self._call("POST", "/v1/retrieve", {"question": question, "k": k})

        def hits(d: dict) -> list[ScoredPassage]:
            return [ScoredPassage(Passage.from_dict(h), float(h["score"]), int(h["rank"])) for h in d["passages"]]

        return self._parsed(hits, out)

    def methods(self) -> dict[str, Any]:
        """GET /v1/methods: the methods a request may name and the service's defaults."""
        return self._call("GET", "/v1/methods")

    def health(self) -> dict[str, Any]:
        """GET /readyz: {"status": "ready", "model", "index"} once the models are loaded; while
        they load (or after they failed to) a BackendError, as for any request then."""
        return self._call("GET", "/readyz")

    # ---- one request, one map -----------------------------------------------------------------
    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        # options left None are not sent: the service's own defaults apply
        payload = None if body is None else {k: v for k, v in body.items() if v is not None}
        try:
            response = self._http.request(method, path, json=payload)
        except httpx.TimeoutException as e:
            raise BackendError(
                f"the verirag service at {self.base_url} did not answer {path} within {self.timeout:g} s "
                f"({type(e).__name__}); a larger timeout= may help"
            ) from e
        except httpx.HTTPError as e:  # connection refused or reset, a broken response
            raise BackendError(
                f"the verirag service at {self.base_url} cannot be reached: {type(e).__name__}: {e}"
            ) from e
        if not response.is_success:
            raise error_for(response.status_code, _detail(response), self.base_url)
        try:
            return response.json()
        except ValueError as e:
            raise BackendError(
                f"the verirag service at {self.base_url} answered {path} with a body that is not JSON: "
                f"{response.text[:200]!r}"
            ) from e

    def _parsed(self, parse, data: Any):
        try:
            return parse(data)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise BackendError(
                f"the verirag service at {self.base_url} answered a malformed result "
                f"({type(e).__name__}: {e}); is it a verirag service of a compatible version?"
            ) from e
