"""verirag inside LlamaIndex, end to end on the tiny model: the evaluator (in process and through a
real `verirag serve`), the query-engine wrapper over a real LlamaIndex engine, outages, and the
README snippet. The network is blocked (loopback only): nothing may download."""

from __future__ import annotations

import asyncio
import re
import socket

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, SummaryIndex
from llama_index.core.base.response.schema import Response
from llama_index.core.evaluation import BatchEvalRunner
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback
from llama_index.core.postprocessor import SimilarityPostprocessor
from readme import python_block
from server_process import free_port, start_server
from test_outage import Endpoint

from verirag import Pipeline
from verirag.awf.policies import ABSTENTION_TEXT
from verirag.errors import AuthError, BackendError, InputError
from verirag.integrations.llamaindex import VerifiedQueryEngine, VeriragEvaluator
from verirag.types import Passage

pytestmark = pytest.mark.slow

QUESTION = "What is the capital of France?"
CONTEXTS = ["Paris is the capital of France.", "Berlin is the capital of Germany."]
SUPPORTED, UNSUPPORTED = "Paris", "The capital of France is Rome."


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Any attempt to reach beyond this machine (a tokenizer or NLTK download) fails the test."""
    connect = socket.socket.connect

    def guarded(self, address):
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"network blocked in tests: {address}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


class FixedAnswerLLM(CustomLLM):
    """The inner engine's LLM: always the same answer, so the tests know what verirag is given."""

    answer: str

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="fixed-answer")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
        return CompletionResponse(text=self.answer)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        yield CompletionResponse(text=self.answer, delta=self.answer)


def query_engine(answer: str):
    """A real LlamaIndex engine (SummaryIndex: its retriever returns every node) with a fixed answer."""
    docs = [Document(text=text, metadata={"title": title}) for text, title in zip(CONTEXTS, ("France", "Germany"))]
    return SummaryIndex.from_documents(docs).as_query_engine(llm=FixedAnswerLLM(answer=answer))


@pytest.fixture(scope="module")
def pipeline():
    return Pipeline.from_preset("tiny", method="vanilla+nli")


def _check(result, threshold, expected):
    """The evaluator's result against the pipeline's own verification of the same inputs."""
    assert result.score == pytest.approx(expected.score) and 0.0 <= result.score <= 1.0
    assert result.passing is (result.score >= threshold) and not result.invalid_result
    assert f"score {result.score:.2f}, threshold {threshold:.2f}" in result.feedback
    assert f"passage: {expected.supporting_passage.id} (" in result.feedback
    assert result.feedback.startswith("Supported" if result.passing else "Not supported")


@pytest.mark.parametrize("answer", [SUPPORTED, UNSUPPORTED])
def test_evaluator_scores_and_names_the_supporting_context_at_both_thresholds(pipeline, answer):
    passages = [Passage(id=f"p{i}", text=c) for i, c in enumerate(CONTEXTS)]  # the contract's ids
    expected = pipeline.verify(QUESTION, answer, passages)
    for threshold in (0.0, 1.0):
        result = VeriragEvaluator(pipeline, threshold=threshold).evaluate(
            query=QUESTION, response=answer, contexts=CONTEXTS
        )
        _check(result, threshold, expected)
        assert result.passing is (threshold == 0.0)  # the tiny model never scores exactly 1
        assert result.contexts == CONTEXTS and result.response == answer and result.query == QUESTION


def test_evaluate_response_reads_the_source_nodes_and_names_the_node(pipeline):
    response = query_engine(SUPPORTED).query(QUESTION)
    result = VeriragEvaluator(pipeline, threshold=0.0).evaluate_response(query=QUESTION, response=response)
    node_ids = {n.node.node_id for n in response.source_nodes}
    named = re.search(r"passage: (\S+) \(", result.feedback).group(1)
    assert named in node_ids and result.passing and result.contexts == CONTEXTS


