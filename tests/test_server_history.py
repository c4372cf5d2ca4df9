"""`history` over HTTP (issue 36 item 2), against a real `verirag serve` on loopback: /v1/verify and
/v1/ask take the conversation as strings or {role, content} messages, documented in /openapi.json;
the OpenAI-compatible chat reads the messages before the question as its conversation; a bad
history is a 422 naming the field, a long one is cut, never a 5xx."""

from __future__ import annotations

import httpx
import pytest
from server_process import start_server

from verirag import Verifier
from verirag.types import Passage

pytestmark = pytest.mark.slow

ALBUMS = [
    Passage(
        id="boy", text="Boy is the debut studio album by U2. It was released on 20 October 1980 by Island Records."
    ),
    Passage(id="joshua", text="The Joshua Tree is an album by U2. It was released on 9 March 1987 by Island Records."),
]
QUESTION = "When was it released?"
ANSWER = "It was released on 20 October 1980."
ABOUT_BOY = ["what was the debut album of U2?", "Boy."]
ABOUT_JOSHUA = ["which U2 album has the Joshua Tree on its cover?", "The Joshua Tree."]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from verirag.retrieval import Index

    tmp = tmp_path_factory.mktemp("history")
    Index.build(ALBUMS, kind="bm25").save(tmp / "index")
    s = start_server(
        tmp, "--preset", "tiny", "--index", str(tmp / "index"), "--k", "1", "--max-answer-tokens", "8",
        cache_dir=tmp / "cache",
    )  # fmt: skip
    yield s
    s.stop()


@pytest.fixture(scope="module")
def http(server):
    with httpx.Client(base_url=server.url, timeout=300) as c:
        yield c


def verify(http, **extra):
    body = {"question": QUESTION, "answer": ANSWER, "passages": [p.text for p in ALBUMS], "method": "vanilla+verifier"}
    return http.post("/v1/verify", json=body | extra)


def test_openapi_documents_the_history_of_verify_and_ask(http):
    spec = http.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for request in ("VerifyRequest", "AskRequest"):
        history = schemas[request]["properties"]["history"]
        assert "conversation" in history["description"] and "cut" in history["description"]
        array = next(s for s in history["anyOf"] if s.get("type") == "array")
        kinds = array["items"]["anyOf"]
        assert any(k.get("type") == "string" and k.get("pattern") for k in kinds)  # not blank
        assert any(k.get("$ref", "").endswith("/HistoryMessage") for k in kinds)
        assert "history" not in schemas[request].get("required", [])
    message = schemas["HistoryMessage"]
    assert set(message["required"]) == {"role", "content"}
    assert message["properties"]["role"]["enum"] == ["user", "assistant", "system"]
    assert message.get("additionalProperties") is False


def test_verify_reads_the_history_as_strings_or_messages(http):
    alone = verify(http)
    told = verify(http, history=ABOUT_BOY)
    as_messages = verify(
        http,
        history=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": ABOUT_BOY[0]},
            {"role": "assistant", "content": ABOUT_BOY[1]},
        ],
    )
    assert alone.status_code == told.status_code == as_messages.status_code == 200, told.text
    in_process = Verifier()
    texts = [p.text for p in ALBUMS]
    assert alone.json()["score"] == pytest.approx(in_process.verify(QUESTION, ANSWER, texts).score, abs=1e-6)
    assert told.json()["score"] == pytest.approx(
        in_process.verify(QUESTION, ANSWER, texts, history=ABOUT_BOY).score, abs=1e-6
    )
    assert told.json()["score"] != alone.json()["score"]
    assert as_messages.json()["score"] == pytest.approx(told.json()["score"], abs=0.02)
    long = verify(http, history=[f"turn {i} of a long conversation" for i in range(200)])
    assert long.status_code == 200 and long.json()["score"] is not None  # cut, not refused


@pytest.mark.parametrize(
    "history",
    [
        "Boy.",
        {"role": "user", "content": "x"},
        [1, 2],
        ["ok", ""],
        ["ok", "  "],
        [{"role": "tool", "content": "x"}],
        [{"role": "user", "content": ""}],
        [{"role": "user", "content": "x", "name": "bob"}],
        ["turn"] * 1001,
    ],
)
def test_a_bad_history_is_a_422_naming_it(http, history):
    r = verify(http, history=history)
    assert r.status_code == 422, r.text
    assert any(f["field"].startswith("body.history") for f in r.json()["error"]["fields"]), r.json()


def test_ask_and_the_chat_facade_read_the_conversation(http):
    boy = http.post("/v1/ask", json={"question": QUESTION, "history": ABOUT_BOY})
    joshua = http.post("/v1/ask", json={"question": QUESTION, "history": ABOUT_JOSHUA})
    assert boy.status_code == joshua.status_code == 200, boy.text
    # retrieval reads the last turns: each conversation finds its own album (k=1)
    assert boy.json()["evidence"][0]["id"] == "boy" and joshua.json()["evidence"][0]["id"] == "joshua"
    assert http.post("/v1/ask", json={"question": QUESTION, "history": [""]}).status_code == 422

    def chat(turns):
        messages = [{"role": "system", "content": "Answer briefly."}]
        messages += [{"role": r, "content": t} for r, t in zip(("user", "assistant"), turns)]
        messages += [{"role": "assistant", "content": None, "tool_calls": []}]  # no text: no turn
        messages += [{"role": "user", "content": QUESTION}]
        r = http.post("/v1/chat/completions", json={"model": "x", "messages": messages})
        assert r.status_code == 200, r.text
        return r.json()["verirag"]

    assert chat(ABOUT_BOY)["evidence"][0]["id"] == "boy"
    assert chat(ABOUT_JOSHUA)["evidence"][0]["id"] == "joshua"
