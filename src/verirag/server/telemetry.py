"""What the service counts (Prometheus, at /metrics) and logs (one JSON line per request).

Each app has its own registry, so two apps in one process (tests) never share counts. Route labels
are route templates, never raw paths, so a client cannot grow the label set. No header is logged:
a bearer token never reaches a log line.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

ACCESS_LOG = "verirag.access"


class Telemetry:
    def __init__(self) -> None:
        r = self.registry = CollectorRegistry()
        self.requests = Counter(
            "verirag_requests_total", "HTTP requests by route and status code", ["route", "status"], registry=r
        )
        self.latency = Histogram(
            "verirag_request_duration_seconds",
            "Time to answer a request, by route",
            ["route"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
            registry=r,
        )
        self.queue_depth = Gauge("verirag_queue_depth", "Requests waiting for the model", registry=r)
        self.running = Gauge("verirag_requests_running", "Requests the model is serving now", registry=r)
        self.rejected = Counter(
            "verirag_rejected_total",
            "Requests refused or abandoned, by reason "
            "(overloaded, queue_timeout, run_timeout, body_too_large, unauthorized)",
            ["reason"],
            registry=r,
        )
        self.verdicts = Counter(
            "verirag_verdicts_total",
            "Verdicts by route, verdict and action",
            ["route", "verdict", "action"],
            registry=r,
        )
        self.model_calls = Counter("verirag_model_calls_total", "Model requests made (cache hits included)", registry=r)
        self.cache_hits = Counter("verirag_cache_hits_total", "Model requests served by the request cache", registry=r)
        self.prompt_tokens = Counter("verirag_prompt_tokens_total", "Prompt tokens the model read", registry=r)
        self.completion_tokens = Counter("verirag_completion_tokens_total", "Tokens the model generated", registry=r)

    def queue(self, waiting: int, running: int) -> None:
        self.queue_depth.set(waiting)
        self.running.set(running)

    def result(self, route: str, result: dict[str, Any]) -> None:
        """Count a verdict and the model work behind it (an AskResult or VerifyResult as a dict)."""
        if result.get("verdict") == "unverified":  # counted apart: the judge could not judge it
            verdict = "unverified"
        elif result.get("error") and not result.get("faithful"):
            verdict = "error"
        else:
            verdict = "supported" if result.get("faithful") else "unsupported"
        self.verdicts.labels(route, verdict, result.get("action", "none")).inc()
        usage = result.get("usage") or {}
        self.model_calls.inc(usage.get("calls", 0))
        self.cache_hits.inc(usage.get("cache_hits", 0))
        self.prompt_tokens.inc(usage.get("prompt_tokens", 0))
        self.completion_tokens.inc(usage.get("completion_tokens", 0))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update(getattr(record, "fields", {}))
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (not the one of the first app's creation)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def access_logger() -> logging.Logger:
    log = logging.getLogger(ACCESS_LOG)
    if not log.handlers:
        handler = _StderrHandler()
        handler.setFormatter(JsonFormatter())
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


def log_access(
    log: logging.Logger,
    *,
    request_id: str,
    method: str,
    route: str,
    path: str,
    status: int,
    started: float,
    client: str | None,
) -> None:
    log.info(
        "request",
        extra={
            "fields": {
                "request_id": request_id,
                "method": method,
                "route": route,
                "path": path[:200],
                "status": status,
                "duration_ms": round(1000 * (time.perf_counter() - started), 1),
                "client": client,
            }
        },
    )
