"""OpenAI's chat-completion shapes for a verified answer: the whole completion, the same as
server-sent `chat.completion.chunk` events, and the model list.

The answer is generated and verified before anything is sent, so a stream carries the answer the
configured action gives (the answer, an abstention, a fallback answer), never text that is later
taken back; the last chunk holds `finish_reason` and the `verirag` result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

# words with the white space after them: the pieces a client renders as they arrive
_PIECE = re.compile(r"\s*\S+\s*|\s+")


def usage(result: dict[str, Any]) -> dict[str, int]:
    used = result.get("usage") or {}
    prompt, completion = int(used.get("prompt_tokens", 0)), int(used.get("completion_tokens", 0))
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion(result: dict[str, Any], *, completion_id: str, created: int) -> dict[str, Any]:
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": result["model"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result["answer"]},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": usage(result),
        "verirag": result,
    }


def chunks(result: dict[str, Any], *, completion_id: str, created: int, include_usage: bool) -> Iterator[dict]:
    """The stream's chunks: the role, the answer in word-sized pieces, the finish with the verirag
    result, and (when the client asked for `stream_options.include_usage`, as OpenAI does) a last
    chunk with no choices and the usage; otherwise the usage rides on the finishing chunk."""
    head = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": result["model"]}

    def chunk(delta: dict, finish: str | None = None, **extra) -> dict:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}], **extra}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _PIECE.findall(result["answer"]):
        yield chunk({"content": piece})
    if include_usage:
        yield chunk({}, "stop", verirag=result)
        yield {**head, "choices": [], "usage": usage(result)}
    else:
        yield chunk({}, "stop", verirag=result, usage=usage(result))


def server_sent_events(events: Iterator[dict]) -> Iterator[str]:
    for event in events:
        yield f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"


def model_list(model_id: str, *, created: int) -> dict[str, Any]:
    return {"object": "list", "data": [model_card(model_id, created=created)]}


def model_card(model_id: str, *, created: int) -> dict[str, Any]:
    return {"id": model_id, "object": "model", "created": created, "owned_by": "verirag"}
