"""An outage is never a verdict: an OpenAI-compatible endpoint (a real local HTTP server) that
answers 500 or 401 makes `verirag ask` exit non-zero with the backend's message and the service
answer 502, whether the generator's request or the verifier's fails."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from verirag.cli import main
from verirag.errors import BackendError
from verirag.server import ServiceConfig, VeriragService, create_app

DEMO = Path(__file__).resolve().parents[1] / "src" / "verirag" / "demo" / "corpus"
QUESTION = "Who designed the lighthouse?"


class Endpoint:
    """Lists one model; answers the first `ok_posts` completions, then `status` to every one."""

    def __init__(self, status: int, ok_posts: int = 0):
        self.status, self.ok_posts, self.posts = status, ok_posts, 0
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._send(200, {"object": "list", "data": [{"id": "m", "object": "model"}]})

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if not self.path.endswith("completions"):
                    self._send(404, {"error": {"message": "no such route"}})
                    return
                endpoint.posts += 1
                if endpoint.posts > endpoint.ok_posts:
                    message = "invalid API key" if endpoint.status == 401 else "the GPU fell over"
                    self._send(endpoint.status, {"error": {"message": message}})
                    return
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": "m",
                        "usage": {"prompt_tokens": 5, "completion_tokens": 2},
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "Ola Halvorsen"},
                            }
                        ],
                    },
                )

            def _send(self, status, body):
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def endpoint_factory(monkeypatch):
    monkeypatch.setenv("VERIRAG_NO_CACHE", "1")
    monkeypatch.setenv("VERIRAG_OPENAI_MAX_RETRIES", "0")
    made = []

    def make(status, ok_posts=0):
        made.append(Endpoint(status, ok_posts))
        return made[-1]

    yield make
    for e in made:
        e.close()


# ok_posts 0: the generator's request fails; 1: the answer comes, the verifier's (self_check) fails
CASES = [(500, 0), (401, 0), (500, 1), (401, 1)]


@pytest.mark.parametrize("status,ok_posts", CASES)
def test_ask_exits_non_zero_with_the_backend_message(endpoint_factory, capsys, status, ok_posts):
    e = endpoint_factory(status, ok_posts)
    code = main(
        [
            "ask",
            QUESTION,
            "--corpus",
            str(DEMO),
            "--retrieval",
            "bm25",
            "--model",
            f"{e.url}#m",
            "--method",
            "vanilla+self_check",
            "--json",
            "--fallback",
            "no-rag",
        ]
    )
    captured = capsys.readouterr()
    assert code == BackendError.exit_code
    assert f"HTTP {status}" in captured.err and captured.out == ""  # no verdict was printed
    assert e.posts == ok_posts + 1  # the no-rag fallback never called the dead endpoint again


@pytest.mark.parametrize("method", ["vanilla+llm_judge", "vanilla+pre_answering"])
def test_a_verifier_outage_is_no_verdict_whatever_the_method(endpoint_factory, capsys, method):
    e = endpoint_factory(500, 1)  # the answer comes; the verifier's request fails
    code = main(
        [
            "ask",
            QUESTION,
            "--corpus",
            str(DEMO),
            "--retrieval",
            "bm25",
            "--model",
            f"{e.url}#m",
            "--method",
            method,
            "--json",
        ]
    )
    assert code == BackendError.exit_code and "HTTP 500" in capsys.readouterr().err


@pytest.fixture()
def client_for(endpoint_factory, tmp_path):
    from verirag.retrieval import Index, load_corpus

    Index.build(load_corpus(DEMO).passages, kind="bm25").save(tmp_path / "index")

    def make(status, ok_posts):
        e = endpoint_factory(status, ok_posts)
        service = VeriragService(
            ServiceConfig(
                preset="tiny",
                index=tmp_path / "index",
                warm_up=False,
                overrides={"model": f"{e.url}#m", "method": "vanilla+self_check"},
            )
        )
        return TestClient(create_app(service))

    return make


@pytest.mark.parametrize("status,ok_posts", CASES)
def test_the_service_answers_502_to_ask(client_for, status, ok_posts):
    r = client_for(status, ok_posts).post("/v1/ask", json={"question": QUESTION})
    assert r.status_code == 502, r.text
    assert f"HTTP {status}" in r.json()["error"]["message"]


@pytest.mark.parametrize("status", [500, 401])
@pytest.mark.parametrize("method", ["vanilla+nli", "vanilla+self_check", "vanilla+llm_judge"])
def test_the_service_answers_502_to_verify(client_for, status, method):
    # self_check and llm_judge record a failed request; an outage must still be one
    r = client_for(status, 0).post(
        "/v1/verify",
        json={
            "question": QUESTION,
            "answer": "Ola Halvorsen designed it.",
            "method": method,
            "passages": [{"id": "a", "text": "The lighthouse was designed by Ola Halvorsen in 1871."}],
        },
    )
    assert r.status_code == 502, r.text
    assert f"HTTP {status}" in r.json()["error"]["message"]


def test_an_outage_in_an_experiment_is_a_recorded_error(endpoint_factory):
    from verirag.awf.compose import build_method
    from verirag.awf.trace import Trace
    from verirag.llm import load_llm
    from verirag.types import Passage

    e = endpoint_factory(500, 1)
    out = build_method("vanilla+self_check", load_llm(f"{e.url}#m")).run(
        Trace(QUESTION, [Passage("a", "The lighthouse was designed by Ola Halvorsen.")])
    )
    assert out.answer == "Ola Halvorsen" and out.outage and out.score == 0.0 and "HTTP 500" in out.error
