"""`verirag serve` as users run it: a real uvicorn subprocess on loopback with SmolLM2-135M, under
load (50 concurrent clients), SIGTERM (in-flight requests finish) and kill -9 (nothing corrupted,
the request cache serves the repeated request)."""

from __future__ import annotations

import asyncio
import hashlib
import signal
import sqlite3
import statistics
import threading
import time
from pathlib import Path

import httpx
import pytest
from server_process import start_server

pytestmark = pytest.mark.slow
# uvicorn shuts down gracefully on SIGTERM, then re-raises the signal: the exit status says so
GRACEFUL = (0, -signal.SIGTERM)

DEMO = Path(__file__).resolve().parents[1] / "src" / "verirag" / "demo" / "corpus"
PASSAGES = [
    {"id": "fr", "title": "France", "text": "Paris is the capital of France. It lies on the Seine."},
    {"id": "de", "text": "Berlin is the capital of Germany."},
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    from verirag.retrieval import Index, load_corpus

    out = tmp_path_factory.mktemp("index")
    Index.build(load_corpus(DEMO).passages, kind="bm25").save(out)
    return out


def tree_digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if f.is_file():
            h.update(f.name.encode() + f.read_bytes())
    return h.hexdigest()


def verify_body(i: int) -> dict:
    """A verify request that the model judges (the LLM judge, not the default verifier that calls no
    LLM): these tests are about the model's queue and its request cache."""
    return {
        "question": f"What is the capital of France? ({i % 5})",
        "answer": "Paris",
        "passages": PASSAGES,
        "method": "vanilla+nli",
    }


def test_fifty_concurrent_clients_get_answers_or_documented_refusals(tmp_path, index_dir):
    """Zero 5xx but the documented 503/504, every 429 with Retry-After, memory bounded."""
    server = start_server(
        tmp_path,
        "--preset",
        "tiny",
        "--index",
        str(index_dir),
        "--queue-size",
        "8",
        "--queue-timeout",
        "60",
        "--timeout",
        "60",
        cache_dir=tmp_path / "cache",
    )
    try:
        rss_before = server.rss_mb()
        latencies: list[float] = []
        statuses: list[int] = []
        missing_retry_after = []

        async def client(i: int, c: httpx.AsyncClient, until: float) -> None:
            n = 0
            while n < 4 and time.perf_counter() < until:  # bounded in count and in time
                n += 1
                path, body = (
                    ("/v1/ask", {"question": "Who kept the lighthouse?", "k": 2})
                    if i % 5 == 0
                    else ("/v1/verify", verify_body(i + n))
                )
                t0 = time.perf_counter()
                r = await c.post(path, json=body)
                latencies.append(time.perf_counter() - t0)
                statuses.append(r.status_code)
                if r.status_code == 429:
                    if "retry-after" not in r.headers:
                        missing_retry_after.append(r.text)
                    await asyncio.sleep(min(float(r.headers.get("retry-after", 1)), 3))

        async def main() -> float:
            limits = httpx.Limits(max_connections=60)
            async with httpx.AsyncClient(base_url=server.url, timeout=120, limits=limits) as c:
                t0 = time.perf_counter()
                await asyncio.gather(*(client(i, c, t0 + 60) for i in range(50)))
                return time.perf_counter() - t0

        elapsed = asyncio.run(main())
        rss_after = server.rss_mb()
        ok = statuses.count(200)
        bad = [s for s in statuses if s >= 500 and s not in (503, 504)]
        print(
            f"\nload: {len(statuses)} requests from 50 clients in {elapsed:.1f} s; 200: {ok}, "
            f"429: {statuses.count(429)}, 503/504: {statuses.count(503) + statuses.count(504)}; "
            f"p50 {statistics.median(latencies):.2f} s, p99 {sorted(latencies)[int(0.99 * (len(latencies) - 1))]:.2f} s; "
            f"{ok / elapsed:.2f} answered/s; RSS {rss_before:.0f} -> {rss_after:.0f} MB"
        )
        assert bad == [] and missing_retry_after == []
        assert ok >= 10 and statuses.count(429) > 0  # the queue both served and refused
        assert set(statuses) <= {200, 429, 503, 504}
        assert rss_after < rss_before + 300
        metrics = httpx.get(server.url + "/metrics").text
        assert 'verirag_rejected_total{reason="overloaded"}' in metrics
        assert "verirag_queue_depth 0.0" in metrics
    finally:
        assert server.stop() in GRACEFUL


def test_sigterm_lets_the_request_in_flight_finish(tmp_path, index_dir):
    server = start_server(tmp_path, "--preset", "tiny", "--index", str(index_dir), cache_dir=tmp_path / "cache")
    result: dict = {}

    def ask() -> None:
        r = httpx.post(server.url + "/v1/ask", json={"question": "When did the storm strike the coast?"}, timeout=120)
        result["status"], result["body"] = r.status_code, r.json()

    t = threading.Thread(target=ask)
    t.start()
    time.sleep(1.0)  # the request is in the model
    code = server.stop(signal.SIGTERM)
    t.join(120)
    assert result["status"] == 200 and result["body"]["answer"]
    assert code in GRACEFUL


def test_kill_9_mid_request_corrupts_nothing_and_the_cache_serves_the_repeat(tmp_path, index_dir):
    cache = tmp_path / "cache"
    before = tree_digest(index_dir)
    server = start_server(tmp_path, "--preset", "tiny", "--index", str(index_dir), cache_dir=cache)
    first = httpx.post(server.url + "/v1/verify", json=verify_body(0), timeout=120).json()
    assert first["usage"]["calls"] >= 1 and first["usage"]["cache_hits"] == 0

    def doomed() -> None:
        try:  # noqa: SIM105
            httpx.post(server.url + "/v1/ask", json={"question": "Who restored the lighthouse?"}, timeout=120)
        except httpx.TransportError:
            pass  # the server died under it: that is the point

    t = threading.Thread(target=doomed)
    t.start()
    time.sleep(1.5)
    server.stop(signal.SIGKILL)
    t.join(30)

    assert tree_digest(index_dir) == before
    for db in cache.rglob("*.sqlite"):
        with sqlite3.connect(db) as con:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    again = start_server(tmp_path, "--preset", "tiny", "--index", str(index_dir), cache_dir=cache)
    try:
        repeat = httpx.post(again.url + "/v1/verify", json=verify_body(0), timeout=120).json()
        assert repeat["score"] == first["score"]
        assert repeat["usage"]["cache_hits"] == repeat["usage"]["calls"] >= 1  # nothing recomputed
    finally:
        assert again.stop() in GRACEFUL
