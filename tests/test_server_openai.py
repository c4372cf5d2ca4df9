"""The official OpenAI Python client against a real `verirag serve` process: it lists the model,
and chats with and without streaming, sync and async, and each form carries the verification."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from server_process import start_server

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.slow

DEMO = Path(__file__).resolve().parents[1] / "src" / "verirag" / "demo" / "corpus"
QUESTION = "Who kept the Halvorsen lighthouse?"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from verirag.retrieval import Index, load_corpus

    tmp = tmp_path_factory.mktemp("openai")
    Index.build(load_corpus(DEMO).passages, kind="bm25").save(tmp / "index")
    s = start_server(
        tmp,
        "--preset",
        "tiny",
        "--index",
        str(tmp / "index"),
        "--api-key",
        "k",
        "--max-answer-tokens",
        "24",
        cache_dir=tmp / "cache",
    )
    yield s
    s.stop()


@pytest.fixture()
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)


def chat(c, **kw):
    return c.chat.completions.create(
        model="smollm2-135m",
        messages=[{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": QUESTION}],
        **kw,
    )


def test_the_client_lists_and_retrieves_the_model(client, server):
    models = client.models.list()
    assert [m.id for m in models.data] == ["smollm2-135m"] and models.data[0].owned_by == "verirag"
    assert client.models.retrieve("smollm2-135m").id == "smollm2-135m"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-4o")
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=server.url + "/v1", api_key="wrong", max_retries=0).models.list()


def test_a_chat_completion_carries_the_verified_answer(client):
    r = chat(client)
    verirag = r.model_extra["verirag"]
    assert r.object == "chat.completion" and r.model == "smollm2-135m"
    assert r.choices[0].message.role == "assistant" and r.choices[0].finish_reason == "stop"
    assert r.choices[0].message.content == verirag["answer"] and verirag["question"] == QUESTION
    assert verirag["action"] in {"answered", "abstained"} and 0.0 <= verirag["score"] <= 1.0
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens > 0


def test_a_stream_sends_the_verified_answer_then_the_verdict(client):
    whole = chat(client)  # the same request: the stream is the answer the action gives, cut into pieces
    chunks = list(chat(client, stream=True))
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert text == whole.choices[0].message.content and len(chunks) >= 3
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and all(c.choices[0].finish_reason is None for c in chunks[:-1])
    assert last.model_extra["verirag"]["answer"] == text and last.usage.total_tokens == whole.usage.total_tokens


def test_a_stream_with_include_usage_ends_with_a_usage_chunk(client):
    chunks = list(chat(client, stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens >= 0
    assert chunks[-2].choices[0].finish_reason == "stop" and chunks[-2].usage is None


def test_the_async_client_with_and_without_streaming(server):
    async def main():
        c = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)
        whole = await chat(c)
        stream = await chat(c, stream=True)
        text = "".join([ch.choices[0].delta.content or "" async for ch in stream if ch.choices])
        return whole, text

    whole, text = asyncio.run(main())
    assert text == whole.choices[0].message.content == whole.model_extra["verirag"]["answer"]


def test_a_request_the_service_refuses_is_an_openai_error(client):
    with pytest.raises(openai.UnprocessableEntityError) as e:
        client.chat.completions.create(model="x", messages=[{"role": "system", "content": "no question"}])
    assert e.value.body["code"] == "invalid_request"


def test_the_readme_snippet_runs(server, capsys):
    from readme import python_block

    snippet = python_block("from openai import OpenAI")
    exec(snippet.replace("http://127.0.0.1:8000/v1", server.url + "/v1").replace('api_key="unused"', 'api_key="k"'), {})
    printed = capsys.readouterr().out
    assert printed.startswith("['smollm2-135m']") and ("answered" in printed or "abstained" in printed)
