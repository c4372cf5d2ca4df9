"""verirag as an HTTP service: `verirag serve`, or `create_app(VeriragService(ServiceConfig(...)))`.

Routes: POST /v1/ask, /v1/verify, /v1/retrieve, /v1/chat/completions (OpenAI-compatible);
GET /v1/methods, /healthz, /readyz, /metrics (Prometheus), / (the web page), /docs (OpenAPI).
"""

from verirag.server.app import create_app
from verirag.server.service import ServiceConfig, VeriragService

__all__ = ["ServiceConfig", "VeriragService", "create_app"]
