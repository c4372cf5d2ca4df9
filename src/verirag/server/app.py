"""The HTTP service (FastAPI): the app, its start-up and shutdown.

    app = create_app(VeriragService(ServiceConfig(index=Path("my-index"))))
    uvicorn.run(app, host="127.0.0.1", port=8000)        # or: verirag serve --index my-index

The routes are in `verirag.server.routes`, the error mapping in `verirag.server.http_errors`.
Every error is JSON, `{"error": {"code", "message", ...}, "request_id"}`, with the status that says
whose fault it is: 401 token, 404 no such model, 409 no index to retrieve from, 413 body, 422
request (the field named), 429 queue full (with
Retry-After), 502 backend failed, 503 not ready or waited too long, 504 ran too long, 500 only for a
bug of ours, never with a traceback (that goes to the log, under the request id).
"""

from __future__ import annotations

import asyncio
import logging
from contextlib import asynccontextmanager

from fastapi import FastAPI

from verirag.server.contract import install as install_contract
from verirag.server.gateway import Gateway
from verirag.server.http_errors import install_error_handlers
from verirag.server.routes import add_answer_routes, add_openai_routes, add_probe_routes, add_verify_routes
from verirag.server.service import VeriragService
from verirag.server.telemetry import Telemetry, access_logger

log = logging.getLogger("verirag.server")


def _lifespan(service: VeriragService):
    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        if service.config.warm_up:

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

    return lifespan


def create_app(service: VeriragService) -> FastAPI:
    cfg = service.config
    telemetry = Telemetry()
    service.worker.on_change = telemetry.queue
    app = FastAPI(
        title="verirag",
        version=_version(),
        lifespan=_lifespan(service),
        description="Retrieval-augmented answers that come verified: a faithfulness score, a verdict "
        "at a threshold, the supporting passage, and the action taken.",
    )
    install_error_handlers(app, service, telemetry)
    for add_routes in (add_probe_routes, add_answer_routes, add_verify_routes, add_openai_routes):
        add_routes(app, service, telemetry)
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


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("verirag")
    except Exception:  # running from a source tree without an install
        return "0"
