"""`verirag serve`: the HTTP service."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from verirag.cli._shared import (
    MODEL_HELP,
    NO_PRUNE_HELP,
    PRESET_HELP,
    PRUNE_HELP,
    PRUNE_THRESHOLD_HELP,
    STAGE_HELP,
    err,
    prune_overrides,
    stage_overrides,
    warn_all,
)


def serve(
    index: Path | None = typer.Option(
        None, help="An index built by `verirag index` (needed by /v1/ask and /v1/retrieve; /v1/verify needs none)."
    ),
    preset: str = typer.Option("local", help=PRESET_HELP),
    model: str | None = typer.Option(None, help=MODEL_HELP),
    method: str | None = typer.Option(
        None,
        help="Default AwF method of /v1/ask (requests may name another; vanilla+nli when --judge is given).",
    ),
    verify_method: str | None = typer.Option(
        None,
        help="Default method of /v1/verify: its predictor judges answers other systems produced "
        "(default: vanilla+verifier, the shipped trained verifier, as everywhere; vanilla+nli when --judge is given).",
    ),
    judge: str | None = typer.Option(
        None,
        help="Entailment model of +nli methods: llm or hf:NLI_MODEL; selects vanilla+nli where no method is named.",
    ),
    judge_model: str | None = typer.Option(None, help="Model of the LLM judge (default: --model)."),
    threshold: str | None = typer.Option(None, help="Default verdict threshold, or a threshold file."),
    k: int | None = typer.Option(None, help="Passages to retrieve (default 5)."),
    fallback: str | None = typer.Option(None, help="Below the threshold: abstain, no-rag or escalate."),
    escalate_model: str | None = typer.Option(None, help="The larger model for --fallback escalate."),
    retrieval: str | None = typer.Option(None, help="hybrid (default), bm25 or dense (for a new index)."),
    max_answer_tokens: int | None = typer.Option(
        None, help="Longest answer in tokens (default: each method's own); a cap bounds each request's time."
    ),
    host: str = typer.Option("127.0.0.1", help="Address to bind; anything but loopback needs --api-key."),
    port: int = typer.Option(8000, help="Port to bind."),
    api_key: str | None = typer.Option(
        None, help="Bearer token every data route requires (default: $VERIRAG_API_KEY)."
    ),
    queue_size: int = typer.Option(16, help="Requests that may wait for the model; more get 429."),
    queue_timeout: float = typer.Option(120.0, help="Seconds a request may wait for the model (then 503)."),
    timeout: float = typer.Option(
        300.0,
        help="Seconds a request may run (then 504); an HTTP model backend gets a third of it per "
        "request (default; VERIRAG_OPENAI_TIMEOUT overrides).",
    ),
    max_body: int = typer.Option(1 << 20, help="Largest request body in bytes (then 413)."),
    log_level: str = typer.Option("info", help="uvicorn log level."),
    prune: bool = typer.Option(False, "--prune", help=PRUNE_HELP),
    prune_threshold: float | None = typer.Option(None, "--prune-threshold", metavar="X", help=PRUNE_THRESHOLD_HELP),
    no_prune: bool = typer.Option(False, "--no-prune", help=NO_PRUNE_HELP),
    stage: list[str] | None = typer.Option(None, "--stage", metavar="MODULE:CLASS[,KEY=VALUE...]", help=STAGE_HELP),
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
        **prune_overrides(prune, prune_threshold, no_prune),
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
