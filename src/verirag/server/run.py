"""Run the service under uvicorn: what `verirag serve` calls, with its safety checks."""

from __future__ import annotations

from collections.abc import Callable

from verirag.errors import InputError
from verirag.server.app import create_app
from verirag.server.service import ServiceConfig, VeriragService

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def check_bind(host: str, port: int, api_key: str | None) -> None:
    """A port in range, and a token whenever the address reaches beyond this machine."""
    if not 0 < port < 65536:
        raise InputError(f"--port must be in 1..65535, got {port}")
    if host not in LOOPBACK and not api_key:
        raise InputError(
            f"binding {host} exposes the service beyond this machine: set a token with --api-key or VERIRAG_API_KEY"
        )


def serve(
    config: ServiceConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    on_start: Callable[[VeriragService], None] | None = None,
) -> None:
    """Check the address and the configuration, build the service (`on_start(service)` before it
    loads its models: warnings, a banner), and serve until stopped."""
    import uvicorn

    check_bind(host, port, config.api_key)
    service = VeriragService(config.validate())
    if on_start is not None:
        on_start(service)
    # on SIGTERM a request admitted last may still wait and run its full time: let it finish
    uvicorn.run(
        create_app(service),
        host=host,
        port=port,
        access_log=False,
        log_level=log_level,
        timeout_graceful_shutdown=config.queue_timeout + config.request_timeout + 10,
    )
