"""The service's routes, in groups: probes and the page, the answer and verify API, and the
OpenAI-compatible facade. Each group adds its routes to the app over one `VeriragService`
(`create_app` calls them in order). They are added to the app itself, not through APIRouter's
include: the gateway and the 405 answer read the app's flat route list."""

from __future__ import annotations

import asyncio
import time
from importlib import resources

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException

from verirag.server import openai_compat
from verirag.server import verify_batch as batch
from verirag.server.contract import ON_THE_WORKER, WITH_BODY, errors
from verirag.server.http_errors import NotReady
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
from verirag.server.service import VeriragService
from verirag.server.telemetry import Telemetry
from verirag.server.verify_batch import passages_of
from verirag.types import AskResult, VerifyResult


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


def _history(history) -> list | None:
    """A request's history as the library takes it: strings, and messages as {role, content}."""
    if history is None:
        return None
    return [t if isinstance(t, str) else t.model_dump() for t in history]


def _request_history(req) -> list | None:
    return _history(req.history)


READINESS = {
    200: {"model": Readiness},
    503: {"model": Readiness, "description": "The models are loading or failed to load."},
    **errors(),
}


def add_probe_routes(app: FastAPI, service: VeriragService, telemetry: Telemetry) -> None:
    """The web page, liveness, readiness, metrics and the methods list."""

    @app.api_route("/", methods=["GET", "HEAD"], include_in_schema=False)
    async def page() -> HTMLResponse:
        return HTMLResponse(resources.files("verirag.server").joinpath("static/index.html").read_text("utf-8"))

    @app.get("/healthz", responses=errors())
    @app.head("/healthz", responses=errors())
    async def healthz() -> dict:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", responses=READINESS)
    @app.head("/readyz", responses=READINESS)
    async def readyz():
        """The models are loaded and requests will be answered."""
        if service.ready.is_set():
            return {"status": "ready", "model": service.model_id, "index": service.has_index}
        status = "failed" if service.load_error else "loading"
        return JSONResponse({"status": status, "error": service.load_error}, status_code=503)

    @app.get("/metrics", include_in_schema=False)
    async def metrics() -> Response:
        return Response(generate_latest(telemetry.registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/v1/methods", responses=errors())
    async def methods() -> dict:
        """The methods a request may name (those this service can run, and those that verify a
        given answer), and the service's defaults."""
        return service.methods()


def add_answer_routes(app: FastAPI, service: VeriragService, telemetry: Telemetry) -> None:
    """/v1/ask and /v1/retrieve: answers from the service's index."""

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
                **body.stage_settings(),
            ),
        )
        out = result.to_dict()
        telemetry.result("/v1/ask", out)
        return out

    @app.post("/v1/retrieve", responses={200: {"model": RetrieveResponse}, **errors(409, *WITH_BODY, *ON_THE_WORKER)})
    async def retrieve(body: RetrieveRequest, request: Request) -> dict:
        """The passages the index returns for a question (no model call)."""
        hits = await _run(request, service, lambda token: service.retrieve(token, body.question, body.k))
        return {"question": body.question, "passages": hits}


def add_verify_routes(app: FastAPI, service: VeriragService, telemetry: Telemetry) -> None:
    """/v1/verify and /v1/verify/batch: answers another RAG system produced."""

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


CHAT_RESPONSES = {
    200: {
        "model": ChatCompletion,
        "description": "The verified answer; with `stream: true`, the same as "
        "server-sent `chat.completion.chunk` events ending with `data: [DONE]`.",
        "content": {"text/event-stream": {}},
    },  # each event's schema: contract.py
    **errors(409, *WITH_BODY, *ON_THE_WORKER),
}


def add_openai_routes(app: FastAPI, service: VeriragService, telemetry: Telemetry) -> None:
    """The OpenAI-compatible facade: /v1/models and /v1/chat/completions."""
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

    @app.post("/v1/chat/completions", responses=CHAT_RESPONSES)
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
