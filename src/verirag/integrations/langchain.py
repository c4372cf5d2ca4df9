"""verirag inside LangChain (`pip install verirag[langchain]`, langchain-core >= 0.3).

- `VeriragVerifier`: a runnable put after a RAG chain. It takes what the chain produced (the
  question, the answer, the retrieved Documents: "input", "answer", "context" by default, as
  `create_retrieval_chain` returns them), verifies the answer against the Documents and acts as
  `verirag ask` does (answer, abstain, answer without the passages, escalate), in process or
  through `verirag serve`.
- `VeriragRetriever`: a verirag Index as a retriever; each Document carries its retrieval score.
- `TrustFilterCompressor`: the conformal trust filter (`verirag calibrate-retrieval`) as a document
  compressor (e.g. in a ContextualCompressionRetriever): keeps the Documents it trusts.

    verified = rag_chain | VeriragVerifier(pipeline=Pipeline.from_preset("local"))
    out = verified.invoke({"input": "Who designed the lighthouse?"})   # out["answer"], ["action"], ["score"]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    import langchain_core  # noqa: F401
except ImportError as e:  # the extra is not installed: say which one
    raise ImportError("verirag.integrations.langchain needs langchain-core: pip install 'verirag[langchain]'") from e
from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
from langchain_core.documents import BaseDocumentCompressor, Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableSerializable
from langchain_core.runnables.config import run_in_executor
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr, model_validator

from verirag.awf.pipeline import Pipeline
from verirag.awf.policies import ABSTAINED, ABSTENTION_TEXT, ANSWERED, FALLBACKS
from verirag.client import VeriragClient
from verirag.contexts import passage_id
from verirag.errors import InputError
from verirag.learned.trust_filter import ConformalTrustFilter
from verirag.types import Passage


class VeriragVerifier(RunnableSerializable[dict, dict]):
    """Verify a RAG chain's answer against the Documents it was answered from, then act.

    Input: a dict with the question (`question_key`), the answer (`answer_key`: a str or a chat
    message such as an AIMessage), the retrieved Documents (`documents_key`) and, where the chain
    has one, the conversation (`history_key`, "chat_history" by default as LangChain's
    history-aware chains name it: the question is verified in it). Output: the same
    dict with the answer replaced by what the user should see (the answer, the abstention text or
    the fallback's answer), plus `score`, `faithful`, `action` ("answered", "abstained",
    "fallback", "escalated"), `supporting_document` (the retrieved Document, metadata and all,
    that supports the answer best; None when none was judged) and `verirag`, the full result
    (`AskResult.to_dict()`; through the service the VerifyResult with `action`, `answer` and
    `retrieved_answer` added, and `score` None when no passage could be judged).

    One backend: `pipeline`, a verirag Pipeline run in process (its method must verify a given
    answer: a GENERATOR+PREDICTOR method; the default verifies with "vanilla+verifier"; `threshold` and `fallback`
    default to its own); or `service_url` of `verirag serve`. The service's POST /v1/verify
    returns the verdict only (method: `method`, or the service's verify default), so
    this client acts on it by abstaining below the threshold; "no-rag" and "escalate" answer
    again with a model and need the in-process pipeline. The service's errors are those of
    `verirag.client`: a refused `api_key` is an AuthError, a refused request an InputError, and a
    busy, failing or unreachable service (like a failing model in process) a BackendError: an
    outage is never an "unsupported" verdict.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    pipeline: Pipeline | None = None
    service_url: str | None = None
    api_key: SecretStr | None = None
    method: str | None = None
    threshold: Any | None = None  # a float in [0, 1], or (in process) a fitted ThresholdController
    fallback: str | None = None
    question_key: str = "input"
    answer_key: str = "answer"
    documents_key: str = "context"
    history_key: str = "chat_history"
    timeout: float = Field(300.0, gt=0)
    _client: VeriragClient | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _one_backend(self) -> VeriragVerifier:
        if (self.pipeline is None) == (self.service_url is None):
            raise InputError("give VeriragVerifier one backend: pipeline=Pipeline(...) or service_url='http://...'")
        if self.fallback is not None and self.fallback not in FALLBACKS:
            raise InputError(f"fallback must be one of {', '.join(FALLBACKS)}, got {self.fallback!r}")
        if self.service_url is not None and self.fallback not in (None, "abstain"):
            raise InputError(
                f"fallback {self.fallback!r} answers again with a model, which /v1/verify does not: "
                "through the service only 'abstain' is possible; use pipeline=... for it"
            )
        if self.service_url is not None and self.threshold is not None and not isinstance(self.threshold, (int, float)):
            raise InputError("through the service the threshold is a number in [0, 1]")
        if self.pipeline is not None and self.method is not None:
            raise InputError("method is the service's option; in process the pipeline's own method verifies")
        if self.service_url is not None:
            key = self.api_key.get_secret_value() if self.api_key else None
            self._client = VeriragClient(self.service_url, api_key=key, timeout=self.timeout)
        return self

    # ---- the Runnable interface: batch, stream and their async forms come from invoke / ainvoke
    def invoke(self, input: dict, config: RunnableConfig | None = None, **kwargs: Any) -> dict:
        return self._call_with_config(self._verify, input, config, **kwargs)

    async def ainvoke(self, input: dict, config: RunnableConfig | None = None, **kwargs: Any) -> dict:
        return await self._acall_with_config(self._averify, input, config, **kwargs)

    def _verify(self, input: dict) -> dict:
        question, answer, docs, passages = self._read(input)
        history = self._history(input)
        return self._output(input, docs, passages, self._judged(question, answer, passages, history))

    async def _averify(self, input: dict, config: RunnableConfig) -> dict:
        question, answer, docs, passages = self._read(input)
        history = self._history(input)
        # the model, or the wait for the service, runs in a worker thread: the event loop stays free
        result = await run_in_executor(config, self._judged, question, answer, passages, history)
        return self._output(input, docs, passages, result)

    def _read(self, input: Any) -> tuple[str, str, list[Document], list[Passage]]:
        keys = (self.question_key, self.answer_key, self.documents_key)
        if not isinstance(input, Mapping):
            raise InputError(f"VeriragVerifier takes a dict with the keys {keys}, got {type(input).__name__}")
        missing = [k for k in keys if k not in input]
        if missing:
            raise InputError(
                f"the input has no {', '.join(map(repr, missing))} (its keys: {sorted(map(str, input))}); "
                "set question_key, answer_key or documents_key to the names your chain uses"
            )
        question, answer, docs = (input[k] for k in keys)
        answer = _message_text(answer) if isinstance(answer, BaseMessage) else answer
        for key, value in ((self.question_key, question), (self.answer_key, answer)):
            if not isinstance(value, str) or not value.strip():
                raise InputError(
                    f"{key!r} must be a non-empty string (or, for the answer, a chat message), got {value!r:.80}"
                )
        if isinstance(docs, (str, bytes)) or not isinstance(docs, Sequence):
            raise InputError(f"{self.documents_key!r} must be a list of Documents, got {type(docs).__name__}")
        if not docs:
            raise InputError(
                f"no documents under {self.documents_key!r}: an answer is verified against the "
                "documents it was answered from (did the retriever, or a trust filter, keep none?)"
            )
        for i, d in enumerate(docs):
            if not isinstance(d, Document) or not d.page_content.strip():
                raise InputError(f"{self.documents_key}[{i}] must be a Document with text, got {d!r:.80}")
        # the contract's ids (verirag.contexts): the Document's own, else p0, p1, ... by place; chunks
        # of one source may share a metadata id, so a repeat numbers them all by place instead
        ids = [str(d.id or d.metadata.get("id") or passage_id(i)) for i, d in enumerate(docs)]
        if len(set(ids)) < len(ids):  # the supporting passage must name one Document
            ids = [passage_id(i) for i in range(len(docs))]
        passages = [
            Passage(
                id=i,
                text=d.page_content,
                title=str(d.metadata.get("title") or ""),
                source=str(d.metadata.get("source") or ""),
            )
            for i, d in zip(ids, docs)
        ]
        return question, answer, list(docs), passages

    def _history(self, input: Mapping) -> list | None:
        """The conversation under `history_key` (LangChain's "chat_history": messages, or
        (role, text) pairs, or strings), as {role, content} messages and strings; None without
        one. Human and AI messages are turns; system and tool messages are none."""
        turns = input.get(self.history_key)
        if turns is None:
            return None
        if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Sequence):
            raise InputError(f"{self.history_key!r} must be a list of chat messages, got {type(turns).__name__}")
        out: list = []
        for t in turns:
            if isinstance(t, BaseMessage):
                role = {"human": "user", "ai": "assistant"}.get(t.type)
                if role is not None:
                    out.append({"role": role, "content": _message_text(t)})
            elif isinstance(t, tuple) and len(t) == 2:
                role = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}.get(str(t[0]))
                if role is not None:
                    out.append({"role": role, "content": str(t[1])})
            else:
                out.append(t)  # a string, or a {role, content} message: checked as the library checks it
        return out

    def _judged(self, question: str, answer: str, passages: list[Passage], history: list | None = None) -> dict:
        if self.pipeline is not None:
            return self.pipeline.verify_and_act(
                question, answer, passages, history=history, threshold=self.threshold, fallback=self.fallback
            ).to_dict()
        if history is not None:
            from verirag.conversation import as_history

            as_history(history, name=self.history_key)  # refused here, as in process, not as the service's 422
        verdict = self._client.verify(
            question, answer, passages, history=history, method=self.method, threshold=self.threshold
        )
        return self._acted(answer, verdict.to_dict())

    @staticmethod
    def _acted(answer: str, verdict: dict) -> dict:
        """/v1/verify's verdict, acted on here the only way a verdict allows: abstain below the threshold."""
        action = ANSWERED if verdict["faithful"] else ABSTAINED
        return {
            **verdict,
            "answer": answer if action == ANSWERED else ABSTENTION_TEXT,
            "action": action,
            "retrieved_answer": answer,
        }

    def _output(self, input: Mapping, docs: list[Document], passages: list[Passage], result: dict) -> dict:
        best = result.get("supporting_passage")
        support = docs[[p.id for p in passages].index(best["id"])] if best else None
        return {
            **input,
            self.answer_key: result["answer"],
            "score": result["score"],
            "faithful": result["faithful"],
            "action": result["action"],
            "supporting_document": support,
            "verirag": result,
        }


