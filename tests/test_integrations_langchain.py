"""verirag inside LangChain, end to end on the smallest real model (SmolLM2-135M): a real chain
(a verirag index as the retriever, a prompt, a chat model, the verifier) verified in process and
through a real `verirag serve`; the conformal trust filter as a document compressor; the README
snippet. The chain's own chat model is langchain-core's fake one (the tests are about verifying
its answer); every verification runs the real pipeline."""

from __future__ import annotations

import asyncio
import time
import uuid
from operator import itemgetter

import pytest

pytest.importorskip("langchain_core")

import itertools

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from readme import python_block
from server_process import free_port, start_server

from verirag import Pipeline
from verirag.awf.policies import ABSTENTION_TEXT
from verirag.demo import corpus_path
from verirag.errors import BackendError, InputError
from verirag.integrations.langchain import TrustFilterCompressor, VeriragRetriever, VeriragVerifier
from verirag.learned.trust_filter import ConformalTrustFilter
from verirag.types import Passage

pytestmark = pytest.mark.slow

QUESTION = "Who designed Halvorsen Lighthouse?"
ANSWER = "Maren Solberg designed Halvorsen Lighthouse."

# the README's snippets, as users copy them
README_SNIPPET = python_block("VeriragVerifier(pipeline=pipe")
README_TRUST_SNIPPET = python_block("TrustFilterCompressor.load(")


@pytest.fixture(scope="module")
def pipe():
    p = Pipeline.from_preset("tiny", method="vanilla+nli", retrieval="bm25", max_answer_tokens=32)
    p.index(corpus_path())
    return p


@pytest.fixture(scope="module")
def retriever(pipe):
    return VeriragRetriever(index=pipe.search_index, k=3)


def rag_chain(retriever, answer: str):
    """The shape of create_retrieval_chain's output: {"input", "context": [Document], "answer": AIMessage}."""
    prompt = ChatPromptTemplate.from_template("Answer from the context.\n{context}\n\nQuestion: {input}")
    llm = FakeListChatModel(responses=[answer])
    return RunnablePassthrough.assign(context=itemgetter("input") | retriever).assign(answer=prompt | llm)


def direct(pipe, question, answer, docs):
    return pipe.verify(question, answer, [Passage(id=d.id, text=d.page_content) for d in docs], threshold=0.0)


def test_a_chain_answers_at_threshold_zero_with_the_supporting_document(pipe, retriever):
    out = (rag_chain(retriever, ANSWER) | VeriragVerifier(pipeline=pipe, threshold=0.0)).invoke({"input": QUESTION})
    docs = out["context"]
    assert len(docs) > 1 and all(isinstance(d, Document) for d in docs)
    assert (out["action"], out["faithful"], out["answer"]) == ("answered", True, ANSWER)
    # the same score and supporting passage as verirag's own verify on the same passages
    same = direct(pipe, QUESTION, ANSWER, docs)
    assert out["score"] == pytest.approx(same.score) and 0.0 <= out["score"] <= 1.0
    support = out["supporting_document"]
    assert any(support is d for d in docs) and support.id == same.supporting_passage.id
    assert {"score", "rank", "source", "title"} <= set(support.metadata)  # the retriever's Document, as it was
    assert out["verirag"]["retrieved_answer"] == ANSWER and len(out["verirag"]["evidence"]) == len(docs)


def test_ainvoke_abstains_at_threshold_one_without_blocking_the_event_loop(pipe):
    # an answer no run has verified before (a warm request cache would answer at once): the model runs
    answer = f"Halvorsen Lighthouse was designed by a lens maker, order {uuid.uuid4().hex[:8]}."
    top = VeriragRetriever(index=pipe.search_index, k=1)  # one document: one judge call
    chain = rag_chain(top, answer) | VeriragVerifier(pipeline=pipe, threshold=1.0)

    async def run():
        ticks = [time.perf_counter()]

        async def tick():
            while True:
                await asyncio.sleep(0.005)
                ticks.append(time.perf_counter())

        ticker = asyncio.create_task(tick())
        out = await chain.ainvoke({"input": QUESTION})
        ticks.append(time.perf_counter())
        ticker.cancel()
        return out, ticks

    out, ticks = asyncio.run(run())
    assert (out["action"], out["faithful"], out["answer"]) == ("abstained", False, ABSTENTION_TEXT)
    assert out["verirag"]["retrieved_answer"] == answer
    assert out["score"] == pytest.approx(direct(pipe, QUESTION, answer, out["context"]).score)
    # the loop kept ticking while the model ran: a loop blocked by it would stand still that long
    seconds, longest_pause = ticks[-1] - ticks[0], max(b - a for a, b in itertools.pairwise(ticks))
    assert longest_pause < seconds / 2, (seconds, longest_pause)


