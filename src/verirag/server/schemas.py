"""The HTTP service's requests and responses (pydantic): what clients may send, and the limits.

The schema is the contract (`/openapi.json`): every rule the code enforces on a request is stated
in it where JSON Schema can say it (lengths, ranges, "not blank", "no NUL", a user message with
text; the method names and the passage limit are filled in from the running service by
`verirag.server.contract`), so a request valid by the schema is never refused as invalid.
Requests forbid unknown fields (a misspelt `treshold` is a 422 naming it, not silently ignored),
except the OpenAI-compatible request, which must accept whatever an OpenAI client sends.
Responses are the library's own records (`AskResult`, `VerifyResult`), so the service answers
exactly what `verirag ask --json` prints.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, create_model, model_validator

from verirag.awf import answer_spec as spec_types
from verirag.awf.stage_kinds import kinds
from verirag.contexts import TEXT_KEYS
from verirag.conversation import MAX_HISTORY_WORDS, MAX_TURNS
from verirag.limits import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS
from verirag.types import VerifyResult

MAX_TEXT = MAX_ANSWER_CHARS  # characters of a question or an answer (verirag.limits, as every door)
MAX_PASSAGE = MAX_PASSAGE_CHARS  # characters of one passage
MAX_K = 50
MAX_PASSAGES = 1_000  # the schema states the service's own limit (ServiceConfig.max_passages, 64)
MAX_HISTORY = 1_000  # turns of a request's history (the most recent MAX_TURNS are read)
# answers of one /v1/verify/batch request: about 64 x 0.03 s with the trained verifier, and a body
# within the default byte limit; more is a 422 naming `requests` (send several requests)
MAX_BATCH = 64

# The schema's patterns are read by Python's `re` in the fuzzers that honour them; `\s` there is
# what str.strip() strips, which is what the validators below check.
NO_NUL = r"^[^\x00]*$"
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"


def _no_nul(text: str) -> str:
    if "\x00" in text:
        raise ValueError("must not contain NUL characters")
    return text


def _not_blank(text: str) -> str:
    if not _no_nul(text).strip():
        raise ValueError("must contain a character other than white space")
    return text


# The JSON types the schema states, without pydantic's coercions (false as 0.0, "3" as 3, 0 as
# false): a request the schema calls invalid is refused. An integral 3.0 is a JSON integer. The
# settings a request may give are the answer spec's own types (`verirag.awf.answer_spec`), so a bad
# value gets the message it gets at every door ("must be a number in [0, 1], got 1.5").
Threshold = spec_types.Unit
Count = spec_types.count(1, MAX_K)
Fallback = spec_types.Fallback
Flag = Annotated[bool, Field(strict=True)]


def _text(max_length: int, *, blank: bool = False, min_length: int = 1, **kw):
    return Annotated[
        str,
        Field(
            min_length=min_length,
            max_length=max_length,
            json_schema_extra={"pattern": NO_NUL if blank else NOT_BLANK},
            **kw,
        ),
        AfterValidator(_no_nul if blank else _not_blank),
    ]


Question = _text(MAX_TEXT, description="the question (not blank)")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HistoryMessage(Strict):
    """One earlier turn as an OpenAI-style message (system messages are read as no turn)."""

    role: Literal["user", "assistant", "system"]
    content: _text(MAX_TEXT, description="the turn's text (not blank)")


History = Annotated[
    list[_text(MAX_TEXT, description="a turn's text (not blank)") | HistoryMessage] | None,
    Field(
        None,
        max_length=MAX_HISTORY,
        description="the conversation the question was asked in: its earlier turns, oldest first, as "
        "strings (alternating user and agent, the user's first) or as OpenAI-style messages "
        '{role, content}. The judges read the question in it (a follow-up\'s "it" is named there); '
        f"at most {MAX_TURNS} most recent turns of at most {MAX_HISTORY_WORDS} words in all are read "
        "(older turns are cut), the trained verifier reading those that fit its window",
    ),
]


class _AskSettings(Strict):
    question: Question
    history: History
    k: Count | None = Field(None, description="passages to retrieve")
    method: str | None = Field(None, max_length=200, description="an AwF method (GET /v1/methods)")
    threshold: Threshold | None = Field(None, description="verdict threshold on the score")
    fallback: Fallback | None = Field(None, description="below the threshold: abstain, no-rag or escalate")

    def stage_settings(self) -> dict[str, Any]:
        """The request's fields of the built-in stage kinds (None: the service's setting)."""
        return {kind.name: getattr(self, kind.name) for kind in kinds()}


# /v1/ask: the settings above and a field per built-in stage kind (`verirag.awf.stage_kinds`),
# declared by the kind
AskRequest = create_model(
    "AskRequest",
    __base__=_AskSettings,
    **{kind.name: (kind.http(), Field(None, description=kind.http_help)) for kind in kinds()},
)


class PassageIn(Strict):
    id: _text(500, blank=True, min_length=0) | None = None
    title: _text(2_000, blank=True, min_length=0) = ""
    # an empty passage is kept, as at every door (verirag.contexts): with no text anywhere the
    # verdict is `unverified` (no_passage_text), not a refused request
    # its text under any name the contract reads (verirag.contexts.TEXT_KEYS: LangChain's page_content...)
    text: _text(MAX_PASSAGE, blank=True, min_length=0) = Field(validation_alias=AliasChoices(*TEXT_KEYS))


class VerifyRequest(Strict):
    question: Question
    history: History
    answer: _text(MAX_TEXT, description="the answer to verify (not blank)")
    # a plain string is a passage's text (as the Python Verifier takes it): its id is p0, p1, ... by place
    passages: list[PassageIn | _text(MAX_PASSAGE, blank=True, min_length=0)] = Field(
        ...,
        min_length=1,
        max_length=MAX_PASSAGES,
        description="the passages the answer came from; a plain string is a passage's text",
    )
    method: str | None = Field(None, max_length=200, description="GEN+PRED method whose predictor verifies")
    threshold: Threshold | None = None


class VerifyBatchRequest(Strict):
    # objects, each checked as a VerifyRequest on its own: an invalid one gets its error in its
    # place in the results, and the others are verified (a batch is not refused for one bad answer)
    requests: list[dict[str, Any]] = Field(
        ...,
        min_length=1,
        max_length=MAX_BATCH,
        description=f"at most {MAX_BATCH} verify requests, each what /v1/verify takes (VerifyRequest); "
        "one that is invalid gets a result with score null and its `error` in its place",
    )


class VerifyBatchResponse(BaseModel):
    results: list[VerifyResult] = Field(
        ..., description="one VerifyResult per request, in request order (as /v1/verify answers)"
    )


class RetrieveRequest(Strict):
    question: Question
    k: Count | None = None


# ---- the OpenAI-compatible request --------------------------------------------------------------
class ContentPart(BaseModel):
    """One of OpenAI's content parts; only {"type": "text", "text": ...} is read."""

    model_config = ConfigDict(extra="allow")
    type: str = Field(..., max_length=50)
    text: _text(MAX_TEXT, blank=True, min_length=0) | None = None


