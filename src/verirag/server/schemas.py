"""The HTTP service's requests and responses (pydantic): what clients may send, and the limits.

Requests forbid unknown fields (a misspelt `treshold` is a 422 naming it, not silently ignored),
except the OpenAI-compatible request, which must accept whatever an OpenAI client sends.
Responses are the library's own records (`AskResult.to_dict()`, `VerifyResult.to_dict()`), so the
service answers exactly what `verirag ask --json` prints.
"""
from __future__ import annotations

from typing import Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator

MAX_TEXT = 20_000      # characters of a question or an answer
MAX_PASSAGE = 50_000   # characters of one passage
MAX_K = 50
MAX_PASSAGES = 1_000   # the service's own limit (ServiceConfig.max_passages, 64) is lower


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    return text


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AskRequest(Strict):
    question: str = Field(..., min_length=1, max_length=MAX_TEXT)
    k: Optional[int] = Field(None, ge=1, le=MAX_K, description="passages to retrieve")
    method: Optional[str] = Field(None, max_length=200, description="an AwF method (GET /v1/methods)")
    threshold: Optional[float] = Field(None, ge=0.0, le=1.0, description="verdict threshold on the score")
    fallback: Optional[Literal["abstain", "no-rag", "escalate"]] = None

    _text = field_validator("question")(_no_nul)


class PassageIn(Strict):
    id: Optional[str] = Field(None, max_length=500)
    title: str = Field("", max_length=2_000)
    text: str = Field(..., min_length=1, max_length=MAX_PASSAGE)

    _text = field_validator("text", "title")(_no_nul)


class VerifyRequest(Strict):
    question: str = Field(..., min_length=1, max_length=MAX_TEXT)
    answer: str = Field(..., min_length=1, max_length=MAX_TEXT)
    passages: list[PassageIn] = Field(..., min_length=1, max_length=MAX_PASSAGES)
    method: Optional[str] = Field(None, max_length=200, description="GEN+PRED method whose predictor verifies")
    threshold: Optional[float] = Field(None, ge=0.0, le=1.0)

    _text = field_validator("question", "answer")(_no_nul)


class RetrieveRequest(Strict):
    question: str = Field(..., min_length=1, max_length=MAX_TEXT)
    k: Optional[int] = Field(None, ge=1, le=MAX_K)

    _text = field_validator("question")(_no_nul)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(..., max_length=50)
    # a string, or OpenAI's list of content parts ({"type": "text", "text": ...})
    content: Union[str, list[dict[str, Any]], None] = None

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(p["text"] for p in self.content if p.get("type") == "text" and isinstance(p.get("text"), str))
        return self.content or ""


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat request. Honoured: `messages` (the last user message is the question) and
    `stream` (false only). Everything else an OpenAI client sends (model, temperature, max_tokens,
    ...) is accepted and ignored: the service's own model, method and settings answer."""

    model_config = ConfigDict(extra="allow")
    messages: list[ChatMessage] = Field(..., min_length=1, max_length=1_000)
    model: Optional[str] = Field(None, max_length=500)
    stream: bool = False

    def question(self) -> str:
        for m in reversed(self.messages):
            if m.role == "user":
                return m.text()
        return ""