def test_no_rag_fallback_answers_again_without_the_documents(pipe, retriever):
    out = (rag_chain(retriever, ANSWER) | VeriragVerifier(pipeline=pipe, threshold=1.0, fallback="no-rag")).invoke(
        {"input": QUESTION}
    )
    assert out["action"] == "fallback" and not out["faithful"]
    assert out["answer"].strip() and out["answer"] not in (ANSWER, ABSTENTION_TEXT)
    assert out["verirag"]["retrieved_answer"] == ANSWER


def test_batch_with_the_chains_own_field_names(pipe, retriever):
    docs = retriever.invoke(QUESTION)
    verify = VeriragVerifier(
        pipeline=pipe, threshold=0.0, question_key="question", answer_key="response", documents_key="docs"
    )
    rows = [
        {"question": QUESTION, "response": AIMessage(content=ANSWER), "docs": docs, "trace_id": 7},
        {"question": QUESTION, "response": ANSWER, "docs": docs[:1]},
    ]
    outs = verify.batch(rows)
    assert [o["action"] for o in outs] == ["answered", "answered"] and outs[0]["trace_id"] == 7
    assert outs[0]["response"] == ANSWER  # the message's text
    assert outs[1]["supporting_document"] is docs[0]
    assert outs[1]["score"] == pytest.approx(direct(pipe, QUESTION, ANSWER, docs[:1]).score)


class Recorder(BaseCallbackHandler):
    def __init__(self):
        self.started, self.ended, self.errors = [], [], []

    def on_chain_start(self, serialized, inputs, **kwargs):
        self.started.append((kwargs.get("name"), kwargs.get("tags")))

    def on_chain_end(self, outputs, **kwargs):
        self.ended.append(outputs)

    def on_chain_error(self, error, **kwargs):
        self.errors.append(error)


def test_callbacks_see_the_run_and_its_error(pipe, retriever):
    docs = retriever.invoke(QUESTION)
    verify = VeriragVerifier(pipeline=pipe, threshold=0.0)
    seen = Recorder()
    out = verify.invoke(
        {"input": QUESTION, "answer": ANSWER, "context": docs}, config={"callbacks": [seen], "tags": ["checked"]}
    )
    assert seen.started == [("VeriragVerifier", ["checked"])]
    assert seen.ended[-1]["action"] == out["action"] and seen.ended[-1]["score"] == out["score"]
    # one chunk: a verdict needs the whole answer
    streamed = list(verify.stream({"input": QUESTION, "answer": ANSWER, "context": docs}))
    assert [(o["action"], o["score"]) for o in streamed] == [(out["action"], out["score"])]
    with pytest.raises(InputError, match="no documents under 'context'"):
        verify.invoke({"input": QUESTION, "answer": ANSWER, "context": []}, config={"callbacks": [seen]})
    assert isinstance(seen.errors[-1], InputError)


def test_bad_input_gets_a_clear_error(pipe, retriever):
    docs = retriever.invoke(QUESTION)
    verify = VeriragVerifier(pipeline=pipe)
    with pytest.raises(InputError, match="no documents under 'context'"):
        asyncio.run(verify.ainvoke({"input": QUESTION, "answer": ANSWER, "context": []}))
    with pytest.raises(InputError, match="the input has no 'context'.*documents_key"):
        verify.invoke({"input": QUESTION, "answer": ANSWER, "documents": docs})
    with pytest.raises(InputError, match=r"context\[1\] must be a Document"):
        verify.invoke({"input": QUESTION, "answer": ANSWER, "context": [docs[0], "plain text"]})
    with pytest.raises(InputError, match="'answer' must be a non-empty string"):
        verify.invoke({"input": QUESTION, "answer": "  ", "context": docs})
    with pytest.raises(InputError, match="takes a dict"):
        verify.invoke(QUESTION)
    with pytest.raises(InputError, match="one backend"):
        VeriragVerifier()
    with pytest.raises(InputError, match="only 'abstain'"):
        VeriragVerifier(service_url="http://127.0.0.1:1", fallback="no-rag")
    with pytest.raises(InputError, match="fallback must be one of"):
        VeriragVerifier(pipeline=pipe, fallback="guess")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # the test's request cache (VERIRAG_CACHE_DIR) is the server's too: a judge request the server
    # builds from the passages it was sent is answered from it only if it is the very request the
    # in-process pipeline made, so equal scores mean the service judged exactly these passages
    s = start_server(tmp_path_factory.mktemp("serve"), "--preset", "tiny")
    yield s
    s.stop()


def test_the_service_verifies_and_this_client_abstains(pipe, retriever, server):
    docs = retriever.invoke(QUESTION)
    row = {"input": QUESTION, "answer": AIMessage(content=ANSWER), "context": docs}
    # the in-process pipeline's method, named: the service's own verify default may be another
    out = VeriragVerifier(service_url=server.url, method="vanilla+nli", threshold=0.0).invoke(row)
    assert out["verirag"]["method"] == "vanilla+nli"
    assert (out["action"], out["faithful"], out["answer"]) == ("answered", True, ANSWER)
    assert out["score"] == pytest.approx(direct(pipe, QUESTION, ANSWER, docs).score, abs=1e-6)  # same model, method
    assert any(out["supporting_document"] is d for d in docs)
    low = asyncio.run(VeriragVerifier(service_url=server.url, method="vanilla+nli", threshold=1.0).ainvoke(row))
    assert (low["action"], low["answer"], low["score"]) == ("abstained", ABSTENTION_TEXT, out["score"])
    with pytest.raises(InputError, match="refused the request \\(422\\)"):
        VeriragVerifier(service_url=server.url, method="no-such-method").invoke(row)