# A user message whose text is not blank, as JSON Schema says it: `messages` must contain one.
USER_MESSAGE_WITH_TEXT = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "role": {"const": "user"},
        "content": {
            "anyOf": [
                {"type": "string", "pattern": NOT_BLANK},
                {
                    "type": "array",
                    "contains": {
                        "type": "object",
                        "required": ["type", "text"],
                        "properties": {"type": {"const": "text"}, "text": {"type": "string", "pattern": NOT_BLANK}},
                    },
                },
            ]
        },
    },
}


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(..., max_length=50)
    # a string, or OpenAI's list of content parts ({"type": "text", "text": ...})
    content: _text(MAX_TEXT, blank=True, min_length=0) | list[ContentPart] | None = Field(None)

    def text(self) -> str:
        if isinstance(self.content, list):
            return "\n".join(p.text for p in self.content if p.type == "text" and p.text)
        return self.content or ""


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: Flag = False


class ChatCompletionRequest(BaseModel):
    """OpenAI's chat request. Honoured: `messages` (the question is the last user message with
    text; the user and assistant messages before it are the conversation it is read in), `stream` (server-sent chunks, once the answer is verified) and
    `stream_options.include_usage`. Everything else an OpenAI client sends (model, temperature,
    max_tokens, ...) is accepted and ignored: the service's own model, method and settings answer."""

    model_config = ConfigDict(extra="allow")
    messages: list[ChatMessage] = Field(
        ..., min_length=1, max_length=1_000, json_schema_extra={"contains": USER_MESSAGE_WITH_TEXT}
    )
    model: str | None = Field(None, max_length=500)
    stream: Flag | None = False
    stream_options: StreamOptions | None = None

    @model_validator(mode="after")
    def _a_user_message_with_text(self) -> ChatCompletionRequest:
        if not self.question():
            raise ValueError("no user message with text: the last user message with text is the question")
        return self

    def question(self) -> str:
        at = self._question_at()
        return "" if at is None else self.messages[at].text().strip()

    def _question_at(self) -> int | None:
        for i in range(len(self.messages) - 1, -1, -1):
            m = self.messages[i]
            if m.role == "user" and m.text().strip():
                return i
        return None

    def history(self) -> list[dict[str, str]]:
        """The conversation before the question: the user and assistant messages with text that
        come before it, oldest first, as {role, content} (system, developer and tool messages and
        messages without text, such as an assistant's tool call, are no turn of it)."""
        at = self._question_at() or 0
        return [
            {"role": m.role, "content": m.text()}
            for m in self.messages[:at]
            if m.role in ("user", "assistant") and m.text().strip()
        ]


# ---- responses (documented in /openapi.json; the routes return plain dicts) -------------------
class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")
    code: str = Field(
        ...,
        description="bad_request, unauthorized, not_found, body_too_large, invalid_request, "
        "no_index, overloaded, backend_error, not_ready, model_load_failed, "
        "queue_timeout, unavailable, timeout, internal, ...",
    )
    message: str
    fields: list[dict[str, str]] | None = Field(None, description="422: each invalid field and why")
    retry_after: int | None = None


class ErrorResponse(BaseModel):
    error: ErrorDetail
    request_id: str


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


class Usage(BaseModel):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int
    message: AssistantMessage
    finish_reason: str
    logprobs: None = None


class _Completion(BaseModel):
    """What every OpenAI completion object starts with."""

    id: str
    created: int
    model: str


class ChatCompletion(_Completion):
    object: Literal["chat.completion"] = "chat.completion"
    choices: list[Choice]
    usage: Usage
    verirag: dict[str, Any] = Field(..., description="the verified result, as POST /v1/ask answers it")


class Readiness(BaseModel):
    status: Literal["ready", "loading", "failed"]
    model: str | None = None
    index: bool | None = None
    error: str | None = None


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int
    delta: Delta
    finish_reason: str | None = None
    logprobs: None = None


class ChatCompletionChunk(_Completion):
    """One server-sent event of a streamed answer (`data: {...}`); the stream ends `data: [DONE]`."""

    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    choices: list[ChunkChoice]
    usage: Usage | None = None
    verirag: dict[str, Any] | None = Field(None, description="on the finishing chunk: the verified result")


class RetrieveResponse(BaseModel):
    question: str
    passages: list[dict[str, Any]]
