"""`verirag serve`: the HTTP service."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from verirag.cli._shared import (
    EscalateModelOpt,
    FallbackOpt,
    JudgeModelOpt,
    JudgeOpt,
    KOpt,
    ModelOpt,
    PresetOpt,
    RetrievalOpt,
    StageOpt,
    err,
    stage_overrides,
    warn_all,
    with_stage_options,
)

TIMEOUT_HELP = (
    "Seconds a request may run (then 504); an HTTP model backend gets a third of it per "
    "request (default; VERIRAG_OPENAI_TIMEOUT overrides)."
)
IndexOpt = Annotated[
    Path | None,
    typer.Option(help="An index built by `verirag index` (needed by /v1/ask and /v1/retrieve; /v1/verify needs none)."),
]
MethodOpt = Annotated[
    str | None,
    typer.Option(help="Default AwF method of /v1/ask (requests may name another; vanilla+nli when --judge is given)."),
]
VerifyMethodOpt = Annotated[
    str | None,
    typer.Option(
        help="Default judge of /v1/verify, by name: verifier (default: the shipped trained verifier, as wherever a given answer is verified; "
        "nli when --judge is given), cascade, llm_judge, ..."
    ),
]
MaxAnswerTokensOpt = Annotated[
    int | None,
    typer.Option(help="Longest answer in tokens (default: each method's own); a cap bounds each request's time."),
]
HostOpt = Annotated[str, typer.Option(help="Address to bind; anything but loopback needs --api-key.")]
ApiKeyOpt = Annotated[
    str | None, typer.Option(help="Bearer token every data route requires (default: $VERIRAG_API_KEY).")
]
QueueSizeOpt = Annotated[int, typer.Option(help="Requests that may wait for the model; more get 429.")]
QueueTimeoutOpt = Annotated[float, typer.Option(help="Seconds a request may wait for the model (then 503).")]
TimeoutOpt = Annotated[float, typer.Option(help=TIMEOUT_HELP)]
MaxBodyOpt = Annotated[int, typer.Option(help="Largest request body in bytes (then 413).")]


@with_stage_options
def serve(
    index: IndexOpt = None,
    preset: PresetOpt = "local",
    model: ModelOpt = None,
    method: MethodOpt = None,
    verify_method: VerifyMethodOpt = None,
    judge: JudgeOpt = None,
    judge_model: JudgeModelOpt = None,
    threshold: Annotated[str | None, typer.Option(help="Default verdict threshold, or a threshold file.")] = None,
    k: KOpt = None,
    fallback: FallbackOpt = None,
    escalate_model: EscalateModelOpt = None,
    retrieval: RetrievalOpt = None,
    max_answer_tokens: MaxAnswerTokensOpt = None,
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to bind.")] = 8000,
    api_key: ApiKeyOpt = None,
    queue_size: QueueSizeOpt = 16,
    queue_timeout: QueueTimeoutOpt = 120.0,
    timeout: TimeoutOpt = 300.0,
    max_body: MaxBodyOpt = 1 << 20,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
    stage: StageOpt = None,
    stage_settings: dict | None = None,
):
    """Run verirag as an HTTP service (FastAPI + uvicorn): ask, verify, retrieve, a web page at /."""
    from verirag.learned.threshold import parse_threshold
    from verirag.server.run import serve as run_service
    from verirag.server.service import ServiceConfig
    from verirag.settings import settings

    api_key = api_key or settings().api_key
    overrides = {
        "model": model,
        "method": method,
        "judge": judge,
        "judge_model": judge_model,
        "k": k,
        "fallback": fallback,
        "retrieval": retrieval,
        "escalate_model": escalate_model,
        "max_answer_tokens": max_answer_tokens,
        **(stage_settings or {}),
        **stage_overrides(stage),
    }
    cfg = ServiceConfig(
        preset=preset,
        index=index,
        overrides={a: b for a, b in overrides.items() if b is not None},
        threshold=parse_threshold(threshold)[0],
        api_key=api_key,
        queue_size=queue_size,
        verify_method=verify_method,
        queue_timeout=queue_timeout,
        request_timeout=timeout,
        max_body_bytes=max_body,
    )

    def started(service) -> None:
        warn_all(service.pipeline.threshold_warnings())
        err.print(
            f"verirag serving on http://{host}:{port}  (web page /, API docs /docs, "
            f"{'token required' if api_key else 'no token'}; loading {escape(service.model_id)}…)"
        )

    run_service(cfg, host=host, port=port, log_level=log_level, on_start=started)
