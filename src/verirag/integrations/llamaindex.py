"""verirag inside LlamaIndex (`pip install "verirag[llamaindex]"`).

    evaluator = VeriragEvaluator(pipeline)              # or VeriragEvaluator(url="http://127.0.0.1:8000")
    evaluator.evaluate(query=q, response=a, contexts=[...])   # EvaluationResult: passing, score, feedback
    engine = VerifiedQueryEngine(query_engine, pipeline, fallback="abstain")
    engine.query(q)   # Response: the answer to show; metadata["verirag"]: score, faithful, action, ...

`VeriragEvaluator` is a LlamaIndex evaluator (BaseEvaluator: evaluate / aevaluate / evaluate_response,
so BatchEvalRunner and RetryQueryEngine take it). `VerifiedQueryEngine` wraps any query engine and
verifies each answer against the response's source nodes, then acts as `Pipeline.ask` does (answer,
abstain, fall back, escalate). A backend outage raises BackendError: it is never a "not passing"
(through the service, the errors are those of `verirag.client`: a refused key is an AuthError).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

try:
    from llama_index.core.base.base_query_engine import BaseQueryEngine
    from llama_index.core.base.response.schema import RESPONSE_TYPE, AsyncStreamingResponse, Response
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.evaluation import BaseEvaluator, EvaluationResult
    from llama_index.core.prompts.mixin import PromptDictType, PromptMixinType
    from llama_index.core.schema import NodeWithScore, QueryBundle
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError('verirag.integrations.llamaindex needs LlamaIndex: pip install "verirag[llamaindex]"') from e

from verirag.awf.pipeline import Pipeline
from verirag.client import VeriragClient
from verirag.contexts import to_passages
from verirag.errors import InputError
from verirag.types import Passage

__all__ = ["VerifiedQueryEngine", "VeriragEvaluator", "passages_from_nodes"]

# One model call at a time in this process: a llama.cpp model is not thread-safe, and aevaluate /
# aquery run the pipeline in worker threads (BatchEvalRunner starts many at once).
_MODEL_LOCK = threading.Lock()
_EXCERPT = 160


def passages_from_nodes(nodes: Sequence[NodeWithScore]) -> list[Passage]:
    """LlamaIndex source nodes as verirag passages: the node id names the passage in every result."""
    passages = []
    for n in nodes:
        meta = n.node.metadata or {}
        passages.append(
            Passage(
                id=n.node.node_id,
                text=n.node.get_content(),
                title=str(meta.get("title") or meta.get("file_name") or ""),
                source=str(meta.get("file_path") or meta.get("url") or meta.get("source") or ""),
            )
        )
    return passages


def _passages_from_contexts(contexts: Sequence[str] | None) -> list[Passage]:
    # the one input contract (verirag.contexts): p0, p1, ... by place, the same errors as every door
    return to_passages(contexts)


def _no_prompts(owner: str, prompts: PromptDictType) -> None:
    own = [k for k in prompts if ":" not in k]  # "module:key" entries go to sub-modules
    if own:
        raise InputError(
            f"{owner} has no LlamaIndex prompts to update ({', '.join(own)}): its verifier's "
            "prompts are the templates of the verirag method it runs"
        )


def _typed(response: RESPONSE_TYPE) -> Response:
    """A plain Response from any the framework returns (a stream is read to its end: verification
    needs the whole answer)."""
    return response if isinstance(response, Response) else response.get_response()


async def _atyped(response: RESPONSE_TYPE) -> Response:
    return await response.get_response() if isinstance(response, AsyncStreamingResponse) else _typed(response)


class VeriragEvaluator(BaseEvaluator):
    """Faithfulness of a response to its contexts, scored by a verirag verifier.

    `pipeline` verifies in process (its method must be GEN+PRED, e.g. "vanilla+nli"; the default
    verifies a given answer with "vanilla+verifier"); or `url` names a running `verirag serve` (POST /v1/verify; `api_key` is
    its bearer token, `method` the verifier to ask for). `passing` is the verdict at `threshold`
    (default: the pipeline's or the service's); `feedback` names the passage that supports the
    answer best and the score against the threshold. A score the verifier could not compute gives
    `invalid_result` with the reason, never a silent pass or fail."""

    def __init__(
        self,
        pipeline: Pipeline | None = None,
        *,
        url: str | None = None,
        api_key: str | None = None,
        method: str | None = None,
        threshold: float | None = None,
        timeout: float = 300.0,
    ):
        if (pipeline is None) == (url is None):
            raise InputError("give VeriragEvaluator a verirag Pipeline or the url of a `verirag serve`, exactly one")
        if method is not None and url is None:
            raise InputError("method is for the service; an in-process pipeline verifies with its own method")
        self._client = None if url is None else VeriragClient(url, api_key=api_key, timeout=timeout)
        self.pipeline, self.method = pipeline, method
        self.url = None if self._client is None else self._client.base_url
        self.threshold, self.timeout = threshold, timeout

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        _no_prompts(type(self).__name__, prompts)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {}

    # ---- the framework's entry points ----------------------------------------------------------
    def evaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        # Directly, not through the base class's asyncio_run: no event loop is needed to call a model.
        return self.verify_passages(query, response, _passages_from_contexts(contexts), **kwargs)

    async def aevaluate(
        self,
        query: str | None = None,
        response: str | None = None,
        contexts: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> EvaluationResult:
        return await asyncio.to_thread(self.evaluate, query, response, contexts, **kwargs)

    def evaluate_response(
        self, query: str | None = None, response: Response | None = None, **kwargs: Any
    ) -> EvaluationResult:
        """As the base class, but the passages keep their node ids, so feedback names the node."""
        if response is None:
            raise InputError("no response to evaluate")
        response = _typed(response)
        return self.verify_passages(query, response.response, passages_from_nodes(response.source_nodes), **kwargs)

    async def aevaluate_response(
        self, query: str | None = None, response: Response | None = None, **kwargs: Any
    ) -> EvaluationResult:
        typed = None if response is None else await _atyped(response)
        return await asyncio.to_thread(self.evaluate_response, query, typed, **kwargs)

    # ---- verification ------------------------------------------------------------------------
    def verify_passages(
        self, query: str | None, answer: str | None, passages: list[Passage], **kwargs: Any
    ) -> EvaluationResult:
        if kwargs:  # e.g. a reference answer: this evaluator judges support, not correctness
            raise InputError(
                f"VeriragEvaluator takes no {', '.join(sorted(kwargs))}: it verifies the response against its contexts"
            )
        if not passages:
            raise InputError("no contexts: a response is verified against the contexts it was generated from")
        if self.pipeline is not None:
            with _MODEL_LOCK:
                result = self.pipeline.verify(query or "", answer or "", passages, threshold=self.threshold).to_dict()
        else:
            result = self._client.verify(
                query or "", answer or "", passages, method=self.method, threshold=self.threshold
            ).to_dict()
        return EvaluationResult(
            query=query,
            response=answer,
            contexts=[p.text for p in passages],
            passing=result["faithful"],
            score=result["score"],
            feedback=feedback(result),
            invalid_result=result["score"] is None,
            invalid_reason=result.get("error"),
        )


def feedback(result: dict) -> str:
    """One sentence on a verirag result (verify or verify_and_act, as dicts): the verdict, the score
    against the threshold, and the passage that supports the answer best."""
    score, cut = result["score"], result["threshold"]
    if score is None:
        return f"Could not verify with {result['method']}: {result.get('error')}"
    verdict = "Supported" if result["faithful"] else "Not supported"
    against = "no certified threshold" if cut is None else f"threshold {cut:.2f}"
    text = f"{verdict} by {result['method']}: score {score:.2f}, {against}."
    best = result.get("supporting_passage")
    if best:
        excerpt = best["text"] if len(best["text"]) <= _EXCERPT else best["text"][:_EXCERPT].rstrip() + "..."
        text += f" {'Supporting' if result['faithful'] else 'Closest'} passage: {best['id']} ({excerpt!r})."
    if result.get("error"):
        text += f" Error: {result['error']}."
    return text


class VerifiedQueryEngine(BaseQueryEngine):
    """Runs `query_engine`, verifies its answer against the response's source nodes with `pipeline`,
    and acts below the threshold by `fallback` (abstain, no-rag, escalate; default: the pipeline's).
    The Response's text is the answer to show; its source nodes are those the answer was verified
    against; `metadata["verirag"]` is the full result (score, faithful, action, threshold,
    supporting_passage whose id is the node id, retrieved_answer: the inner engine's answer)."""

    def __init__(
        self,
        query_engine: BaseQueryEngine,
        pipeline: Pipeline,
        *,
        threshold: float | None = None,
        fallback: str | None = None,
        callback_manager: CallbackManager | None = None,
    ):
        self._query_engine, self.pipeline, self.threshold, self.fallback = query_engine, pipeline, threshold, fallback
        super().__init__(callback_manager or getattr(query_engine, "callback_manager", None))

    def _get_prompts(self) -> PromptDictType:
        return {}

    def _update_prompts(self, prompts: PromptDictType) -> None:
        _no_prompts(type(self).__name__, prompts)

    def _get_prompt_modules(self) -> PromptMixinType:
        return {"query_engine": self._query_engine}

    def _query(self, query_bundle: QueryBundle) -> Response:
        inner = _typed(self._query_engine.query(query_bundle))
        return self._verified(query_bundle.query_str, inner)

    async def _aquery(self, query_bundle: QueryBundle) -> Response:
        inner = await _atyped(await self._query_engine.aquery(query_bundle))
        return await asyncio.to_thread(self._verified, query_bundle.query_str, inner)

    def _verified(self, question: str, inner: Response) -> Response:
        if not inner.source_nodes:
            raise InputError(
                "the query engine returned no source nodes: there is nothing to verify its answer "
                "against (did the retriever or a node postprocessor drop them all?)"
            )
        with _MODEL_LOCK:
            result = self.pipeline.verify_and_act(
                question,
                inner.response or "",
                passages_from_nodes(inner.source_nodes),
                threshold=self.threshold,
                fallback=self.fallback,
            )
        record = result.to_dict()
        record["feedback"] = feedback(record)
        return Response(
            response=result.answer,
            source_nodes=inner.source_nodes,
            metadata={**(inner.metadata or {}), "verirag": record},
        )
