"""`/openapi.json` as the contract: every status a route can answer, with the error body, and the
rules that depend on the running service filled in (the methods it can run and verify with, the
passage limit, whether the escalate fallback has a model, whether a bearer token is needed).

A request valid by this schema is never refused as invalid; tests/test_server_contract.py holds
the service to it with schemathesis and all its checks.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from verirag.server.gateway import OPEN_PATHS
from verirag.server.schemas import ChatCompletionChunk, ErrorResponse

WHY = {
    400: "The body could not be read as JSON text (e.g. bytes that are not UTF-8).",
    401: "A bearer token is required (the service runs with an API key).",
    404: "No such model.",
    409: "The service has no index to retrieve from (it was started without --index).",
    413: "The request body exceeds the service's limit.",
    422: "The request is invalid: `error.fields` names each invalid field, or `error.message` says why.",
    429: "The queue is full: retry after `Retry-After` seconds.",
    500: "A bug of ours: the log has the details under the request id.",
    502: "The model backend failed (an outage is never turned into a verdict).",
    503: "The models are loading (Retry-After), failed to load, or the request waited too long in the queue.",
    504: "The request ran longer than the service's timeout.",
}
WITH_BODY = (400, 413, 422)
ON_THE_WORKER = (429, 502, 503, 504)


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """FastAPI `responses=` for these statuses (500 always: any route can meet a bug)."""
    return {s: {"model": ErrorResponse, "description": WHY[s]} for s in sorted({*statuses, 500})}


def install(app: FastAPI, service) -> None:
    """Make `app.openapi()` return the schema tailored to `service` (built once, on first request)."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            tailor(build(), service)
        return app.openapi_schema

    app.openapi = openapi


def tailor(schema: dict[str, Any], service) -> None:
    models = schema["components"]["schemas"]
    _only(models["AskRequest"]["properties"]["method"], service.runnable_methods())
    _only(models["VerifyRequest"]["properties"]["method"], service.verifying_methods())
    if not service.pipeline.config.escalate_model:
        fallback = models["AskRequest"]["properties"]["fallback"]
        for alt in fallback["anyOf"]:
            if "enum" in alt:
                alt["enum"] = [f for f in alt["enum"] if f != "escalate"]
    passages = models["VerifyRequest"]["properties"]["passages"]
    passages["maxItems"] = min(passages["maxItems"], service.config.max_passages)
    _stream_events(schema)
    if service.config.api_key:
        schema["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        for path, operations in schema["paths"].items():
            if path in OPEN_PATHS:
                continue
            for op in operations.values():
                op["security"] = [{"bearer": []}]
                op["responses"]["401"] = {
                    "description": WHY[401],
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
                }


def _only(optional_name: dict[str, Any], names: list[str]) -> None:
    """An Optional[str] property (anyOf string | null) becomes one of `names` or null."""
    optional_name["anyOf"] = [{"type": "string", "enum": list(names)}, {"type": "null"}]


def _stream_events(schema: dict[str, Any]) -> None:
    """A streamed chat answer, event by event (OpenAPI before 3.2 reads an event stream's schema as
    one event's): `data` is a chunk as JSON, or the closing `[DONE]`."""
    models = schema["components"]["schemas"]
    chunk = ChatCompletionChunk.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in chunk.pop("$defs", {}).items():
        models.setdefault(name, definition)
    models["ChatCompletionChunk"] = chunk
    event = {
        "type": "object",
        "required": ["data"],
        "properties": {
            "data": {
                "anyOf": [
                    {"const": "[DONE]"},
                    {
                        "type": "string",
                        "contentMediaType": "application/json",
                        "contentSchema": {"$ref": "#/components/schemas/ChatCompletionChunk"},
                    },
                ]
            }
        },
    }
    schema["paths"]["/v1/chat/completions"]["post"]["responses"]["200"]["content"]["text/event-stream"] = {
        "schema": event
    }
