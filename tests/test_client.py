"""verirag.client: the one HTTP client of a verirag service and its one map from status codes to
errors (401 and 403 refused, other 4xx the request's fault, 429, 5xx and transport failures an
outage), shared by both integrations.

The statuses the service itself produces (401, 409, 413, 422, 502, 503) come from the real app
served by uvicorn on loopback, with a model backend that is down (nothing loads); those it never
sends (403, 404, 429, 500, 504) from a loopback HTTP server that answers what it is told, in the
service's error format. One test loads the smallest model to check the typed results."""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
import uvicorn

from verirag.client import VeriragClient, error_for
from verirag.errors import AuthError, BackendError, InputError, is_outage
from verirag.server import ServiceConfig, VeriragService, create_app
from verirag.types import AskResult, Passage, ScoredPassage, VerifyResult

DEMO = Path(__file__).resolve().parents[1] / "src" / "verirag" / "demo" / "corpus"
QUESTION = "What is the capital of France?"
ANSWER = "Paris is the capital of France."
CONTEXTS = ["Paris is the capital of France.", "Berlin is the capital of Germany."]

# status -> the error's exact type (AuthError is an InputError: `type(...) is` tells them apart)
STATUS_MAP = [
    (400, InputError),
    (401, AuthError),
    (403, AuthError),
    (404, InputError),
    (405, InputError),
    (408, BackendError),
    (409, InputError),
    (413, InputError),
    (422, InputError),
    (429, BackendError),
    (500, BackendError),
    (502, BackendError),
    (503, BackendError),
    (504, BackendError),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("status,expected", STATUS_MAP)
def test_the_status_map(status, expected):
    error = error_for(status, "the service's own words", "http://host:1")
    assert type(error) is expected
    assert is_outage(error) is (expected is BackendError)
    assert "the service's own words" in str(error) and f"({status})" in str(error)
    assert "http://host:1" in str(error)
    if expected is AuthError:
        assert "api_key" in str(error) and "--api-key" in str(error)


# ---- a real service on loopback ---------------------------------------------------------------
@contextmanager
def serving(service: VeriragService):
    """The real app (`create_app`), served by uvicorn in a thread on a free loopback port."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(service), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert thread.is_alive() and time.time() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture(scope="module")
def offline():
    """A real service whose model backend (an OpenAI-compatible URL) is down, with a token and a
    small body limit; no index. Nothing loads, so it answers at once."""
    mp = pytest.MonkeyPatch()
    mp.setenv("VERIRAG_NO_CACHE", "1")  # the verifier's request must reach the dead backend
    mp.setenv("VERIRAG_OPENAI_MAX_RETRIES", "0")
    service = VeriragService(
        ServiceConfig(
            preset="tiny",
            overrides={"model": f"http://127.0.0.1:{free_port()}/v1#m", "method": "vanilla+nli"},
            verify_method="vanilla+nli",
            api_key="token",
            warm_up=False,
            max_body_bytes=4096,
        )
    )
    with serving(service) as url:
        yield service, url
    mp.undo()


def test_the_real_services_errors_by_whose_fault(offline):
    service, url = offline
    wrong = VeriragClient(url, api_key="not-the-token")
    with pytest.raises(AuthError, match=r"refused the API key \(401\): a bearer token is required.*api_key="):
        wrong.verify(QUESTION, ANSWER, CONTEXTS)
    with pytest.raises(AuthError, match=r"\(401\)"):
        VeriragClient(url).ask(QUESTION)  # no key at all
    client = VeriragClient(url, api_key="token")
    assert client.health()["status"] == "ready"  # the probe needs no token
    # the service's own message, the invalid field and the request id that finds its log entry
    with pytest.raises(
        InputError,
        match=r"\(422\): invalid request: body\.threshold \(body\.threshold: must be a number in \[0, 1\], got 2\.0\) \[request ",
    ):
        client.verify(QUESTION, ANSWER, CONTEXTS, threshold=2.0)
    with pytest.raises(InputError, match=r"\(422\): unknown method 'no-such-method'"):
        client.verify(QUESTION, ANSWER, CONTEXTS, method="no-such-method")
    with pytest.raises(InputError, match=r"\(409\): this service has no index"):
        client.retrieve(QUESTION)
    with pytest.raises(InputError, match=r"\(413\): the request body exceeds 4096 bytes"):
        client.verify(QUESTION, ANSWER, ["x" * 5000])
    # the service is up but its model backend is down: an outage, not a verdict
    with pytest.raises(BackendError, match=r"failed \(502\): the model backend failed.*cannot reach") as down:
        client.verify(QUESTION, ANSWER, CONTEXTS)
    assert is_outage(down.value) and type(down.value) is BackendError
    service.ready.clear()  # as while the models load: every request is a 503 with Retry-After
    try:
        with pytest.raises(BackendError, match=r"failed \(503\): the models are still loading.*retry after 5 s"):
            client.verify(QUESTION, ANSWER, CONTEXTS)
        with pytest.raises(BackendError, match=r"failed \(503\): status loading"):
            client.health()
    finally:
        service.ready.set()


def test_transport_failures_are_outages():
    down = VeriragClient(f"http://127.0.0.1:{free_port()}", timeout=5)
    with pytest.raises(BackendError, match="cannot be reached: ConnectError") as refused:
        down.verify(QUESTION, ANSWER, CONTEXTS)
    assert is_outage(refused.value)
    with Scripted(200, delay=2.0) as slow, pytest.raises(BackendError, match=r"did not answer /v1/ask within 0\.3 s"):
        VeriragClient(slow.url, timeout=0.3).ask(QUESTION)
    with Scripted(200, body=b"<html>a proxy's page</html>") as proxy, pytest.raises(BackendError, match="not JSON"):
        VeriragClient(proxy.url).ask(QUESTION)
    with Scripted(200, body={"unexpected": "shape"}) as other, pytest.raises(BackendError, match="malformed result"):
        VeriragClient(other.url).verify(QUESTION, ANSWER, CONTEXTS)


def test_what_the_client_refuses_before_sending():
    with pytest.raises(InputError, match="must start with http:// or https://"):
        VeriragClient("127.0.0.1:8000")
    with pytest.raises(InputError, match="timeout is seconds"):
        VeriragClient("http://127.0.0.1:8000", timeout=0)
    client = VeriragClient("http://127.0.0.1:8000", api_key="secret")
    assert "secret" not in repr(client)
    with pytest.raises(InputError, match="not one string"):
        client.verify(QUESTION, ANSWER, CONTEXTS[0])
    with pytest.raises(InputError, match="a string or a verirag Passage, got int"):
        client.verify(QUESTION, ANSWER, [3])


# ---- statuses the service never sends, from a loopback server that answers as told -------------
class Scripted:
    """A loopback HTTP server: every request gets `status` with `body` (by default the service's
    error format) after `delay` seconds; the requests are kept (method, path, headers, JSON)."""

    def __init__(self, status: int, body: dict | bytes | None = None, headers: dict | None = None, delay: float = 0):
        self.requests: list[tuple[str, str, dict, object]] = []
        if body is None:
            body = {"error": {"code": "scripted", "message": f"scripted {status}"}, "request_id": "rid-7"}
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                sent = json.loads(self.rfile.read(length)) if length else None
                scripted.requests.append((self.command, self.path, dict(self.headers), sent))
                time.sleep(delay)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def __enter__(self) -> Scripted:
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize(
    "status,expected", [(403, AuthError), (404, InputError), (500, BackendError), (504, BackendError)]
)
def test_statuses_the_service_never_sends_map_the_same_way(status, expected):
    with (
        Scripted(status) as s,
        pytest.raises(expected, match=rf"\({status}\): scripted {status} \[request rid-7\]") as e,
    ):
        VeriragClient(s.url).verify(QUESTION, ANSWER, CONTEXTS)
    assert type(e.value) is expected


def test_a_full_queue_is_an_outage_with_its_retry_after():
    with Scripted(429, headers={"Retry-After": "3"}) as s, pytest.raises(BackendError, match="retry after 3 s") as e:
        VeriragClient(s.url).ask(QUESTION)
    assert is_outage(e.value)


def test_the_request_the_client_sends():
    verdict = {
        "question": QUESTION,
        "answer": ANSWER,
        "score": 0.9,
        "faithful": True,
        "threshold": 0.5,
        "evidence": [],
        "supporting_passage": None,
        "method": "vanilla+nli",
        "judge": "m",
        "timings": {},
    }
    with Scripted(200, body=verdict) as s:
        result = VeriragClient(s.url + "/", api_key="token").verify(
            QUESTION, ANSWER, [Passage(id="fr", text=CONTEXTS[0], title="France"), CONTEXTS[1]], threshold=0.5
        )
    method, path, headers, sent = s.requests[0]
    assert (method, path, headers["Authorization"]) == ("POST", "/v1/verify", "Bearer token")
    # options left None are not sent, so the service's defaults apply
    assert sent == {
        "question": QUESTION,
        "answer": ANSWER,
        "passages": [{"id": "fr", "title": "France", "text": CONTEXTS[0]}, {"text": CONTEXTS[1]}],
        "threshold": 0.5,
    }
    assert isinstance(result, VerifyResult)
    assert (result.score, result.faithful, result.method) == (0.9, True, "vanilla+nli")


@pytest.mark.parametrize("prune,sent", [(None, None), (False, False), (True, True), (0.3, 0.3)])
def test_the_ask_request_says_how_to_prune_only_when_told(prune, sent):
    """Pruning is on by default at the service: the client can turn it off (False) or set a threshold,
    and sends nothing when told nothing, so the service's setting applies."""
    with Scripted(409) as s, pytest.raises(InputError):
        VeriragClient(s.url).ask(QUESTION, prune=prune)
    body = s.requests[0][3]
    assert body.get("prune", None) == sent and ("prune" in body) == (prune is not None)


# ---- both integrations share the map ----------------------------------------------------------
def _both(url: str, api_key: str | None = None) -> dict[str, Exception]:
    """The error each integration raises for one /v1/verify through the service at `url`, sync
    and async: LangChain's VeriragVerifier and LlamaIndex's VeriragEvaluator."""
    pytest.importorskip("langchain_core")
    pytest.importorskip("llama_index.core")
    from langchain_core.documents import Document

    from verirag.integrations.langchain import VeriragVerifier
    from verirag.integrations.llamaindex import VeriragEvaluator

    row = {"input": QUESTION, "answer": ANSWER, "context": [Document(page_content=c) for c in CONTEXTS]}
    chain = VeriragVerifier(service_url=url, api_key=api_key, timeout=5)
    evaluator = VeriragEvaluator(url=url, api_key=api_key, timeout=5)
    calls = {
        "langchain": lambda: chain.invoke(row),
        "langchain async": lambda: asyncio.run(chain.ainvoke(row)),
        "llamaindex": lambda: evaluator.evaluate(query=QUESTION, response=ANSWER, contexts=CONTEXTS),
        "llamaindex async": lambda: asyncio.run(
            evaluator.aevaluate(query=QUESTION, response=ANSWER, contexts=CONTEXTS)
        ),
    }
    raised = {}
    for name, call in calls.items():
        with pytest.raises(Exception) as e:
            call()
        raised[name] = e.value
    return raised


@pytest.mark.parametrize(
    "status,expected",
    [
        (401, AuthError),
        (403, AuthError),
        (422, InputError),
        (429, BackendError),
        (500, BackendError),
        (503, BackendError),
    ],
)
def test_both_integrations_raise_the_same_error_for_the_same_status(status, expected):
    with Scripted(status) as s:
        raised = _both(s.url)
    assert {name: type(e) for name, e in raised.items()} == dict.fromkeys(raised, expected)
    assert len({str(e) for e in raised.values()}) == 1  # one map, one message
    assert len(s.requests) == 4 and {p for _, p, _, _ in s.requests} == {"/v1/verify"}


def test_both_integrations_on_the_real_service(offline):
    _, url = offline
    for api_key, expected, words in [
        ("wrong", AuthError, r"\(401\)"),  # LlamaIndex's own client called this an outage
        ("token", BackendError, r"\(502\): the model backend failed"),
        (None, AuthError, r"\(401\)"),
    ]:
        for name, e in _both(url, api_key).items():
            assert type(e) is expected and re.search(words, str(e)), (name, e)
    for name, e in _both(f"http://127.0.0.1:{free_port()}").items():
        assert type(e) is BackendError and "cannot be reached" in str(e), name


# ---- typed results from a real service with the smallest model ---------------------------------
@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    from verirag.retrieval import Index, load_corpus

    out = tmp_path_factory.mktemp("index")
    Index.build(load_corpus(DEMO).passages, kind="bm25").save(out)
    return out


@pytest.mark.slow
def test_typed_results_from_a_real_service(index_dir):
    service = VeriragService(
        ServiceConfig(preset="tiny", index=index_dir, overrides={"method": "vanilla+nli"}, verify_method="vanilla+nli")
    )
    with serving(service) as url, VeriragClient(url) as client, httpx.Client(base_url=url, timeout=300) as raw:
        deadline = time.time() + 180
        while True:  # the models load in the background
            try:
                ready = client.health()
                break
            except BackendError:
                assert time.time() < deadline, "the service did not get ready"
                time.sleep(0.2)
        assert ready == {"status": "ready", "model": "smollm2-135m", "index": True}
        assert client.methods()["verify_default"] == "vanilla+nli"

        def same(typed, path, body):  # the typed record holds exactly what the service answered
            wire = raw.post(path, json=body).json()
            mine = typed.to_dict()
            for d in (wire, mine):  # timings and usage are measured per call
                d.pop("timings"), d.pop("usage")
            assert mine == wire

        verdict = client.verify(QUESTION, ANSWER, [Passage(id="fr", text=CONTEXTS[0]), CONTEXTS[1]])
        assert isinstance(verdict, VerifyResult) and verdict.method == "vanilla+nli"
        assert 0.0 <= verdict.score <= 1.0 and [e.id for e in verdict.evidence] == ["fr", "p1"]
        same(
            verdict,
            "/v1/verify",
            {
                "question": QUESTION,
                "answer": ANSWER,
                "passages": [{"id": "fr", "text": CONTEXTS[0]}, {"text": CONTEXTS[1]}],
            },
        )

        question = "Who designed Halvorsen Lighthouse?"
        answer = client.ask(question, k=2, threshold=0.0)
        assert isinstance(answer, AskResult) and answer.action == "answered"
        pruned = answer.stages["prune"]["passages"]  # pruning is on by default: the kept passages are read
        assert len(pruned) == 2 and [e.id for e in answer.evidence] == [p["id"] for p in pruned if p["kept"]]
        same(answer, "/v1/ask", {"question": question, "k": 2, "threshold": 0.0})

        hits = client.retrieve(question, k=3)
        assert all(isinstance(h, ScoredPassage) for h in hits) and [h.rank for h in hits] == [0, 1, 2]
        wire = raw.post("/v1/retrieve", json={"question": question, "k": 3}).json()["passages"]
        assert [{"rank": h.rank, "score": h.score, **h.passage.to_dict()} for h in hits] == wire
