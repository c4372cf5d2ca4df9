"""The HTTP service (FastAPI): routes, error mapping, start-up and shutdown.

    app = create_app(VeriragService(ServiceConfig(index=Path("my-index"))))
    uvicorn.run(app, host="127.0.0.1", port=8000)        # or: verirag serve --index my-index

Every error is JSON, `{"error": {"code", "message", ...}, "request_id"}`, with the status that says
whose fault it is: 401 token, 404 no such model, 409 no index to retrieve from, 413 body, 422
request (the field named), 429 queue full (with
Retry-After), 502 backend failed, 503 not ready or waited too long, 504 ran too long, 500 only for a
bug of ours, never with a traceback (that goes to the log, under the request id).
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import asynccontextmanager
from importlib import resources
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from verirag.errors import BackendError, CapabilityError, InputError, VeriragError
from verirag.server import openai_compat
from verirag.server import verify_batch as batch
from verirag.server.contract import ON_THE_WORKER, WITH_BODY, errors
from verirag.server.contract import install as install_contract
from verirag.server.gateway import Gateway
from verirag.server.schemas import (
    AskRequest,
    ChatCompletion,
    ChatCompletionRequest,
    ModelCard,
    ModelList,
    Readiness,
    RetrieveRequest,
    RetrieveResponse,
    VerifyBatchRequest,
    VerifyBatchResponse,
    VerifyRequest,
)
from verirag.server.service import NoIndex, VeriragService
from verirag.server.telemetry import Telemetry, access_logger
from verirag.server.verify_batch import passages_of
from verirag.server.worker import Cancelled, Overloaded, QueueTimeout, RunTimeout
from verirag.types import AskResult, VerifyResult

log = logging.getLogger("verirag.server")
HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "body_too_large",
    415: "unsupported_media_type",
}


def _error(
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


async def _run(request: Request, service: VeriragService, job):
    """Run `job` on the model worker unless the models are not ready (503 + Retry-After); if the
    client disconnects while the job waits or runs, cancel it (its queue slot is freed, a running
    job stops at its next stage)."""
    if not service.ready.is_set():
        raise NotReady(service.load_error)
    task = asyncio.ensure_future(service.worker.run(job))

    async def watch() -> None:
        while not task.done():
            if await request.is_disconnected():
                task.cancel()
                return
            await asyncio.sleep(0.25)

    watcher = asyncio.ensure_future(watch())
    try:
        return await task
    finally:
        watcher.cancel()


class NotReady(Exception):
    def __init__(self, load_error: str | None):
        super().__init__(
            f"the models failed to load: {load_error}" if load_error else "the models are still loading; retry shortly"
        )
        self.failed = load_error is not None


def create_app(service: VeriragService) -> FastAPI:
    cfg = service.config
    telemetry = Telemetry()
    service.worker.on_change = telemetry.queue

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        if cfg.warm_up:

            def warm() -> None:
                try:
                    service.warm_up()
                except Exception:
                    log.exception("the models could not be loaded; /readyz says why")

            service.worker.start(warm)  # on the model thread, before any request
        yield
        # uvicorn has stopped accepting and finished in-flight requests (graceful shutdown);
        # let the model thread finish what it runs, so no cache write is cut in half.
        await asyncio.get_running_loop().run_in_executor(None, service.worker.shutdown)

    app = FastAPI(
        title="verirag",
        version=_version(),
        lifespan=lifespan,
        description="Retrieval-augmented answers that come verified: a faithfulness score, a verdict "
        "at a threshold, the supporting passage, and the action taken.",
    )

    # ---- errors --------------------------------------------------------------------------------
    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        fields = _fields(exc)
        where = ", ".join(f["field"] for f in fields[:5])
        return _error(request, 422, "invalid_request", f"invalid request: {where}", fields=fields)

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException):
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:  # Starlette names the methods of the first route of the path only
            headers = {**(headers or {}), "Allow": ", ".join(_methods_of(app, request.url.path))}
        return _error(
            request, exc.status_code, HTTP_CODES.get(exc.status_code, "http_error"), str(exc.detail), headers=headers
        )

    @app.exception_handler(Overloaded)
    async def _overloaded(request: Request, exc: Overloaded):
        telemetry.rejected.labels("overloaded").inc()
        return _error(
            request,
            429,
            "overloaded",
            str(exc),
            headers={"Retry-After": str(exc.retry_after)},
            retry_after=exc.retry_after,
        )

    @app.exception_handler(QueueTimeout)
    async def _queue_timeout(request: Request, exc: QueueTimeout):
        telemetry.rejected.labels("queue_timeout").inc()
        retry = service.worker.retry_after()
        return _error(request, 503, "queue_timeout", str(exc), headers={"Retry-After": str(retry)})

    @app.exception_handler(NotReady)
    async def _not_ready(request: Request, exc: NotReady):
        return _error(
            request,
            503,
            "model_load_failed" if exc.failed else "not_ready",
            str(exc),
            headers=None if exc.failed else {"Retry-After": "5"},
        )

    @app.exception_handler(RunTimeout)
    async def _run_timeout(request: Request, exc: RunTimeout):
        telemetry.rejected.labels("run_timeout").inc()
        return _error(request, 504, "timeout", str(exc))

    @app.exception_handler(Cancelled)
    async def _cancelled(request: Request, exc: Cancelled):
        return _error(request, 504, "timeout", str(exc))

    @app.exception_handler(NoIndex)
    async def _no_index(request: Request, exc: NoIndex):
        return _error(request, 409, "no_index", str(exc))

    @app.exception_handler(VeriragError)
    async def _verirag(request: Request, exc: VeriragError):
        if isinstance(exc, (InputError, CapabilityError)):
            return _error(request, 422, "invalid_request", str(exc))
        if isinstance(exc, BackendError):
            return _error(request, 502, "backend_error", f"the model backend failed: {exc}")
        return _error(request, 503, "unavailable", str(exc))  # a model missing or failing its checksum

    # A bug of ours (any other exception) is answered by the Gateway: 500, the request id, no traceback.

    # ---- probes and pages ---------------------------------------------------------------------
    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(resources.files("verirag.server").joinpath("static/index.html").read_text("utf-8"))

    @app.get("/healthz", responses=errors())
    @app.head("/healthz", responses=errors())
    async def healthz() -> dict:
        """The process is up."""
        return {"status": "ok"}

    @app.get(
        "/readyz",
        responses=(
            readiness := {
                200: {"model": Readiness},
                503: {"model": Readiness, "description": "The models are loading or failed to load."},
                **errors(),
            }
        ),
    )
    @app.head("/readyz", responses=readiness)
    async def readyz():
        """The models are loaded and requests will be answered."""
        if service.ready.is_set():
            return {"status": "ready", "model": service.model_id, "index": service.has_index}
        status = "failed" if service.load_error else "loading"
        return JSONResponse({"status": status, "error": service.load_error}, status_code=503)

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(generate_latest(telemetry.registry), media_type=CONTENT_TYPE_LATEST)

    # ---- the API -----------------------------------------------------------------------------
    @app.get("/v1/methods", responses=errors())
    async def methods() -> dict:
        """The methods a request may name (those this service can run, and those that verify a
        given answer), and the service's defaults."""
        return service.methods()

    @app.post("/v1/ask", responses={200: {"model": AskResult}, **errors(409, *WITH_BODY, *ON_THE_WORKER)})
    async def ask(body: AskRequest, request: Request) -> dict:
        """Retrieve, answer, verify and act: what `verirag ask --json` prints."""
        service.check_method(body.method)  # a bad name is refused before it waits in the queue
        result = await _run(
            request,
            service,
            lambda token: service.ask(
                token,
                body.question,
                history=_history(body.history),
                k=body.k,
                method=body.method,
                threshold=body.threshold,
                fallback=body.fallback,
                prune=body.prune,
            ),
        )
        out = result.to_dict()
        telemetry.result("/v1/ask", out)
        return out

    @app.post("/v1/verify", responses={200: {"model": VerifyResult}, **errors(*WITH_BODY, *ON_THE_WORKER)})
    async def verify(body: VerifyRequest, request: Request) -> dict:
        """Verify an answer another RAG system produced from the passages it retrieved."""
        service.check_method(body.method)
        service.check_passages(len(body.passages))
        passages = passages_of(body)
        result = await _run(
            request,
            service,
            lambda token: service.verify(
                token,
                body.question,
                body.answer,
                passages,
                history=_history(body.history),
                method=body.method,
                threshold=body.threshold,
            ),
        )
        out = result.to_dict()
        telemetry.result("/v1/verify", out)
        return out

    @app.post("/v1/verify/batch", responses={200: {"model": VerifyBatchResponse}, **errors(*WITH_BODY, *ON_THE_WORKER)})
    async def verify_batch(body: VerifyBatchRequest, request: Request) -> dict:
        """Verify many answers in one request (at most MAX_BATCH): a result per request, in order,
        each what /v1/verify answers; an invalid request gets a result with its `error` in its place.
        The answers are scored together (faster than one /v1/verify each)."""
        requests = batch.checked(body.requests, service)  # before the queue: checking costs no model
        results = await _run(
            request, service, lambda token: batch.verify_requests(service, token, requests, _request_history)
        )
        out = [r.to_dict() for r in results]
        for r in out:
            telemetry.result("/v1/verify/batch", r)
        return {"results": out}

    @app.post("/v1/retrieve", responses={200: {"model": RetrieveResponse}, **errors(409, *WITH_BODY, *ON_THE_WORKER)})
    async def retrieve(body: RetrieveRequest, request: Request) -> dict:
        """The passages the index returns for a question (no model call)."""
        hits = await _run(request, service, lambda token: service.retrieve(token, body.question, body.k))
        return {"question": body.question, "passages": hits}

    # ---- OpenAI-compatible -------------------------------------------------------------------
    started = int(time.time())

    @app.get("/v1/models", responses={200: {"model": ModelList}, **errors()})
    async def models() -> dict:
        """OpenAI-compatible: the one model this service answers with."""
        return openai_compat.model_list(service.model_id, created=started)

    @app.get("/v1/models/{model}", responses={200: {"model": ModelCard}, **errors(404)})
    async def model(model: str) -> dict:
        if model != service.model_id:
            raise HTTPException(404, detail=f"no model {model!r}: this service answers with {service.model_id!r}")
        return openai_compat.model_card(model, created=started)

    @app.post(
        "/v1/chat/completions",
        responses={
            200: {
                "model": ChatCompletion,
                "description": "The verified answer; with `stream: true`, the same as "
                "server-sent `chat.completion.chunk` events ending with `data: [DONE]`.",
                "content": {"text/event-stream": {}},
            },  # each event's schema: contract.py
            **errors(409, *WITH_BODY, *ON_THE_WORKER),
        },
    )
    async def chat_completions(body: ChatCompletionRequest, request: Request):
        """OpenAI-compatible: the last user message with text is the question; the answer (or,
        below the threshold, what the configured action gives) is the assistant message, and the
        verification is in the `verirag` field. Streaming sends the answer once it is verified."""
        question, history = body.question(), body.history()
        result = await _run(request, service, lambda token: service.ask(token, question, history=history))
        out = result.to_dict()
        telemetry.result("/v1/chat/completions", out)
        ids = {"completion_id": f"chatcmpl-{request.state.request_id}", "created": int(time.time())}
        if not body.stream:
            return openai_compat.completion(out, **ids)
        include_usage = bool(body.stream_options and body.stream_options.include_usage)
        events = openai_compat.chunks(out, include_usage=include_usage, **ids)
        return StreamingResponse(
            openai_compat.server_sent_events(events),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )

    app.add_middleware(
        Gateway,
        telemetry=telemetry,
        log=access_logger(),
        api_key=cfg.api_key,
        max_body_bytes=cfg.max_body_bytes,
        routes=app.router.routes,
    )
    install_contract(app, service)
    app.state.service = service
    app.state.telemetry = telemetry
    return app


def _history(history) -> list | None:
    """A request's history as the library takes it: strings, and messages as {role, content}."""
    if history is None:
        return None
    return [t if isinstance(t, str) else t.model_dump() for t in history]


def _request_history(req) -> list | None:
    return _history(req.history)


def _methods_of(app: FastAPI, path: str) -> list[str]:
    methods: set[str] = set()
    for route in app.router.routes:
        if getattr(route, "path_regex", None) is not None and route.path_regex.match(path):
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("verirag")
    except Exception:  # running from a source tree without an install
        return "0"
