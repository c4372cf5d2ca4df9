"""The service's front door, one ASGI middleware: request id, bearer token, body size, access log,
request counts.

Pure ASGI (not BaseHTTPMiddleware), so the body limit counts bytes as they arrive: a client that
lies in Content-Length, or sends a chunked body, is cut off at the limit all the same.
"""

from __future__ import annotations

import hmac
import json
import re
import time
import uuid
from collections.abc import Iterable

from starlette.exceptions import HTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from verirag.server.telemetry import Telemetry, log_access

# What needs no token: the probes, and the pages that hold no data (the web page and the API
# schema); a browser cannot attach a bearer header to a page load. Every data route needs it.
OPEN_PATHS = frozenset(
    {"/healthz", "/readyz", "/", "/docs", "/docs/oauth2-redirect", "/redoc", "/openapi.json", "/favicon.ico"}
)
REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class BodyTooLarge(HTTPException):
    """Raised from `receive` once the body passes the limit. An HTTPException, so FastAPI's body
    parsing passes it on (as it does no other error) and the app answers 413."""

    def __init__(self, limit: int):
        super().__init__(413, detail=f"the request body exceeds {limit} bytes")


def json_error(status: int, code: str, message: str, request_id: str, **extra) -> tuple[int, list, bytes]:
    body = json.dumps({"error": {"code": code, "message": message, **extra}, "request_id": request_id}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return status, headers, body


class Gateway:
    def __init__(
        self,
        app: ASGIApp,
        *,
        telemetry: Telemetry,
        log,
        api_key: str | None,
        max_body_bytes: int,
        routes: Iterable = (),
    ):
        self.app = app
        self.telemetry = telemetry
        self.log = log
        self.api_key = api_key.encode() if api_key else None
        self.max_body_bytes = max_body_bytes
        self.routes = routes

    def _route(self, scope: Scope) -> str:
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return getattr(route, "path", "other")
        return "other"

    def _authorised(self, scope: Scope) -> bool:
        if self.api_key is None or scope["path"] in OPEN_PATHS:
            return True
        for name, value in scope.get("headers", []):
            if name == b"authorization":
                scheme, _, token = value.partition(b" ")
                # compare_digest: the time taken does not tell how much of a guess was right
                return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.api_key)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = dict(scope.get("headers", []))
        given = headers.get(b"x-request-id", b"").decode("latin-1")
        request_id = given if REQUEST_ID.fullmatch(given) else uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        route = self._route(scope)
        status_seen = 500
        started_response = False

        async def send_with_id(message: Message) -> None:
            nonlocal status_seen, started_response
            if message["type"] == "http.response.start":
                status_seen, started_response = message["status"], True
                message = {**message, "headers": [*message.get("headers", []), (b"x-request-id", request_id.encode())]}
            await send(message)

        async def reply(status: int, hdrs: list, body: bytes) -> None:
            await send_with_id({"type": "http.response.start", "status": status, "headers": hdrs})
            await send_with_id({"type": "http.response.body", "body": body})

        try:
            if not self._authorised(scope):
                self.telemetry.rejected.labels("unauthorized").inc()
                status, hdrs, body = json_error(
                    401, "unauthorized", "a bearer token is required: send 'Authorization: Bearer <token>'", request_id
                )
                await reply(status, [*hdrs, (b"www-authenticate", b"Bearer")], body)
                return
            declared = headers.get(b"content-length")
            if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
                await self._too_large(reply, request_id)
                return
            received = 0

            async def limited_receive() -> Message:
                nonlocal received
                message = await receive()
                if message["type"] == "http.request":
                    received += len(message.get("body", b""))
                    if received > self.max_body_bytes:
                        raise BodyTooLarge(self.max_body_bytes)
                return message

            try:
                await self.app(scope, limited_receive, send_with_id)
            except BodyTooLarge:  # a route that read the body outside FastAPI's parsing
                if not started_response:
                    await self._too_large(reply, request_id)
            except Exception as exc:  # a bug of ours: logged with its traceback, never sent
                self.log.error("unhandled error", exc_info=exc, extra={"fields": {"request_id": request_id}})
                if not started_response:
                    await reply(
                        *json_error(
                            500,
                            "internal",
                            f"internal error (request id {request_id}); the server log has the details",
                            request_id,
                        )
                    )
        finally:
            if status_seen == 413:
                self.telemetry.rejected.labels("body_too_large").inc()
            self.telemetry.requests.labels(route, str(status_seen)).inc()
            self.telemetry.latency.labels(route).observe(time.perf_counter() - started)
            client = scope.get("client")
            log_access(
                self.log,
                request_id=request_id,
                method=scope.get("method", ""),
                route=route,
                path=scope.get("path", ""),
                status=status_seen,
                started=started,
                client=client[0] if client else None,
            )

    async def _too_large(self, reply, request_id: str) -> None:
        await reply(
            *json_error(413, "body_too_large", f"the request body exceeds {self.max_body_bytes} bytes", request_id)
        )