def _message_text(message: BaseMessage) -> str:
    """A chat message's text: its content, or the text parts of a list of content blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or b.get("type") == "text"
    )


class VeriragRetriever(BaseRetriever):
    """A verirag Index (`Pipeline.search_index`, `Index.load(dir)`) as a retriever. Each Document
    has the passage's id and metadata plus its title, source, retrieval `score` and `rank`: the
    score is what a TrustFilterCompressor reads."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    k: int = Field(5, ge=1)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [
            Document(
                id=h.passage.id,
                page_content=h.passage.text,
                metadata={
                    **h.passage.meta,
                    "id": h.passage.id,
                    "title": h.passage.title,
                    "source": h.passage.source,
                    "score": float(h.score),
                    "rank": h.rank,
                },
            )
            for h in self.index.search(query, k=self.k)
        ]


class TrustFilterCompressor(BaseDocumentCompressor):
    """Keep the retrieved Documents whose retrieval score the conformal trust filter trusts
    (`ConformalTrustFilter.trusted`), in their order, the original objects. The filter is
    calibrated on one retriever's raw scores, read from `metadata[score_key]` (VeriragRetriever
    puts them there); a Document without one is an InputError. When none is trusted the list is
    empty: branch on it to abstain before answering, as `verirag ask --trust` does."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    trust_filter: ConformalTrustFilter  # fitted, or loaded from `verirag calibrate-retrieval`
    score_key: str = "score"

    @model_validator(mode="after")
    def _fitted(self) -> TrustFilterCompressor:
        self.trust_filter.check_fitted()
        return self

    @classmethod
    def load(cls, path: str | Path, retriever: VeriragRetriever | None = None, **kwargs: Any) -> TrustFilterCompressor:
        """The filter saved at `path`. Given the retriever it will filter, a filter calibrated for
        another kind of retriever is refused, and another corpus or k warns (the coverage
        guarantee does not carry over)."""
        expect = (
            None
            if retriever is None
            else {"retriever": retriever.index.kind, "corpus": retriever.index.fingerprint, "k": retriever.k}
        )
        return cls(trust_filter=ConformalTrustFilter.load(path, expect=expect), **kwargs)

    def compress_documents(
        self, documents: Sequence[Document], query: str, callbacks: Callbacks | None = None
    ) -> list[Document]:
        documents = list(documents)
        for i, d in enumerate(documents):
            score = d.metadata.get(self.score_key)
            if isinstance(score, bool) or not isinstance(score, (int, float)):
                raise InputError(
                    f"document {i} has no retrieval score in metadata[{self.score_key!r}] (got "
                    f"{score!r}): the trust filter judges the raw scores of the retriever it was "
                    "calibrated on (VeriragRetriever records them)"
                )
        mask = self.trust_filter.trusted([d.metadata[self.score_key] for d in documents])
        return [d for d, trusted in zip(documents, mask) if trusted]