def test_aevaluate_leaves_the_event_loop_free_and_agrees_with_evaluate(pipeline):
    evaluator = VeriragEvaluator(pipeline, threshold=0.0)
    done = asyncio.Event()

    async def ticker():
        ticks = 0
        while not done.is_set():
            await asyncio.sleep(0.005)
            ticks += 1
        return ticks

    async def run():
        count = asyncio.create_task(ticker())
        result = await evaluator.aevaluate(
            query="Which city is the capital of Germany?", response="Berlin", contexts=CONTEXTS
        )
        done.set()
        return result, await count

    result, ticks = asyncio.run(run())
    assert ticks >= 3  # the loop ran while the model verified
    again = evaluator.evaluate(query="Which city is the capital of Germany?", response="Berlin", contexts=CONTEXTS)
    assert result.score == pytest.approx(again.score) and result.feedback == again.feedback


def test_batch_eval_runner_takes_the_evaluator(pipeline):
    """LlamaIndex's own runner: concurrent aevaluate_response calls, serialised over the one model."""
    responses = [query_engine(a).query(QUESTION) for a in (SUPPORTED, UNSUPPORTED)]
    runner = BatchEvalRunner({"verirag": VeriragEvaluator(pipeline, threshold=0.0)}, workers=2)
    results = asyncio.run(runner.aevaluate_responses([QUESTION, QUESTION], responses=responses))["verirag"]
    assert [r.response for r in results] == [SUPPORTED, UNSUPPORTED] and all(r.passing for r in results)


def test_bad_input_is_a_clear_error(pipeline):
    evaluator = VeriragEvaluator(pipeline)
    for contexts in ([], None):
        with pytest.raises(InputError, match="no passages|no contexts"):
            evaluator.evaluate(query=QUESTION, response=SUPPORTED, contexts=contexts)
    with pytest.raises(InputError, match="given bare"):
        evaluator.evaluate(query=QUESTION, response=SUPPORTED, contexts=CONTEXTS[0])
    with pytest.raises(InputError, match="answer is empty"):
        evaluator.evaluate(query=QUESTION, response="", contexts=CONTEXTS)
    with pytest.raises(InputError, match="reference"):
        evaluator.evaluate(query=QUESTION, response=SUPPORTED, contexts=CONTEXTS, reference="Paris")
    with pytest.raises(InputError, match="exactly one"):
        VeriragEvaluator()
    with pytest.raises(InputError, match="no LlamaIndex prompts"):
        evaluator.update_prompts({"eval_template": "x"})
    assert evaluator.get_prompts() == {}
    # a node postprocessor that drops every node (SummaryIndex's nodes carry no similarity score)
    nothing = SummaryIndex.from_documents([Document(text=c) for c in CONTEXTS]).as_query_engine(
        llm=FixedAnswerLLM(answer=SUPPORTED), node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)]
    )
    with pytest.raises(InputError, match="no source nodes"):
        VerifiedQueryEngine(nothing, pipeline).query(QUESTION)


def test_query_engine_answers_above_and_abstains_below_the_threshold(pipeline):
    inner = query_engine(SUPPORTED)
    answered = VerifiedQueryEngine(inner, pipeline, threshold=0.0).query(QUESTION)
    v = answered.metadata["verirag"]
    node_ids = [n.node.node_id for n in answered.source_nodes]
    assert isinstance(answered, Response) and answered.response == SUPPORTED
    assert v["action"] == "answered" and v["faithful"] and v["retrieved_answer"] == SUPPORTED
    assert v["supporting_passage"]["id"] in node_ids and [e["id"] for e in v["evidence"]] == node_ids
    assert v["feedback"].startswith("Supported")
    assert all(k in answered.metadata for k in node_ids)  # the inner engine's metadata is kept

    abstained = VerifiedQueryEngine(inner, pipeline, threshold=1.0).query(QUESTION)
    w = abstained.metadata["verirag"]
    assert abstained.response == ABSTENTION_TEXT and w["action"] == "abstained" and not w["faithful"]
    assert w["retrieved_answer"] == SUPPORTED and w["score"] == pytest.approx(v["score"]) and w["threshold"] == 1.0


def test_query_engine_async_and_streaming(pipeline):
    inner = query_engine(UNSUPPORTED)
    sync = VerifiedQueryEngine(inner, pipeline, threshold=1.0).query(QUESTION)
    result = asyncio.run(VerifiedQueryEngine(inner, pipeline, threshold=1.0).aquery(QUESTION))
    assert result.response == ABSTENTION_TEXT and result.metadata["verirag"]["retrieved_answer"] == UNSUPPORTED
    assert result.metadata["verirag"]["score"] == pytest.approx(sync.metadata["verirag"]["score"])
    streaming = SummaryIndex.from_documents([Document(text=c) for c in CONTEXTS]).as_query_engine(
        llm=FixedAnswerLLM(answer=UNSUPPORTED), streaming=True
    )
    for streamed in (
        VerifiedQueryEngine(streaming, pipeline, threshold=0.0).query(QUESTION),
        asyncio.run(VerifiedQueryEngine(streaming, pipeline, threshold=0.0).aquery(QUESTION)),
    ):
        assert streamed.response == UNSUPPORTED and streamed.metadata["verirag"]["action"] == "answered"