def test_an_outage_is_an_error_not_a_verdict(retriever, monkeypatch):
    row = {"input": QUESTION, "answer": ANSWER, "context": retriever.invoke(QUESTION)}
    down = VeriragVerifier(service_url=f"http://127.0.0.1:{free_port()}", timeout=5)
    with pytest.raises(BackendError, match="cannot be reached"):
        down.invoke(row)
    with pytest.raises(BackendError, match="cannot be reached"):
        asyncio.run(down.ainvoke(row))
    # in process, a verifier model behind an OpenAI-compatible URL that is down
    monkeypatch.setenv("VERIRAG_OPENAI_MAX_RETRIES", "0")
    dead = Pipeline.from_preset("tiny", method="vanilla+nli", model=f"http://127.0.0.1:{free_port()}/v1#m")
    with pytest.raises(BackendError, match="cannot reach the server"):
        VeriragVerifier(pipeline=dead, threshold=0.0).invoke(row)
    with pytest.raises(BackendError, match="cannot reach the server"):
        asyncio.run(VeriragVerifier(pipeline=dead, threshold=0.0).ainvoke(row))


CALIBRATION = [  # demo questions, each with the file that answers it
    ("How tall is the lighthouse tower?", "halvorsen_lighthouse.md"),
    ("Who designed Halvorsen Lighthouse?", "halvorsen_lighthouse.md"),
    ("How long does the ferry crossing take?", "ferry.md"),
    ("Can cars be taken on the ferry to the island?", "ferry.md"),
    ("How much did the restoration cost?", "restoration.md"),
    ("When did the museum reopen after the restoration?", "restoration.md"),
    ("How many pairs of puffins nest on the cliffs?", "seabirds.md"),
    ("When is the path to the northern cliffs closed?", "seabirds.md"),
    ("How much do museum tickets cost for adults?", "visiting_the_museum.md"),
    ("Which days is the museum closed?", "visiting_the_museum.md"),
    ("Who rescued the crew of the fishing boat Sildra in 1953?", "storm_of_1953.md"),
    ("What medal did the keeper receive for the rescue?", "storm_of_1953.md"),
]


def test_the_trust_filter_keeps_the_documents_it_trusts(retriever, tmp_path, monkeypatch):
    scores, correct = [], []
    for question, source in CALIBRATION:
        docs = retriever.invoke(question)
        scores.append([d.metadata["score"] for d in docs])
        correct.append([d.metadata["source"] == source for d in docs])
    index = retriever.index
    fitted = ConformalTrustFilter(alpha=0.2, fingerprints={"retriever": index.kind, "corpus": index.fingerprint})
    path = fitted.fit(scores, correct, k=retriever.k).save(tmp_path / "trust.json")
    compressor = TrustFilterCompressor.load(path, retriever=retriever)

    question = "When was the light automated?"  # held out: the lighthouse file answers it
    docs = retriever.invoke(question)
    kept = compressor.compress_documents(docs, question)
    assert len(docs) > 1 and [d.metadata["source"] for d in kept] == ["halvorsen_lighthouse.md"]
    assert kept[0] is docs[0]
    assert asyncio.run(compressor.acompress_documents(docs, question)) == kept
    assert compressor.compress_documents([], question) == []
    monkeypatch.chdir(tmp_path)  # where the README's trust.json is
    namespace = {"retriever": retriever}
    exec(compile(README_TRUST_SNIPPET, "README-langchain-trust", "exec"), namespace)
    assert namespace["docs"] == kept

    with pytest.raises(InputError, match=r"document 0 has no retrieval score in metadata\['score'\]"):
        compressor.compress_documents([Document(page_content="text without a score")], question)
    other = ConformalTrustFilter(alpha=0.2, fingerprints={"retriever": "dense"}).fit(scores, correct)
    with pytest.raises(InputError, match="retriever 'dense', not 'bm25'"):
        TrustFilterCompressor.load(other.save(tmp_path / "dense.json"), retriever=retriever)


def test_the_readme_snippet_runs(capsys):
    namespace: dict = {}  # as shown: the snippet defines every name it uses, its stand-in `llm` too
    assert f'FakeListChatModel(responses=["{ANSWER}"])' in README_SNIPPET
    # the README's model is "local"; tests run the smallest one
    exec(compile(README_SNIPPET.replace('"local"', '"tiny"'), "README-langchain", "exec"), namespace)
    out = namespace["out"]
    assert out["action"] in ("answered", "abstained") and out["verirag"]["retrieved_answer"] == ANSWER
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith(out["action"]) and printed[1].endswith(".md")
