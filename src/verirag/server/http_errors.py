"""The service's errors as JSON: `{"error": {"code", "message", ...}, "request_id"}`, with the status
that says whose fault it is (`verirag.server.app`'s module doc lists them)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from verirag.errors import BackendError, CapabilityError, InputError, VeriragError
from verirag.server.service import NoIndex, VeriragService
from verirag.server.telemetry import Telemetry
from verirag.server.worker import Cancelled, Overloaded, QueueTimeout, RunTimeout

HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


class NotReady(Exception):
    def __init__(self, load_error: str | None):
        super().__init__(
            f"the models failed to load: {load_error}" if load_error else "the models are still loading; retry shortly"
        )
        self.failed = load_error is not None


def error_response(
    request: Request, status: int, code: str, message: str, headers: dict | None = None, **extra: Any
) -> JSONResponse:
    rid = getattr(request.state, "request_id", "")
    return JSONResponse(
        {"error": {"code": code, "message": message, **extra}, "request_id": rid}, status_code=status, headers=headers
    )


def _field(loc) -> str:
    """The path of a field as a client wrote it: pydantic's names of union members (a model's
    class name, "function-after[...]") are not part of the request, so they are left out."""
    return ".".join(str(p) for p in loc if not (isinstance(p, str) and (p[:1].isupper() or "[" in p)))


def _fields(exc: RequestValidationError) -> list[dict[str, str]]:
    # loc and message only: the offending input may be huge or binary, and is the client's own
    return [
        {
            "field": _field(e.get("loc", ())),
            "message": str(e.get("msg", "")),
            "type": str(e.get("type", "")),
        }
        for e in exc.errors()[:20]
    ]


def methods_of(app: FastAPI, path: str) -> list[str]:
    methods: set[str] = set()
    for route in app.router.routes:
        if getattr(route, "path_regex", None) is not None and route.path_regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def _verirag_error(request: Request, exc: VeriragError) -> JSONResponse:
    if isinstance(exc, (InputError, CapabilityError)):
        return error_response(request, 422, "invalid_request", str(exc))
    if isinstance(exc, BackendError):
        return error_response(request, 502, "backend_error", f"the model backend failed: {exc}")
    return error_response(request, 503, "unavailable", str(exc))  # a model missing or failing its checksum


def install_error_handlers(app: FastAPI, service: VeriragService, telemetry: Telemetry) -> None:
    """Map every error a route can raise to its status. A bug of ours (any other exception) is
    answered by the Gateway: 500, the request id, no traceback."""

    async def invalid(request: Request, exc: RequestValidationError):
        fields = _fields(exc)
        where = ", ".join(f["field"] for f in fields[:5])
        return error_response(request, 422, "invalid_request", f"invalid request: {where}", fields=fields)

    async def http(request: Request, exc: HTTPException):
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:  # Starlette names the methods of the first route of the path only
            headers = {**(headers or {}), "Allow": ", ".join(methods_of(app, request.url.path))}
        code = HTTP_CODES.get(exc.status_code, "http_error")
        return error_response(request, exc.status_code, code, str(exc.detail), headers=headers)

    async def overloaded(request: Request, exc: Overloaded):
        telemetry.rejected.labels("overloaded").inc()
        retry = {"Retry-After": str(exc.retry_after)}
        return error_response(request, 429, "overloaded", str(exc), headers=retry, retry_after=exc.retry_after)

    async def queue_timeout(request: Request, exc: QueueTimeout):
        telemetry.rejected.labels("queue_timeout").inc()
        retry = service.worker.retry_after()
        return error_response(request, 503, "queue_timeout", str(exc), headers={"Retry-After": str(retry)})

    async def not_ready(request: Request, exc: NotReady):
        code, headers = ("model_load_failed", None) if exc.failed else ("not_ready", {"Retry-After": "5"})
        return error_response(request, 503, code, str(exc), headers=headers)

    async def run_timeout(request: Request, exc: RunTimeout):
        telemetry.rejected.labels("run_timeout").inc()
        return error_response(request, 504, "timeout", str(exc))

    async def cancelled(request: Request, exc: Cancelled):
        return error_response(request, 504, "timeout", str(exc))

    async def no_index(request: Request, exc: NoIndex):
        return error_response(request, 409, "no_index", str(exc))

    async def verirag(request: Request, exc: VeriragError):
        return _verirag_error(request, exc)

    for kind, handler in (
        (RequestValidationError, invalid),
        (HTTPException, http),
        (Overloaded, overloaded),
        (QueueTimeout, queue_timeout),
        (NotReady, not_ready),
        (RunTimeout, run_timeout),
        (Cancelled, cancelled),
        (NoIndex, no_index),
        (VeriragError, verirag),
    ):
        app.add_exception_handler(kind, handler)