def test_an_outage_raises_and_is_never_a_verdict(monkeypatch):
    monkeypatch.setenv("VERIRAG_NO_CACHE", "1")
    monkeypatch.setenv("VERIRAG_OPENAI_MAX_RETRIES", "0")
    endpoint = Endpoint(500)
    try:
        down = Pipeline.from_preset("tiny", method="vanilla+nli", model=f"{endpoint.url}#m")
        with pytest.raises(BackendError, match="500"):
            VeriragEvaluator(down).evaluate(query=QUESTION, response=SUPPORTED, contexts=CONTEXTS)
        assert endpoint.posts == 1  # the verifier's request reached the endpoint and failed
        with pytest.raises(BackendError, match="500"):
            VerifiedQueryEngine(query_engine(SUPPORTED), down, threshold=0.0).query(QUESTION)
    finally:
        endpoint.close()
    with pytest.raises(BackendError, match="cannot be reached"):
        VeriragEvaluator(url=f"http://127.0.0.1:{free_port()}").evaluate(
            query=QUESTION, response=SUPPORTED, contexts=CONTEXTS
        )


def test_evaluator_through_the_service(tmp_path, pipeline):
    server = start_server(tmp_path, "--preset", "tiny", "--api-key", "token")
    try:
        # the in-process pipeline's method, named: the service's own verify default may be another
        remote = VeriragEvaluator(url=server.url, api_key="token", method="vanilla+nli", threshold=0.0)
        result = remote.evaluate(query=QUESTION, response=SUPPORTED, contexts=CONTEXTS)
        local = VeriragEvaluator(pipeline, threshold=0.0).evaluate(
            query=QUESTION, response=SUPPORTED, contexts=CONTEXTS
        )
        assert result.passing and result.score == pytest.approx(local.score, abs=1e-3)
        assert result.feedback.split(" passage: ")[1] == local.feedback.split(" passage: ")[1]
        with pytest.raises(InputError, match=r"refused the request \(422\): invalid request: body\.threshold"):
            VeriragEvaluator(url=server.url, api_key="token", threshold=2.0).evaluate(
                query=QUESTION, response=SUPPORTED, contexts=CONTEXTS
            )
        # a wrong key is the caller's to fix (verirag.client's map), never an outage
        with pytest.raises(AuthError, match=r"refused the API key \(401\)"):
            VeriragEvaluator(url=server.url, api_key="wrong").evaluate(
                query=QUESTION, response=SUPPORTED, contexts=CONTEXTS
            )
    finally:
        server.stop()


def test_readme_snippet_runs(pipeline, capsys):
    snippet = python_block("verirag.integrations.llamaindex")
    namespace: dict = {}  # as shown: the snippet defines its stand-in query engine itself
    exec(snippet.replace('from_preset("local"', 'from_preset("tiny"'), namespace)
    result, response = namespace["result"], namespace["response"]
    verdict = response.metadata["verirag"]
    assert result.passing == (result.score >= 0.5) and "threshold 0.50" in result.feedback
    assert verdict["retrieved_answer"].split() == ["text"] * 4  # the stand-in LLM's answer, as the comment says
    assert str(response) == (verdict["retrieved_answer"] if verdict["action"] == "answered" else ABSTENTION_TEXT)
    assert str(response) in capsys.readouterr().out
    # the same snippet around a real engine that answers from the passage: the same texts verified
    # twice, as plain contexts and as the engine's source nodes, give the same score
    engine = VerifiedQueryEngine(query_engine(SUPPORTED), namespace["pipeline"], threshold=0.5, fallback="abstain")
    verdict = engine.query("What is the capital of France?").metadata["verirag"]
    assert verdict["score"] == pytest.approx(result.score) and verdict["retrieved_answer"] == "Paris"
