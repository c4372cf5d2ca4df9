"""The service in front of a misbehaving OpenAI-compatible backend (a real local HTTP server that
stalls or answers garbage): 504 or 502 with a JSON error, at once, never a hang."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from verirag.server import ServiceConfig, VeriragService, create_app

DEMO = Path(__file__).resolve().parents[1] / "src" / "verirag" / "demo" / "corpus"


class Backend:
    """mode: 'garbage' (200 with a body that is not JSON), 'stall' (no answer for `stall` s), 'ok'."""

    def __init__(self):
        self.mode, self.stall, self.calls = "ok", 5.0, 0
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._send(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                backend.calls += 1
                if backend.mode == "stall":
                    time.sleep(backend.stall)
                if backend.mode == "garbage":
                    self._send(200, b"<html>upstream exploded</html>", "text/html")
                    return
                reply = {
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
                }
                self._send(200, json.dumps(reply).encode())

            def _send(self, status, body, ctype="application/json"):
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up on a stall
                    pass

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()


@pytest.fixture()
def backend():
    b = Backend()
    yield b
    b.server.shutdown()
    b.server.server_close()


def client_for(backend, tmp_path, monkeypatch, **config):
    from verirag.retrieval import Index, load_corpus

    Index.build(load_corpus(DEMO).passages, kind="bm25").save(tmp_path / "index")
    monkeypatch.setenv("VERIRAG_NO_CACHE", "1")
    monkeypatch.setenv("VERIRAG_OPENAI_MAX_RETRIES", "0")
    service = VeriragService(
        ServiceConfig(
            preset="tiny",
            index=tmp_path / "index",
            warm_up=False,
            overrides={"model": f"{backend.url}#m", "method": "vanilla+k_precision"},
            **config,
        )
    )
    return TestClient(create_app(service))


def test_a_backend_that_answers_garbage_gives_502(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_OPENAI_TIMEOUT", "5")
    with client_for(backend, tmp_path, monkeypatch) as c:
        assert c.post("/v1/ask", json={"question": "Who kept the lighthouse?"}).status_code == 200
        backend.mode = "garbage"
        for path, body in (
            ("/v1/ask", {"question": "Who kept the lighthouse?"}),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Who kept it?"}]}),
        ):
            r = c.post(path, json=body)
            assert r.status_code == 502, r.text
            assert r.json()["error"]["code"] == "backend_error" and "Traceback" not in r.text


def test_a_backend_that_stalls_gives_504_at_the_request_timeout_then_the_service_recovers(
    backend, tmp_path, monkeypatch
):
    monkeypatch.setenv("VERIRAG_OPENAI_TIMEOUT", "3")  # the backend gives up later than the service
    with client_for(backend, tmp_path, monkeypatch, request_timeout=1.0) as c:
        backend.mode = "stall"
        t0 = time.perf_counter()
        r = c.post("/v1/ask", json={"question": "Who kept the lighthouse?"})
        assert r.status_code == 504 and r.json()["error"]["code"] == "timeout"
        assert time.perf_counter() - t0 < 2.5  # answered at the service's timeout, not the backend's
        backend.mode = "ok"
        time.sleep(3)  # the stalled call ends on the model thread
        assert c.post("/v1/ask", json={"question": "Who kept the lighthouse?"}).status_code == 200


def test_a_backend_that_stalls_past_its_own_timeout_gives_502(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_OPENAI_TIMEOUT", "1")
    with client_for(backend, tmp_path, monkeypatch, request_timeout=30) as c:
        backend.mode, backend.stall = "stall", 3
        t0 = time.perf_counter()
        r = c.post("/v1/ask", json={"question": "Who kept the lighthouse?"})
        assert r.status_code == 502 and "no answer within" in r.json()["error"]["message"]
        assert time.perf_counter() - t0 < 10
